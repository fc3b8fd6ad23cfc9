/**
 * Level-triggered processing of accepted deliveries (issue 4). A delivery is a hint that an item
 * changed: it is turned into item addresses, events for one item are coalesced (debounce), and the
 * item is handed to the processor, which re-reads it through the API and evaluates every rule on that
 * fresh state. Duplicate and out-of-order deliveries then do no harm.
 *
 * - Per item, one run at a time: events arriving during a run join the next run.
 * - Global concurrency is bounded; so is the queue in memory. Past the bound, accepted deliveries
 *   simply stay in the store's inbox and are pulled in as room frees up: nothing is dropped.
 * - A delivery is marked processed only once every item run it caused has finished; a crash before
 *   that means it is processed again after the restart, which the level-triggered design makes safe.
 * - A run that fails with a transient error (the server is down) is retried with backoff; the
 *   delivery stays in the inbox meanwhile.
 * - A delivery that kills the process is not replayed forever (issue 28, poison deliveries): each
 *   process counts its attempt durably before it works on a delivery. One whose earlier attempt never
 *   finished (the process died during it, maybe because of another delivery in flight) is a suspect:
 *   it runs alone, no other delivery beginning until it is done, so a death during that run is its
 *   own. Past `maxDeliveryAttempts` (3: the first attempt and two runs alone) it is parked with the
 *   reason (log, status page) and the rest go on; a delivery that was merely in flight beside it is
 *   never parked for it, nor one whose single run alone met a kill from outside (a deploy, an
 *   eviction: the replicas scenario killed a replica during one).
 * - Every line logged while a delivery is taken or an item run goes on carries the ids (issue 7):
 *   each opens a log context (ops/log-context.ts) that the processor, the executor and the API
 *   client's call log inherit.
 */
import { parseHookEvent, type HookEvent } from '../events/index.ts';
import { hintsOf, itemKey, type Hint, type ItemRef } from '../events/index.ts';
import { runInNewLogContext } from '../ops/index.ts';
import type { InboxEntry } from '../state/index.ts';
import { triggerOf, type BotIdentity } from './trigger.ts';
import { type Trigger, unionEvents } from '../rules/index.ts';

/**
 * An accepted delivery: its inbox id, its `object_kind` and its body. The store hands out deliveries
 * whose body is read from the stored text when asked (store.ts `PendingDelivery`): a delivery
 * waiting here (backlog, retries while the server is away) holds no parsed body.
 */
export type Delivery = Pick<InboxEntry, 'id' | 'kind' | 'body'>;

export type { BotIdentity } from './trigger.ts';

/** Turns branch and commit hints into the open merge requests they concern (needs the API). */
export interface HintResolver {
  mergeRequestsForBranch(projectId: number, branch: string): Promise<ItemRef[]>;
  mergeRequestsForCommit(project: number | string, sha: string, ref: string | undefined): Promise<ItemRef[]>;
}

/** Does the work for one item: read it fresh, evaluate, act. Throwing a transient error asks for a retry. */
export type ItemProcessor = (item: ItemRef, triggers: Trigger[]) => Promise<void>;

export interface PipelineLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * One item, one run at a time (rules/executor/lock.ts `ItemRuns`, shared with the sweeps and, with
 * several replicas on PostgreSQL, across the fleet). A run whose item is held elsewhere (a sweep
 * working on it, another replica) waits: its events stay coalesced here and it is tried again
 * shortly, on the item's state as it will be then.
 */
export interface ItemRunGate {
  /** Runs `work` as the item's only run, or answers false at once when another run holds it. */
  tryRun(itemKey: string, work: () => Promise<void>): Promise<boolean>;
  /** How long to wait before trying a held item again. Default 200 ms. */
  retryMs?: number;
}

/** The store as the pipeline uses it (state/store.ts). Without the attempt calls, nothing is counted. */
export interface PipelineStore {
  pendingDeliveries(): Delivery[];
  markProcessed(id: string): Promise<void>;
  deliveryAttempts?(id: string): number;
  beginAttempt?(id: string): Promise<number>;
  releaseAttempt?(id: string): Promise<void>;
  parkDelivery?(id: string, reason: string): Promise<void>;
}

export interface PipelineOptions {
  store: PipelineStore;
  /**
   * Attempts begun on one delivery (by this process and those before it) before it is parked
   * instead: every attempt but the running one ended with the process. Default 2: the first, and
   * one more after a crash (which may have had another cause).
   */
  maxDeliveryAttempts?: number;
  resolver: HintResolver;
  process: ItemProcessor;
  bot: BotIdentity;
  /** Coalescing window per item. Default 250 ms; 0 in tests. */
  debounceMs?: number;
  /** Item runs at once. Default 4. */
  concurrency?: number;
  /** Deliveries held in memory at once; the rest wait in the inbox. Default 1000. */
  queueLimit?: number;
  /** Is this error worth retrying later (server down) rather than giving up on the delivery? */
  isTransient?: (error: unknown) => boolean;
  retryDelayMs?: (attempt: number) => number;
  log?: PipelineLog;
  /** Called with the queue depth whenever it changes (metrics). */
  onDepth?: (depth: number) => void;
  /** One run per item with the sweeps and the fleet; without it, one per item in this pipeline. */
  runs?: ItemRunGate;
  /**
   * Sees every event before its items are resolved (repository rules: a push that changed
   * `.hookbot.yml` on the default branch). Throwing a transient error retries the delivery.
   */
  onEvent?: (event: HookEvent) => Promise<void>;
}

export interface Pipeline {
  /** A delivery was accepted (and is durable). */
  wake(entry: Delivery): void;
  /** Resumes what the inbox holds (after a restart). */
  resume(): void;
  /** Resolves when nothing is queued, pending or running. */
  idle(): Promise<void>;
  /** Stops taking work; resolves when running item runs have finished. Unfinished deliveries stay in the inbox. */
  stop(): Promise<void>;
  depth(): number;
}

interface ItemState {
  item: ItemRef;
  triggers: Trigger[];
  deliveries: Set<string>;
  timer?: NodeJS.Timeout;
  running: boolean;
  /** Events arrived during a run: run again afterwards. */
  again: boolean;
  attempt: number;
}

const noopLog: PipelineLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

export function createPipeline(options: PipelineOptions): Pipeline {
  const debounceMs = options.debounceMs ?? 250;
  const concurrency = options.concurrency ?? 4;
  const queueLimit = options.queueLimit ?? 1000;
  const log = options.log ?? noopLog;
  const isTransient = options.isTransient ?? (() => false);
  const retryDelay =
    options.retryDelayMs ?? ((attempt: number) => Math.min(60_000, 500 * 2 ** (attempt - 1)));

  const maxAttempts = options.maxDeliveryAttempts ?? 3;
  /** Deliveries in memory: id -> item runs still owed before it counts as processed. */
  const held = new Map<string, number>();
  /** Deliveries whose attempt this process began (and counted) and has not finished. */
  const begun = new Set<string>();
  /** Suspects (an earlier attempt never finished) waiting for their run alone, in arrival order. */
  const suspects: Delivery[] = [];
  /** The suspect on its run alone: no other delivery begins, no other item runs start. */
  let lone: string | undefined;
  /** Deliveries waiting to begin until the suspects are done. */
  const deferred: Delivery[] = [];
  const counting = (): boolean =>
    options.store.deliveryAttempts !== undefined &&
    options.store.beginAttempt !== undefined &&
    options.store.parkDelivery !== undefined;
  const items = new Map<string, ItemState>();
  const ready: ItemState[] = [];
  let running = 0;
  /** Deliveries being resolved and timers waiting (debounce, backoff): work not yet in `ready`. */
  let pendingWork = 0;
  let stopped = false;
  let backlog = false;
  let idleWaiters: (() => void)[] = [];

  const depth = () => held.size;
  const reportDepth = () => options.onDepth?.(depth());

  function checkIdle(): void {
    if (held.size === 0 && running === 0 && pendingWork === 0 && ready.length === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  function wake(entry: Delivery): void {
    if (stopped || held.has(entry.id)) return;
    if (held.size >= queueLimit) {
      backlog = true; // it is durable in the inbox; pulled in when room frees up
      return;
    }
    held.set(entry.id, 0);
    reportDepth();
    void take(entry);
  }

  function resume(): void {
    backlog = false;
    for (const entry of options.store.pendingDeliveries()) {
      if (held.size >= queueLimit) {
        backlog = true;
        break;
      }
      wake(entry);
    }
  }

  /**
   * Takes a delivery in its own log context. A new one: `take` is also reached from the end of an
   * item run (pump, resume) and must not carry that run's ids.
   */
  function take(entry: Delivery, attempt = 1): Promise<void> {
    return runInNewLogContext({ delivery: entry.id }, () => takeNow(entry, attempt));
  }

  async function takeNow(entry: Delivery, attempt: number): Promise<void> {
    pendingWork++;
    try {
      // Counted before any work on it (the first take in this process; a retry is the same attempt).
      if (attempt === 1 && counting()) {
        if (entry.id !== lone) {
          if (options.store.deliveryAttempts!(entry.id) > 0) {
            suspects.push(entry);
            return;
          }
          if (suspects.length > 0 || lone !== undefined) {
            deferred.push(entry);
            return;
          }
        }
        if (!(await beginAttempt(entry))) return;
      }
      const parsed = parseHookEvent(entry.kind, entry.body);
      // What else the event means (a push that changed a project's .hookbot.yml), before its items:
      // they are then evaluated with the rules it brought.
      if (parsed.ok && options.onEvent) await options.onEvent(parsed.event);
      const hints = parsed.ok ? hintsOf(parsed.event) : parsed.message;
      if (typeof hints === 'string') {
        // A payload we cannot read will not get better by waiting: record why and let it go.
        log.warn({ delivery: entry.id, problem: hints }, 'delivery skipped: payload not understood');
        await finishDelivery(entry.id);
        return;
      }
      const targets: [ItemRef, Trigger][] = [];
      for (const hint of hints) {
        for (const ref of await resolve(hint)) targets.push([ref, triggerOf(hint.trigger, options.bot)]);
      }
      if (targets.length === 0) {
        await finishDelivery(entry.id);
        return;
      }
      held.set(entry.id, targets.length);
      for (const [item, trigger] of targets) enqueue(item, trigger, entry.id);
    } catch (error) {
      if (isTransient(error) && !stopped) {
        // The server is away: the delivery stays in the inbox and is taken again after a backoff.
        log.warn({ delivery: entry.id, attempt, err: error }, 'could not resolve the delivery yet; retrying');
        pendingWork++;
        setTimeout(() => {
          pendingWork--;
          void take(entry, attempt + 1);
        }, retryDelay(attempt));
      } else {
        log.error({ delivery: entry.id, err: error }, 'delivery failed');
        await finishDelivery(entry.id);
      }
    } finally {
      pendingWork--;
      pump();
    }
  }

  /**
   * Counts this process's attempt on the delivery; false when it was parked instead (the attempts
   * before this one all ended with the process).
   */
  async function beginAttempt(entry: Delivery): Promise<boolean> {
    const { beginAttempt: count, parkDelivery: park } = options.store;
    if (!count || !park) return true;
    let attempts: number;
    // Marked before the count is written: a stop that comes meanwhile gives it back all the same.
    begun.add(entry.id);
    try {
      attempts = await count.call(options.store, entry.id);
    } catch (error) {
      // The store is away: the delivery is processed uncounted rather than held back or dropped.
      begun.delete(entry.id);
      log.warn(
        { delivery: entry.id, err: error },
        'could not count the attempt on the delivery; processing it',
      );
      return true;
    }
    if (attempts === 0) {
      begun.delete(entry.id);
      // Not in this process's inbox: a re-run hint for a duplicate (never stored; it carries its
      // body), processed meanwhile, or taken over by another replica when its lease ran out (the
      // database away longer than the lease). The last two have no body left here: they are their
      // holder's to process, not a payload "not understood".
      if (entry.body === undefined) {
        log.info(
          { delivery: entry.id },
          'delivery no longer held here (processed, or taken over by another replica): left to its holder',
        );
        held.delete(entry.id);
        reportDepth();
        loneDone(entry.id);
        return false;
      }
    }
    if (attempts <= maxAttempts) {
      if (attempts > 1)
        log.warn(
          { delivery: entry.id, kind: entry.kind, attempts },
          'delivery taken again after its last attempt did not finish (the process stopped during it)',
        );
      return true;
    }
    const reason = `the process stopped during each of its last ${attempts - 1} attempts (it may be what stops it): parked, not tried again`;
    log.error({ delivery: entry.id, kind: entry.kind, attempts: attempts - 1 }, `delivery parked: ${reason}`);
    begun.delete(entry.id);
    try {
      await park.call(options.store, entry.id, reason);
    } catch (error) {
      log.error({ delivery: entry.id, err: error }, 'could not park the delivery; it stays in the inbox');
    }
    held.delete(entry.id);
    reportDepth();
    loneDone(entry.id);
    return false;
  }

  /** The next suspect's run alone, once no item run is going on. */
  function startLone(): void {
    if (stopped || lone !== undefined || running > 0) return;
    const next = suspects.shift();
    if (next === undefined) return;
    lone = next.id;
    log.warn(
      { delivery: next.id, kind: next.kind },
      'an earlier attempt at this delivery never finished (the process stopped): it runs alone',
    );
    void take(next);
  }

  /** A delivery is done (processed or parked): if it was the suspect running alone, the next goes. */
  function loneDone(id: string): void {
    if (id !== lone) return;
    lone = undefined;
    if (suspects.length > 0) return startLone();
    for (const entry of deferred.splice(0)) void take(entry);
  }

  /**
   * The delivery's hints, or why its payload is not understood. Synchronous: the parsed body is
   * garbage before the first await, so deliveries waiting for the API hold only their hints.
   */
  /** The items a hint concerns: named directly, or the open MRs of a branch or commit. */
  function resolve(hint: Hint): Promise<ItemRef[]> {
    if (hint.target === 'item') return Promise.resolve([hint.item]);
    if (hint.target === 'branch') return options.resolver.mergeRequestsForBranch(hint.projectId, hint.branch);
    return options.resolver.mergeRequestsForCommit(hint.project, hint.sha, hint.ref);
  }

  function enqueue(item: ItemRef, trigger: Trigger, deliveryId: string): void {
    const key = itemKey(item);
    let state = items.get(key);
    if (!state) {
      state = { item, triggers: [], deliveries: new Set(), running: false, again: false, attempt: 0 };
      items.set(key, state);
    }
    state.triggers.push(trigger);
    state.deliveries.add(deliveryId);
    if (state.running) {
      state.again = true;
      return;
    }
    schedule(state, debounceMs);
  }

  function schedule(state: ItemState, delay: number): void {
    if (state.timer) return; // already waiting: the new event joins this run
    if (delay <= 0 && !state.running) {
      ready.push(state);
      return;
    }
    pendingWork++;
    state.timer = setTimeout(() => {
      state.timer = undefined;
      pendingWork--;
      ready.push(state);
      pump();
    }, delay);
  }

  function pump(): void {
    while (!stopped && running < concurrency && ready.length > 0) {
      // While suspects wait or one runs alone, only the lone suspect's items start.
      const index =
        lone === undefined && suspects.length === 0
          ? 0
          : ready.findIndex((state) => lone !== undefined && state.deliveries.has(lone));
      if (index < 0) break;
      const [state] = ready.splice(index, 1);
      if (state!.running) continue;
      void run(state!);
    }
    startLone();
    if (backlog && held.size < queueLimit / 2 && !stopped) resume();
    checkIdle();
  }

  /**
   * One item run, in a log context naming the item and every delivery it serves (coalesced events
   * bring several). A new context: a run is started from wherever work finished (another run, a
   * timer set while some delivery was taken) and owes nothing to it.
   */
  function run(state: ItemState): Promise<void> {
    const deliveries = [...state.deliveries];
    return runInNewLogContext({ delivery: deliveries[0], deliveries, item: itemKey(state.item) }, () =>
      runNow(state),
    );
  }

  async function runNow(state: ItemState): Promise<void> {
    running++;
    state.running = true;
    const key = itemKey(state.item);
    const triggers = coalesce(state.triggers);
    const deliveries = [...state.deliveries];
    state.triggers = [];
    state.deliveries.clear();
    state.again = false;
    /** What became of the run: done, busy (held elsewhere: not run), or retry (transient failure). */
    let outcome: 'done' | 'busy' | 'retry' = 'done';
    try {
      const work = () => options.process(state.item, triggers);
      if (options.runs === undefined) await work();
      else if (!(await options.runs.tryRun(key, work))) outcome = 'busy';
      if (outcome === 'done') state.attempt = 0;
    } catch (error) {
      if (isTransient(error) && !stopped) {
        outcome = 'retry';
        state.attempt++;
        log.warn({ item: key, attempt: state.attempt, err: error }, 'item run failed; retrying');
      } else {
        log.error({ item: key, err: error }, 'item run failed');
      }
    }
    if (outcome !== 'done') {
      // Put the work back: the same triggers and deliveries run again, with what came meanwhile.
      state.triggers.unshift(...triggers);
      for (const id of deliveries) state.deliveries.add(id);
    }
    state.running = false;
    running--;
    // Decided before anything else is awaited: an event arriving while the deliveries below are
    // marked processed finds this state and joins its next run. (Deciding after those awaits
    // forgot a run of the item started meanwhile, so a third event started another beside it.)
    if (stopped && outcome !== 'done') items.delete(key);
    else if (outcome === 'busy') schedule(state, options.runs?.retryMs ?? 200);
    else if (outcome === 'retry') schedule(state, retryDelay(state.attempt));
    else if (state.again || state.triggers.length > 0) schedule(state, debounceMs);
    else items.delete(key);
    if (outcome === 'done') for (const id of deliveries) await itemRunDone(id);
    pump();
  }

  async function itemRunDone(deliveryId: string): Promise<void> {
    const owed = (held.get(deliveryId) ?? 1) - 1;
    if (owed > 0) held.set(deliveryId, owed);
    else await finishDelivery(deliveryId);
  }

  async function finishDelivery(id: string): Promise<void> {
    begun.delete(id);
    try {
      await options.store.markProcessed(id);
    } catch (error) {
      log.error({ delivery: id, err: error }, 'could not mark the delivery processed');
    }
    held.delete(id);
    reportDepth();
    loneDone(id);
  }

  return {
    wake,
    resume,
    depth,
    idle() {
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        checkIdle();
      });
    },
    async stop() {
      stopped = true;
      for (const state of items.values()) {
        if (state.timer) {
          clearTimeout(state.timer);
          state.timer = undefined;
          pendingWork--;
        }
      }
      ready.length = 0;
      while (running > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      // A clean stop is no crash: the attempts it leaves unfinished are given back.
      const release = options.store.releaseAttempt;
      for (const id of begun)
        await release?.call(options.store, id).catch((error: unknown) => {
          log.warn({ delivery: id, err: error }, 'could not give back the attempt of an unfinished delivery');
        });
      begun.clear();
    },
  };
}

/**
 * One evaluation per burst, and no event lost (docs/rules.md, "When a rule runs"): issue and MR
 * events, pushes and statuses fold into one trigger that names the latest event and carries the
 * set of every event of the burst, so a rule runs when any of them is in its `on:` (an MR opened
 * and its first `pending` status a few milliseconds later still run `merge_request.open` rules).
 * Notes stay apart, each its own evaluation: each is a distinct comment, read by its id.
 */
export function coalesce(triggers: readonly Trigger[]): Trigger[] {
  const notes = triggers.filter((t) => t.kind === 'note');
  const others = triggers.filter((t) => t.kind !== 'note');
  const latest = others.at(-1);
  if (!latest) return [...notes];
  const events = unionEvents(others);
  const merged: Trigger = { ...latest, events };
  // The burst counts as the bot's own only if every event in it was.
  merged.byBot = events.every((event) => event.byBot);
  return [merged, ...notes];
}
