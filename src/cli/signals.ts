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
  stopped: Promise<NodeJS.Signals>;
  release: () => void;
} {
  let received = false;
  let resolve: (signal: NodeJS.Signals) => void = () => undefined;
  const stopped = new Promise<NodeJS.Signals>((r) => (resolve = r));
  const onSignal = (signal: NodeJS.Signals) => {
    received = true;
    resolve(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    stopped,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (received) setTimeout(() => process.exit(), exitGraceMs).unref();
    },
  };
}

/** Calls `onHangup` on each SIGHUP (rules reload) until the returned function is called. */
export function onHangup(onHangup: () => void): () => void {
  const listener = () => onHangup();
  process.on('SIGHUP', listener);
  return () => process.off('SIGHUP', listener);
}
