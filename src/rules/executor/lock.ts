/**
 * One writer per item at a time. The pipeline runs one item at a time, but the scheduler's retry
 * sweep and merge watch use the same executor concurrently: without this, two read-modify-write
 * label updates, or a comment and its own retry, could interleave and undo each other.
 */
export interface KeyedLock {
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
}

export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<unknown>>();
  return {
    async run<T>(key: string, work: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve();
      // `previous` never rejects (see `settled`), so `work` runs once the last writer is done.
      const current = previous.then(work);
      // The chain must not reject (the next waiter only waits), and must not grow forever.
      const settled = current.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, settled);
      try {
        return await current;
      } finally {
        if (tails.get(key) === settled) tails.delete(key);
      }
    },
  };
}
