/**
 * Server and load generator on a core each (`taskset`). Unpinned, the two share both cores with
 * everything else and the load generator's own CPU becomes the ceiling: the "do-nothing" server of
 * the earlier runs reached 8.6-9.9k requests/s, while pinned (and with cheap distinct bodies) it
 * reaches about 3x that on the same machine (issue 15). Without taskset or a second core, nothing is
 * pinned and the results say so (`pinned: no`).
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** The core the load generator (this process) runs on, and the one each server runs on. */
export const LOAD_CORE = 0;
export const SERVER_CORE = 1;

export const canPin: boolean = (() => {
  if (process.platform !== 'linux' || os.availableParallelism() < 2) return false;
  try {
    execFileSync('taskset', ['-cp', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** The command that starts `args` (a node command line) on the server's core, when pinning. */
export function onServerCore(command: string, args: readonly string[]): [string, string[]] {
  return canPin ? ['taskset', ['-c', String(SERVER_CORE), command, ...args]] : [command, [...args]];
}

/**
 * Runs `work` with every thread of this process on the load generator's core, then restores the
 * previous affinity.
 */
export async function onLoadCore<T>(work: () => Promise<T>): Promise<T> {
  if (!canPin) return work();
  const previous = /:\s*(\S+)\s*$/.exec(
    execFileSync('taskset', ['-cp', String(process.pid)], { encoding: 'utf8' }),
  )?.[1];
  setAffinity(String(LOAD_CORE));
  try {
    return await work();
  } finally {
    if (previous !== undefined) setAffinity(previous);
  }
}

function setAffinity(cores: string): void {
  // -a: every thread (libuv's pool, V8's helpers), not only the main one.
  execFileSync('taskset', ['-a', '-cp', cores, String(process.pid)], { stdio: 'ignore' });
}
