/**
 * Running git for the sandbox's repositories (store.ts): its environment (no system config, no
 * prompts, no background gc, the server's zone), one command at a time or through the batch
 * readers, the writes to one branch one at a time, and which repositories exist on disk.
 */
import { execFile } from 'node:child_process';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { GitAuthor } from '../context.ts';
import { createBatchPool } from './batch.ts';
import { gitBinary } from './binary.ts';
import { GitError } from './common.ts';
import { formatOffset } from './parse.ts';
import { gitTakesVerbatim, identPart, type Ident } from './objects.ts';
import { validRefName } from './refs.ts';

export interface GitReposOptions {
  /** Commit timestamps come from this clock when given (tests); the system's otherwise. */
  clock?: () => Date;
}

export interface GitRun {
  code: number;
  stdout: Buffer;
  stderr: string;
}

interface RunOptions {
  env?: Record<string, string>;
  input?: string | Buffer;
  /** Exit codes that are answers rather than failures (e.g. 1 for "not found" or "conflict"). */
  allow?: number[];
}

/** Git for the repositories under `dir`: the first layer of the store (store.ts). */
export function createRunner(dir: string, options: GitReposOptions) {
  const repoPath = (projectId: number) => path.join(dir, `${projectId}.git`);

  const baseEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: dir,
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    // Paths given to ls-tree and rev-list are file names, never patterns (`*.md` is a file here).
    GIT_LITERAL_PATHSPECS: '1',
    // No background gc or maintenance racing a `remove` or the end of a test.
    GIT_CONFIG_COUNT: '2',
    GIT_CONFIG_KEY_0: 'gc.auto',
    GIT_CONFIG_VALUE_0: '0',
    GIT_CONFIG_KEY_1: 'maintenance.auto',
    GIT_CONFIG_VALUE_1: 'false',
    // Commands that never commit still want an identity on some versions.
    GIT_AUTHOR_NAME: 'Sandbox',
    GIT_AUTHOR_EMAIL: 'sandbox@localhost',
    GIT_COMMITTER_NAME: 'Sandbox',
    GIT_COMMITTER_EMAIL: 'sandbox@localhost',
  };
  // The commit offset is the server's local zone, as on a real server.
  if (process.env.TZ) baseEnv.TZ = process.env.TZ;
  const gitBin = gitBinary(baseEnv.PATH);
  const batch = createBatchPool(gitBin, baseEnv);

  function run(args: string[], opts: RunOptions = {}): Promise<GitRun> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        gitBin,
        args,
        { env: { ...baseEnv, ...opts.env }, encoding: 'buffer', maxBuffer: 512 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          const result = { code, stdout, stderr: stderr.toString('utf8') };
          if (code === 0 || opts.allow?.includes(code)) resolve(result);
          else
            reject(
              new GitError(
                'failed',
                `git ${args[0] === '-C' ? args[2] : args[0]} failed: ${result.stderr.trim() || String(error?.message)}`,
              ),
            );
        },
      );
      // git may exit before reading all of stdin (an error): the EPIPE is not ours to report.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(opts.input ?? '');
    });
  }

  const text = (r: GitRun) => r.stdout.toString('utf8').trim();

  // ---- write serialisation -------------------------------------------------------------------
  // Writes to one branch (one ref) run one at a time, so a read-modify-write (read head, commit,
  // move the ref) never races another; the ref's compare-and-swap is the safety net behind it.
  // Creating, forking and removing a repository hold its own key.
  const locks = new Map<string, Promise<void>>();
  function exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = locks.get(key) ?? Promise.resolve();
    const result = previous.then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    locks.set(key, tail);
    void tail.then(() => {
      if (locks.get(key) === tail) locks.delete(key);
    });
    return result;
  }
  const branchKey = (projectId: number, name: string) => `${projectId}:refs/heads/${name}`;

  /** Repositories seen on disk: they go only through `remove`, which forgets them. */
  const present = new Set<number>();
  async function exists(projectId: number): Promise<boolean> {
    if (present.has(projectId)) return true;
    try {
      if (!(await stat(repoPath(projectId))).isDirectory()) return false;
      present.add(projectId);
      return true;
    } catch {
      return false;
    }
  }

  async function requireRepo(projectId: number): Promise<string> {
    if (!(await exists(projectId)))
      throw new GitError('missing-repository', `project ${projectId} has no repository`);
    return repoPath(projectId);
  }

  function identityEnv(author: GitAuthor): Record<string, string> {
    const env: Record<string, string> = {
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_COMMITTER_NAME: author.name,
      GIT_COMMITTER_EMAIL: author.email,
    };
    if (options.clock) {
      const now = options.clock();
      const date = `@${Math.floor(now.getTime() / 1000)} ${formatOffset(-now.getTimezoneOffset(), '')}`;
      env.GIT_AUTHOR_DATE = date;
      env.GIT_COMMITTER_DATE = date;
    }
    return env;
  }

  /** The identity git would write for `author` now, or undefined when git would change the text. */
  function ident(author: GitAuthor, message: string): Ident | undefined {
    const name = identPart(author.name);
    const email = identPart(author.email);
    if (!name || !gitTakesVerbatim(`${name}${email}${message}`)) return undefined;
    const now = options.clock?.() ?? new Date();
    return {
      name,
      email,
      seconds: Math.floor(now.getTime() / 1000),
      offset: formatOffset(-now.getTimezoneOffset(), ''),
    };
  }

  /** A bare repository as `git init --bare --initial-branch` makes it, without starting git. */
  async function initRepo(repo: string, branch: string): Promise<void> {
    if (!validRefName(`refs/heads/${branch}`)) {
      // git words the refusal.
      await run(['init', '--quiet', '--bare', `--initial-branch=${branch}`, repo]);
      return;
    }
    for (const sub of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags', 'info'])
      await mkdir(path.join(repo, sub), { recursive: true });
    await writeFile(path.join(repo, 'HEAD'), `ref: refs/heads/${branch}\n`);
    await writeFile(
      path.join(repo, 'config'),
      '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n',
    );
    await writeFile(
      path.join(repo, 'description'),
      "Unnamed repository; edit this file 'description' to name the repository.\n",
    );
  }

  return {
    repoPath,
    batch,
    run,
    text,
    exclusive,
    branchKey,
    exists,
    requireRepo,
    identityEnv,
    ident,
    initRepo,
    /** A repository is going: what is remembered of it goes first. */
    forget(projectId: number): void {
      present.delete(projectId);
      batch.forget(repoPath(projectId));
    },
    close: () => batch.close(),
  };
}
