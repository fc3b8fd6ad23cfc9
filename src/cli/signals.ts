import { readFileSync } from 'node:fs';

/**
 * Resolves with the first SIGINT or SIGTERM. The listeners stay until `release` is called, so a
 * second signal during shutdown cannot kill the process halfway through saving its state.
 *
 * After a signal, `release` (called once the stop is done: the runtime's own stop is bounded by
 * `server.shutdown_timeout_ms`) also makes sure the process ends: work the stop abandoned (an API
 * call waiting for its timeout, a retry's timer) may still hold the event loop, so the process
 * exits `exitGraceMs` later with the exit code set by then, unless it ended by itself first (the
 * timer does not keep it alive).
 */
export function watchSignals(exitGraceMs = 1_000): {
  stopped: Promise<StopCause>;
  /** Stops as a signal would, for another cause (the launcher gone: watchLauncher). */
  stop: (cause: StopCause) => void;
  release: () => void;
} {
  let received = false;
  let resolve: (cause: StopCause) => void = () => undefined;
  const stopped = new Promise<StopCause>((r) => (resolve = r));
  const onSignal = (signal: StopCause) => {
    received = true;
    resolve(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    stopped,
    stop: onSignal,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (received) setTimeout(() => process.exit(), exitGraceMs).unref();
    },
  };
}

/** Why the process stops: a signal, or the npm that started it gone (watchLauncher). */
export type StopCause = NodeJS.Signals | 'launcher gone';

/**
 * `npm start` runs npm, which runs `sh -c 'node bin/hookbot.js start'`, which runs the bot: three
 * processes, and only the last one is the bot (bin/hookbot.js itself spawns nothing: tsx compiles
 * in this process). A signal sent to npm's pid never reaches the bot: SIGHUP and SIGTERM end npm
 * (npm forwards SIGTERM to the shell alone, which ends too), and the bot would run on, orphaned, its
 * terminal given back to the shell. So when an npm script started this process, it watches its
 * parent and its parent's parent (the shell and npm, or npm and the user's shell), once a second,
 * and calls `onGone` when either has gone: the bot then stops cleanly instead of running on
 * unseen. The banner prints the bot's own pid, the one to signal.
 *
 * Linux only (it reads /proc); elsewhere, and when no npm script started the process (a service
 * manager, a container, `node bin/hookbot.js` in a shell), it watches nothing. Returns the function
 * that stops watching.
 */
export function watchLauncher(
  onGone: (launcher: { pid: number }) => void,
  env: NodeJS.ProcessEnv = process.env,
  everyMs = 1_000,
): () => void {
  if (!env.npm_lifecycle_event) return () => undefined;
  const parent = process.ppid;
  const grandparent = parentOf(parent);
  if (grandparent === undefined || grandparent <= 1) return () => undefined;
  const timer = setInterval(() => {
    if (process.ppid === parent && parentOf(parent) === grandparent) return;
    clearInterval(timer);
    onGone({ pid: grandparent });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** The parent of `pid` from /proc (the field after the command name, which may hold spaces). */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** Calls `onHangup` on each SIGHUP (rules reload) until the returned function is called. */
export function onHangup(onHangup: () => void): () => void {
  const listener = () => onHangup();
  process.on('SIGHUP', listener);
  return () => process.off('SIGHUP', listener);
}
