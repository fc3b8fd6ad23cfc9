/**
 * One run of a merge train's driver (merge-train.ts), as data shared by its steps: the queue as the
 * store holds it now, the cars, what the run says (its steps), the branches it gave up and the cars
 * it built. The steps are in their own files, along the seams of a run: landing what is green
 * (train-land.ts), judging the front (train-judge.ts), building and pushing cars (train-build.ts),
 * cleaning up branches (train-cleanup.ts).
 */
import type { PastCar, QueueEntry, QueueShape, TrainCar } from '../../state/index.ts';
import { CARS_BEFORE_KEPT, queuesOf, queueKeyOf } from '../../state/index.ts';
import { ApiError, type MergeRequest } from '../../api/index.ts';
import type { StatusBucket } from '../../rules/index.ts';
import type { TrainDeps, TrainOutcome, TrainStep, Unconfirmed } from './train-deps.ts';
import type { Car } from './train-cars.ts';
import { FORK_APPROVAL_SETTLE_MS, riderVerdict } from './train-riders.ts';
import { goneCode } from './queue-told.ts';

export const short = (sha: string | undefined | null): string => (sha ? sha.slice(0, 7) : 'none');

export interface TrainRun {
  readonly deps: TrainDeps;
  /** The queue's first entry when the run began: its project, target branch and queue name. */
  readonly head: QueueEntry;
  /** Cars tested at once: for `depth: auto`, the window, which moves during the run (train-window.ts). */
  depth: number;
  /** `depth: auto`: the window's bounds. */
  readonly auto?: { min: number; max: number };
  readonly batch: number;
  /** How long a fork's approval settles before its head rides (`api.push_note_lag_ms`). */
  readonly settleMs: number;
  readonly targetUrl: string;
  /** What the run says, per merge request (the sweep's report, the status page, explain). */
  readonly steps: TrainStep[];
  /** Branches of cars given up, with the car commit each held (deleted at the end unless a car holds them). */
  readonly stale: Map<string, string | undefined>;
  /** Cars built in this run, pushed together at its end. */
  readonly toPush: Car[];
  /**
   * Landed merge requests the server had not marked merged at the first read: read again at the end
   * of the run, after the next cars are pushed (train-land.ts `confirmLanded`), so the train never
   * waits for the server's background job.
   */
  readonly unconfirmed: Unconfirmed[];
  /**
   * The train's folder is listed at the end of the run (train-cleanup.ts): a car landed (branches of
   * cars whose members left the queue elsewhere go then), or a tail left it to this run.
   */
  list: boolean;
  /** This run took over a tail an earlier run left (train-tail.ts): it finishes its own tail whatever news comes. */
  tookOver: boolean;
  /**
   * The merge requests of the cars as read at the start of the run (train-watch.ts), by item key:
   * judging the front uses them rather than reading each again (the landing's fresh evaluation
   * reads each again anyway).
   */
  readonly riders: Map<string, MergeRequest | undefined>;
  /**
   * A landing recorded and not pushed yet: it goes with the run's next cars in one push at the end of
   * the run (train-land.ts `landCars(..., together)`). Meanwhile `target` is its last car's commit
   * and `cars` lost its cars; `base` is the target as the server still holds it.
   */
  landing?: {
    going: Car[];
    base: string;
    /** When it was recorded: every car of one landing holds the same time (train-land.ts `landRecorded`). */
    at: number;
    ciMs: number;
    depth: number;
    /**
     * A failed car behind it leaves only once it landed (train-judge.ts `failed`): its exits, run
     * after the push that lands it, and its members, which ride no car built meanwhile. Not landed,
     * they ride again, built on what the target is then.
     */
    exits: (() => Promise<void>)[];
    held: string[];
  };
  /** The target branch's head as this run knows it. */
  target: string;
  /** The cars that chain on the target, front first. */
  cars: Car[];
  say(
    entry: QueueEntry,
    outcome: TrainOutcome,
    detail: string,
    statuses?: Record<string, StatusBucket>,
  ): void;
  /** The queue as the store holds it now, in the queue's order (priority, then arrival). */
  queueNow(): QueueEntry[];
  /** Writes train fields onto the entry as the store holds it now (an evaluation may have updated it). */
  patch(itemKey: string, change: (e: QueueEntry) => QueueEntry): Promise<void>;
  /** Gives cars up: their members ride again in cars built anew. */
  cut(cars: readonly Car[]): Promise<void>;
  readMr(entry: QueueEntry): Promise<MergeRequest | undefined>;
  /** A member that may not ride any more is taken out (said in the steps); true when it still rides. */
  stillRides(entry: QueueEntry, mr: MergeRequest | undefined, headWanted?: string): Promise<boolean>;
  /** The car each merge request still in a queue rides in now (after an evaluation may have moved it). */
  carIds(): Map<string, string | undefined>;
}

export const withoutCar = ({ car: _car, ...rest }: QueueEntry): QueueEntry => rest;

/**
 * Out of its car, which a run gave up: remembered (`carsBefore`, latest first, bounded), so a car
 * built again alike is the same commit (train-build.ts `buildNewCars`): after a crash right after a
 * landing pushed with cars built past a failed car that had not left yet, or a car ahead that came
 * and went.
 */
export function givenUp(entry: QueueEntry, car: TrainCar): QueueEntry {
  if (car.sha === undefined) return withoutCar(entry);
  const { position, base, members, heads, branch, date, identity } = car;
  const past: PastCar = { position, base, members, heads, branch, date, identity };
  const before = (entry.carsBefore ?? []).filter((one) => !sameCar(one, past));
  return { ...withoutCar(entry), carsBefore: [past, ...before].slice(0, CARS_BEFORE_KEPT) };
}

/** Whether two records make the same car commit but for its date and identity. */
export function sameCar(one: CarShape, other: CarShape): boolean {
  return (
    one.branch === other.branch &&
    one.position === other.position &&
    one.base === other.base &&
    one.members.join('\n') === other.members.join('\n') &&
    one.heads.join('\n') === other.heads.join('\n')
  );
}

type CarShape = Pick<TrainCar, 'position' | 'base' | 'members' | 'heads' | 'branch'>;

/** The merge requests in a car of the run, or in the cars of a landing not pushed yet. */
export function aboard(run: TrainRun): Set<string> {
  return new Set([
    ...[...run.cars, ...(run.landing?.going ?? [])].flatMap((c) => c.car.members),
    ...(run.landing?.held ?? []),
  ]);
}

/**
 * The branch holding the commit below the next car: the last car's, or, below the first car, the last
 * car of a landing not pushed yet (the target does not hold it yet) or the target's.
 */
export function lastBranch(run: Pick<TrainRun, 'cars' | 'landing' | 'head'>, first = false): string {
  const below = first ? undefined : run.cars.at(-1);
  return (below ?? run.landing?.going.at(-1))?.car.branch ?? run.head.targetBranch;
}

export async function startTrainRun(
  deps: TrainDeps,
  head: QueueEntry,
  shape: Pick<QueueShape, 'depth' | 'batch' | 'auto'>,
): Promise<TrainRun> {
  const { client, store } = deps;
  const key = queueKeyOf(head.project, head.targetBranch, head.queue);
  const steps: TrainStep[] = [];
  const stale = new Map<string, string | undefined>();
  // The clone URL and the target's head, read at once.
  const [targetUrl, targetHead] = await Promise.all([
    deps.cloneUrl(head.projectId),
    client.branches.get(head.projectId, head.targetBranch),
  ]);
  const run: TrainRun = {
    deps,
    head,
    depth: shape.depth,
    ...(shape.auto ? { auto: shape.auto } : {}),
    batch: shape.batch,
    settleMs: deps.pushNoteLagMs ?? FORK_APPROVAL_SETTLE_MS,
    targetUrl,
    steps,
    stale,
    toPush: [],
    unconfirmed: [],
    list: false,
    tookOver: false,
    riders: new Map(),
    target: targetHead.commit.id,
    cars: [],
    say: (entry, outcome, detail, statuses) =>
      steps.push({ entry, outcome, detail, ...(statuses ? { statuses } : {}) }),
    // The one order of the queue (state/queue-order.ts): whichever replica received which hook, the
    // driver works from the store's entries in priority, then arrival.
    queueNow: () => queuesOf(store.queued()).get(key) ?? [],
    async patch(itemKey, change) {
      const now = store.queued().find((e) => e.itemKey === itemKey && !e.left);
      if (now) await store.enqueue(change(now));
    },
    async cut(cars) {
      for (const { car, entries } of cars) {
        if (car.pushedAt !== undefined) deps.events?.carBuilt('replaced');
        stale.set(car.branch, car.sha);
        for (const entry of entries) await run.patch(entry.itemKey, (e) => givenUp(e, car));
      }
    },
    async readMr(entry) {
      try {
        return await client.mergeRequests.get(entry.projectId, entry.mrId);
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return undefined;
        throw error;
      }
    },
    async stillRides(entry, mr, headWanted) {
      const verdict = await riderVerdict(client, entry, mr, headWanted);
      if (verdict.kind === 'rides') return true;
      // The car it rode in goes with it: its branch is deleted with a lease on the car's own commit.
      if (entry.car && !stale.has(entry.car.branch)) stale.set(entry.car.branch, entry.car.sha);
      if (verdict.kind === 'unapproved') {
        run.say(
          entry,
          'removed',
          (await deps.remove(entry, mr!, 'not_allowed', verdict.why, mr!.sha!)).detail,
        );
        return false;
      }
      const out =
        verdict.kind === 'gone'
          ? await deps.drop(entry, goneCode(mr, entry.targetBranch), verdict.why)
          : await deps.pushedOut(entry, verdict.why);
      run.say(entry, 'dropped', out.detail);
      return false;
    },
    carIds: () => new Map(store.queued().flatMap((q) => (q.left ? [] : [[q.itemKey, q.car?.id]]))),
  };
  return run;
}
