/**
 * One writer per item at a time. The pipeline runs one item at a time, but the scheduler's retry
 * sweep and merge watch use the same executor concurrently: without this, two read-modify-write
 * label updates, or a comment and its own retry, could interleave and undo each other.
 */
export interface KeyedLock {
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
}

/**
 * Where several replicas share the state (PostgreSQL), the writer must also be the only one in
 * the fleet: a hook run on one replica and the retry sweep or merge watch on another would
 * otherwise act on one item at once. The lease (`act:<item>`) is a database row that expires
 * if its holder dies, so waiting for it ends.
 */
export interface FleetLeases {
  tryLease(name: string): Promise<boolean>;
  releaseLease(name: string): Promise<void>;
}

export function createKeyedLock(fleet?: FleetLeases, retryMs = 100): KeyedLock {
  const tails = new Map<string, Promise<unknown>>();
  const leased = async <T>(key: string, work: () => Promise<T>): Promise<T> => {
    if (fleet === undefined) return work();
    const name = `act:${key}`;
    while (!(await fleet.tryLease(name))) await new Promise((resolve) => setTimeout(resolve, retryMs));
    try {
      return await work();
    } finally {
      await fleet.releaseLease(name).catch(() => undefined); // it expires by itself
    }
  };
  return {
    async run<T>(key: string, work: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve();
      // `previous` never rejects (see `settled`), so `work` runs once the last writer is done.
      const current = previous.then(() => leased(key, work));
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
