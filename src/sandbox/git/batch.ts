/**
 * Reading objects and resolving names without a process per read: one long-lived
 * `git cat-file --batch-command` per repository (and per set of alternates, for forks), fed one
 * command per line and answering in order, so many reads share one process and concurrent readers
 * pipeline their commands. Names resolve as git resolves them (a tag before a branch of the same
 * bare name, `sha^{commit}`, abbreviated ids, packs and loose objects alike); a ref moved or an
 * object written by anybody since is seen at once (loose refs and objects are read from disk for each
 * command; packs are looked for again when an object is missing).
 *
 * Bounded: at most `limit` readers at once (the least recently used one is closed for a new one),
 * each closed after `idleMs` without a command, and all of a repository's when it is removed.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

export interface BatchObject {
  oid: string;
  type: string;
  size: number;
  /** Present for `contents` requests. */
  content?: Buffer;
}

interface Pending {
  kind: 'info' | 'contents';
  resolve(value: BatchObject | undefined): void;
  reject(error: Error): void;
}

const HEADER = /^([0-9a-f]{40}) (blob|tree|commit|tag) (\d+)$/;

class Reader {
  readonly child: ChildProcessWithoutNullStreams;
  private readonly pending: Pending[] = [];
  private buffer: Buffer = Buffer.alloc(0);
  /** The object being read (header seen, content not complete yet). */
  private current: BatchObject | undefined;
  dead = false;
  lastUsed = Date.now();
  private outgoing: string[] = [];

  private flush(): void {
    const text = this.outgoing.join('');
    this.outgoing = [];
    if (!this.dead) this.child.stdin.write(text);
  }

  constructor(git: string, repo: string, env: Record<string, string>, onExit: () => void) {
    this.child = spawn(git, ['-C', repo, 'cat-file', '--batch-command'], { env, stdio: 'pipe' });
    this.child.stdout.on('data', (chunk: Buffer) => this.take(chunk));
    this.child.stderr.on('data', () => undefined); // warnings such as "refname is ambiguous"
    this.child.stdin.on('error', () => undefined);
    this.child.on('error', () => this.fail(new Error('git cat-file could not run')));
    this.child.on('close', () => {
      this.fail(new Error('git cat-file ended'));
      onExit();
    });
    this.hold(false);
  }

  /** An idle reader keeps no process alive (a test, a script); a busy one does until it answers. */
  private hold(busy: boolean): void {
    const handles = [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as unknown as {
      ref?(): void;
      unref?(): void;
    }[];
    for (const handle of handles)
      if (busy) handle.ref?.();
      else handle.unref?.();
  }

  request(kind: 'info' | 'contents', name: string): Promise<BatchObject | undefined> {
    if (this.dead) return Promise.reject(new Error('git cat-file ended'));
    this.lastUsed = Date.now();
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) this.hold(true);
      this.pending.push({ kind, resolve, reject });
      // The commands of one tick go in one write.
      if (this.outgoing.length === 0) queueMicrotask(() => this.flush());
      this.outgoing.push(`${kind} ${name}\n`);
    });
  }

  get busy(): boolean {
    return this.pending.length > 0;
  }

  close(): void {
    this.dead = true;
    this.child.stdin.end();
    this.child.kill();
  }

  private settle(answer: () => void): void {
    this.pending.shift();
    if (this.pending.length === 0) this.hold(false);
    answer();
  }

  private fail(error: Error): void {
    this.dead = true;
    for (const p of this.pending.splice(0)) p.reject(error);
  }

  private take(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const head = this.pending[0];
      if (!head) return;
      if (this.current) {
        // The content and its trailing newline.
        if (this.buffer.length < this.current.size + 1) return;
        this.current.content = Buffer.from(this.buffer.subarray(0, this.current.size));
        this.buffer = this.buffer.subarray(this.current.size + 1);
        const done = this.current;
        this.current = undefined;
        this.settle(() => head.resolve(done));
        continue;
      }
      const nl = this.buffer.indexOf(10);
      if (nl < 0) return;
      const line = this.buffer.subarray(0, nl).toString('utf8');
      this.buffer = this.buffer.subarray(nl + 1);
      const match = HEADER.exec(line);
      if (!match) {
        // `<name> missing` or `<name> ambiguous`.
        this.settle(() => head.resolve(undefined));
        continue;
      }
      const object = { oid: match[1]!, type: match[2]!, size: Number(match[3]) };
      if (head.kind === 'info') this.settle(() => head.resolve(object));
      else this.current = object;
    }
  }
}

export interface BatchPool {
  /** `info`: the object a name resolves to; `contents`: with its bytes. Undefined when it does not resolve. */
  read(
    repo: string,
    kind: 'info' | 'contents',
    name: string,
    env?: Record<string, string>,
  ): Promise<BatchObject | undefined>;
  /** Ends the readers of a repository (it is being removed). */
  forget(repo: string): void;
  close(): void;
}

export function createBatchPool(
  git: string,
  baseEnv: Record<string, string>,
  options: { limit?: number; idleMs?: number } = {},
): BatchPool {
  const limit = Math.max(1, options.limit ?? 32);
  const idleMs = options.idleMs ?? 5_000;
  const readers = new Map<string, Reader>();
  let sweeper: NodeJS.Timeout | undefined;

  function sweep(): void {
    const now = Date.now();
    for (const [key, reader] of readers)
      if (!reader.busy && now - reader.lastUsed > idleMs) {
        readers.delete(key);
        reader.close();
      }
    if (readers.size === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  }

  function readerFor(repo: string, env?: Record<string, string>): Reader {
    const alternates = env?.GIT_ALTERNATE_OBJECT_DIRECTORIES ?? '';
    const key = `${repo}\0${alternates}`;
    const existing = readers.get(key);
    if (existing && !existing.dead) {
      // Most recently used last: the map's order is the eviction order.
      readers.delete(key);
      readers.set(key, existing);
      return existing;
    }
    if (readers.size >= limit) {
      for (const [oldKey, old] of readers)
        if (!old.busy) {
          readers.delete(oldKey);
          old.close();
          break;
        }
    }
    const reader = new Reader(git, repo, { ...baseEnv, ...env }, () => {
      if (readers.get(key) === reader) readers.delete(key);
    });
    readers.set(key, reader);
    if (!sweeper) {
      sweeper = setInterval(sweep, Math.max(100, Math.floor(idleMs / 2)));
      sweeper.unref();
    }
    return reader;
  }

  return {
    async read(repo, kind, name, env) {
      // Names with a line break would be two commands; git has no such names anyway.
      if (/[\n\r\0]/.test(name)) return undefined;
      try {
        return await readerFor(repo, env).request(kind, name);
      } catch {
        // The reader ended under us (closed as idle, or killed): once more with a new one.
        return readerFor(repo, env).request(kind, name);
      }
    },
    forget(repo) {
      for (const [key, reader] of readers)
        if (key.startsWith(`${repo}\0`)) {
          readers.delete(key);
          reader.close();
        }
    },
    close() {
      for (const reader of readers.values()) reader.close();
      readers.clear();
      if (sweeper) clearInterval(sweeper);
      sweeper = undefined;
    },
  };
}
