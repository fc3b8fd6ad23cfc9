/**
 * Who holds a state file open: a running bot is its one writer, and a second process must not open
 * it (explain, simulate and plan read a stopped bot's file only).
 */
import { readdir, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';

/**
 * The processes that hold the journal open (the bot keeps its active segment open for appends;
 * a segment being sealed keeps its fd under its new name `<journal>.<n>`). Linux only: elsewhere,
 * or for other users' processes, nothing is found.
 */
export async function holdersOf(journal: string): Promise<number[]> {
  let resolved: string;
  try {
    resolved = path.join(await realpath(path.dirname(path.resolve(journal))), path.basename(journal));
  } catch {
    return [];
  }
  let pids: string[];
  try {
    pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const holds = async (pid: string): Promise<boolean> => {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${pid}/fd`);
    } catch {
      return false;
    }
    for (const fd of fds) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      if (target === resolved || target.startsWith(`${resolved}.`)) return true;
    }
    return false;
  };
  const found = await Promise.all(pids.map(async (pid) => ((await holds(pid)) ? Number(pid) : undefined)));
  return found.filter((pid) => pid !== undefined);
}
