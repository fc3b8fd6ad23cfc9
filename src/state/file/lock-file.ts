/**
 * One writer per state: a lock file next to the document, `<document>.lock`, created exclusively at
 * open and removed at close. Two processes appending to one journal interleave their records and
 * each compacts the other's files away; a `hookbot sweep --once` beside a running bot, or a second
 * bot started on the same volume, would do exactly that. Node has no flock(2), so this is the pid
 * file PostgreSQL uses (postmaster.pid), with the same rules for a lock left behind by a crash:
 *
 * - the holder is alive (same host, its pid exists and, where /proc tells, started when the lock
 *   says): refused, naming the pid and host;
 * - the holder is gone (no such pid, or that pid is a later process, or the machine rebooted since):
 *   the lock is stale (kill -9, power loss) and is taken over;
 * - the holder's pid is our own: a restarted container reuses pid 1 for the new bot, so a lock with
 *   our pid is a previous life's (a process never opens its own store twice);
 * - another host (a new container on the volume of one that was killed, or two containers sharing
 *   it): its pids cannot be checked from here, so the holder shows life instead: it touches the lock
 *   every `heartbeatMs` (10 s), and a lock of another host untouched for `staleMs` (60 s) is stale.
 *   A fresher one is refused, saying when it will count as stale; a restart policy retries.
 *
 * Left alone: two processes that find the same stale lock at the same instant can both take it over
 * (each removes it, then creates its own). That needs two starts within microseconds after a crash.
 */
import { hostname } from 'node:os';
import { open, readFile, rm, stat, utimes } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { STATE_FILE_MODE } from './durable-fs.ts';
import { StateError } from '../errors.ts';

/** What the lock file holds: who has the state open. */
export interface LockHolder {
  pid: number;
  host: string;
  /** The kernel's boot id (Linux), to tell a pid of an earlier boot. */
  boot?: string;
  /** The process's start time in clock ticks since boot (Linux /proc/<pid>/stat), to tell pid reuse. */
  started?: number;
  since: string;
}

export interface LockTimes {
  /** How often the holder touches its lock. Default 10 s. */
  heartbeatMs?: number;
  /** A lock of another host untouched this long is stale. Default 60 s. */
  staleMs?: number;
}

export const LOCK_HEARTBEAT_MS = 10_000;
export const LOCK_STALE_MS = 60_000;

/** What this process is, and how it sees others: replaced in tests. */
export interface LockEnvironment {
  pid: number;
  host: string;
  boot: string | undefined;
  /** The start time of `pid` (as in LockHolder.started), undefined if it cannot be read or is gone. */
  startedOf: (pid: number) => number | undefined;
  /** Whether a process with this pid exists (on this host). */
  isAlive: (pid: number) => boolean;
  now: () => Date;
}

export const systemLockEnvironment = (): LockEnvironment => ({
  pid: process.pid,
  host: hostname(),
  boot: readTrimmed('/proc/sys/kernel/random/boot_id'),
  startedOf: processStart,
  isAlive,
  now: () => new Date(),
});

export interface HeldLock {
  path: string;
  /** Stops the heartbeat and removes the lock file, unless another process has taken it over since. */
  release(): Promise<void>;
}

/** A lock as found on disk: its holder, and when it last showed life (the file's mtime). */
interface FoundLock {
  holder: LockHolder;
  touched: Date;
}

export async function acquireLock(
  path: string,
  env: LockEnvironment = systemLockEnvironment(),
  times: LockTimes = {},
): Promise<HeldLock> {
  const heartbeatMs = times.heartbeatMs ?? LOCK_HEARTBEAT_MS;
  const staleMs = times.staleMs ?? LOCK_STALE_MS;
  const started = env.startedOf(env.pid);
  const mine: LockHolder = {
    pid: env.pid,
    host: env.host,
    ...(env.boot === undefined ? {} : { boot: env.boot }),
    ...(started === undefined ? {} : { started }),
    since: env.now().toISOString(),
  };
  const text = `${JSON.stringify(mine)}\n`;
  // Two tries: the second follows the removal of a stale lock.
  for (let attempt = 0; ; attempt++) {
    try {
      const file = await open(path, 'wx', STATE_FILE_MODE);
      try {
        await file.writeFile(text);
      } finally {
        await file.close();
      }
      return holding(path, text, heartbeatMs);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw lockError(path, error);
    }
    const found = await readLock(path);
    const verdict = found === undefined ? 'stale' : judge(found, env, staleMs);
    if (verdict !== 'stale') throw refusal(path, found!, verdict, env, staleMs);
    await rm(path, { force: true });
  }
}

type Verdict = 'stale' | 'alive' | 'other-host';

function judge({ holder, touched }: FoundLock, env: LockEnvironment, staleMs: number): Verdict {
  if (holder.host !== env.host)
    return env.now().getTime() - touched.getTime() > staleMs ? 'stale' : 'other-host';
  if (holder.boot !== undefined && env.boot !== undefined && holder.boot !== env.boot) return 'stale';
  if (holder.pid === env.pid) return 'stale';
  if (!env.isAlive(holder.pid)) return 'stale';
  if (holder.started !== undefined) {
    const started = env.startedOf(holder.pid);
    if (started !== undefined && started !== holder.started) return 'stale';
  }
  return 'alive';
}

function refusal(
  path: string,
  { holder, touched }: FoundLock,
  verdict: Exclude<Verdict, 'stale'>,
  env: LockEnvironment,
  staleMs: number,
): StateError {
  const who = `process ${holder.pid} on ${holder.host} (since ${holder.since})`;
  const hint =
    verdict === 'alive'
      ? 'One process writes a state at a time: stop that bot first, or give this one its own state (state.path, HOOKBOT_STATE). To read a running bot, ask it: hookbot explain --bot.'
      : `A process of another host cannot be checked from ${env.host}; that one last showed life ${Math.max(0, Math.round((env.now().getTime() - touched.getTime()) / 1000))} s ago, and its lock counts as stale once it has not for ${staleMs / 1000} s (from ${new Date(touched.getTime() + staleMs).toISOString()}): if that bot is gone, start again then, or delete ${path}.`;
  return new StateError('locked', `state ${path}: in use by ${who}; refusing to open it. ${hint}`, { path });
}

/** Holds the lock: touches it every `heartbeatMs` so that other hosts see it alive. */
function holding(path: string, text: string, heartbeatMs: number): HeldLock {
  const timer = setInterval(() => {
    const now = new Date();
    // A failed touch is not fatal: at worst another host takes a lock over that we still hold,
    // which is what the file's own removal by hand would do too.
    void utimes(path, now, now).catch(() => undefined);
  }, heartbeatMs);
  timer.unref();
  return {
    path,
    release: async () => {
      clearInterval(timer);
      await releaseIfMine(path, text);
    },
  };
}

function lockError(path: string, cause: unknown): StateError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new StateError('io', `state lock ${path}: cannot create it (${reason})`, { path, cause });
}

/** The lock the file holds; undefined for a file a crash left empty or cut short (or just removed). */
async function readLock(path: string): Promise<FoundLock | undefined> {
  let text: string;
  let touched: Date;
  try {
    [text, touched] = await Promise.all([readFile(path, 'utf8'), stat(path).then((s) => s.mtime)]);
  } catch (error) {
    // Removed between our create and our read: treat as stale, the retry creates it.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw lockError(path, error);
  }
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid !== 'number' || typeof value.host !== 'string') return undefined;
    const holder: LockHolder = {
      pid: value.pid,
      host: value.host,
      ...(typeof value.boot === 'string' ? { boot: value.boot } : {}),
      ...(typeof value.started === 'number' ? { started: value.started } : {}),
      since: typeof value.since === 'string' ? value.since : 'an unknown time',
    };
    return { holder, touched };
  } catch {
    return undefined;
  }
}

async function releaseIfMine(path: string, text: string): Promise<void> {
  const current = await readFile(path, 'utf8').catch(() => undefined);
  if (current === text) await rm(path, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Field 22 of /proc/<pid>/stat (after the parenthesised command name, which may hold spaces). */
function processStart(pid: number): number | undefined {
  const stat = readTrimmed(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const started = Number(fields[19]);
  return Number.isSafeInteger(started) ? started : undefined;
}

function readTrimmed(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}
