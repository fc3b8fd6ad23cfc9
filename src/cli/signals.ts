/**
 * Resolves with the first SIGINT or SIGTERM. The listeners stay until `release` is called, so a
 * second signal during shutdown cannot kill the process halfway through saving its state.
 */
export function watchSignals(): { stopped: Promise<NodeJS.Signals>; release: () => void } {
  let resolve: (signal: NodeJS.Signals) => void = () => undefined;
  const stopped = new Promise<NodeJS.Signals>((r) => (resolve = r));
  const onSignal = (signal: NodeJS.Signals) => resolve(signal);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    stopped,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** Calls `onHangup` on each SIGHUP (rules reload) until the returned function is called. */
export function onHangup(onHangup: () => void): () => void {
  const listener = () => onHangup();
  process.on('SIGHUP', listener);
  return () => process.off('SIGHUP', listener);
}
