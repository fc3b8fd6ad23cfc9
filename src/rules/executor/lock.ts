/**
 * One item, one run at a time (docs/rules.md, "When a rule runs"; docs/deployment.md). A run is
 * everything done for an item between reading it and recording the decision: the hook pipeline's
 * evaluate-and-act, a sweep's work on it (reconciliation, merge watch, merge queue, retries, the
 * acting step of a rule sweep), and every single call of the executor. Two runs of one item at once
 * would each act on what they read before the other acted: one merged, the other withdrew the same
 * action as "no longer matches (state merged)", and explain showed the withdrawal.
 *
 * - In the process: a chain per item key; a run starts once the one before it has finished.
 * - Across replicas (PostgreSQL): the lease `item:<key>` (a database row that expires if its holder
 *   dies), taken for the whole run, so a hook run on one replica and a sweep on another never
 *   overlap either. The lease is taken after the process's own turn (a replica's leases are its
 *   own: the database cannot tell two runs of one replica apart).
 * - Re-entrant along the async flow: the run's own calls (the executor's per-call lock, a sweep
 *   that evaluates the item it holds) go straight through. Only the flow that holds the item does:
 *   a holding is marked ended when its run ends, so work started from inside a run that outlives
 *   it (a sweep woken by a hook) waits like any other. Sweeps are started outside every run
 *   (`outsideItemRuns`), so one woken during a run waits for it too.
 *
 * Item keys are `<kind>:<project id>:<global id>` everywhere (events/hints.ts `itemKey`,
 * executor/ids.ts `itemKeyOf`): never the iid, never the project's path, so one item has one key.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Where several replicas share the state (PostgreSQL), the run must also be the only one in the
 * fleet. A lease is a database row that expires if its holder dies, so waiting for it ends.
 */
export interface FleetLeases {
  tryLease(name: string): Promise<boolean>;
  releaseLease(name: string): Promise<void>;
}

export interface ItemRunsLog {
  debug?(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ItemRuns {
  /**
   * Runs `work` as the item's only run: waits for the run in progress (in this process, then in
   * the fleet). Inside a run of the same item it runs at once.
   */
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
  /**
   * Runs `work` as the item's only run if no other run holds the item now; false at once
   * otherwise (and when the fleet's lease could not be asked for), without running it. The hook
   * pipeline's way: its events stay coalesced and it tries again shortly.
   */
  tryRun(key: string, work: () => Promise<void>): Promise<boolean>;
  /** Is a run of this item in progress in this process (tests, the status of a wait)? */
  busy(key: string): boolean;
}

export interface ItemRunsOptions {
  fleet?: FleetLeases;
  /** How often a waiting run asks for another replica's lease again. Default 100 ms. */
  retryMs?: number;
  log?: ItemRunsLog;
}

/** The run holding an item in this process; `ended` once it finished. */
interface Holding {
  key: string;
  /** The ItemRuns it was taken from: holding an item in one says nothing about another. */
  owner: object;
  ended: boolean;
}

/** The holdings of the current async flow. One storage for the process, like the log context. */
const held = new AsyncLocalStorage<ReadonlyMap<string, Holding>>();

/**
 * Runs `fn` outside every item run, whatever flow it is started from: for work that is started
 * from inside a run and must not count as part of it (a sweep woken by a hook run).
 */
export function outsideItemRuns<T>(fn: () => T): T {
  return held.exit(fn);
}

function holdsHere(owner: object, key: string): boolean {
  const holding = held.getStore()?.get(key);
  return holding !== undefined && holding.owner === owner && !holding.ended;
}

export function createItemRuns(options: ItemRunsOptions = {}): ItemRuns {
  const { fleet } = options;
  const retryMs = options.retryMs ?? 100;
  /** Per key: the end of the last run queued (never rejects), and the holding in progress. */
  const tails = new Map<string, Promise<void>>();
  const current = new Map<string, Holding>();

  const leaseName = (key: string): string => `item:${key}`;
  const owner = {};

  async function release(key: string): Promise<void> {
    if (fleet === undefined) return;
    await fleet.releaseLease(leaseName(key)).catch((error: unknown) => {
      // It expires by itself; the next run of this replica takes it again (a replica's own lease).
      options.log?.warn({ item: key, err: error }, 'could not release the item lease (it expires by itself)');
    });
  }

  /** Runs `work` holding the item in this flow; the process's turn is already taken. */
  async function holding<T>(key: string, work: () => Promise<T>): Promise<T> {
    const mine: Holding = { key, owner, ended: false };
    current.set(key, mine);
    const here = new Map(held.getStore() ?? []);
    here.set(key, mine);
    try {
      return await held.run(here, work);
    } finally {
      mine.ended = true;
      if (current.get(key) === mine) current.delete(key);
    }
  }

  /** Waits for the process's turn on `key`; the returned function ends the turn. */
  async function turn(key: string): Promise<() => void> {
    const previous = tails.get(key);
    let end: () => void = () => undefined;
    const mine = new Promise<void>((resolve) => (end = resolve));
    tails.set(key, mine);
    if (previous !== undefined) {
      options.log?.debug?.({ item: key }, 'item run waits for the run in progress');
      await previous;
    }
    return () => {
      if (tails.get(key) === mine) tails.delete(key);
      end();
    };
  }

  return {
    busy: (key) => current.has(key) || tails.has(key),

    async run<T>(key: string, work: () => Promise<T>): Promise<T> {
      if (holdsHere(owner, key)) return work();
      const done = await turn(key);
      try {
        if (fleet !== undefined) {
          let waited = false;
          // The database away: the error ends the wait (the run is retried as any run it fails).
          while (!(await fleet.tryLease(leaseName(key)))) {
            if (!waited) options.log?.debug?.({ item: key }, 'item run waits for another replica');
            waited = true;
            await new Promise((resolve) => setTimeout(resolve, retryMs));
          }
        }
        try {
          return await holding(key, work);
        } finally {
          await release(key);
        }
      } finally {
        done();
      }
    },

    async tryRun(key, work) {
      // Not re-entrant: the pipeline's run is never part of another run.
      if (tails.has(key)) return false;
      const done = await turn(key);
      try {
        if (fleet !== undefined) {
          let leased: boolean;
          try {
            leased = await fleet.tryLease(leaseName(key));
          } catch (error) {
            options.log?.warn({ item: key, err: error }, 'could not take the item lease; trying again');
            leased = false;
          }
          if (!leased) return false;
        }
        try {
          await outsideItemRuns(() => holding(key, work));
        } finally {
          await release(key);
        }
        return true;
      } finally {
        done();
      }
    },
  };
}
