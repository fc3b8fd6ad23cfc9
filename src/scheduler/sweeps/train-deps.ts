/** What the serial queue (merge-queue.ts) lends the merge train's driver (merge-train.ts), and what the driver reports. */
import type { QueueEntry, StateStore, TrainCar } from '../../state/index.ts';
import type { Client, MergeRequest } from '../../api/index.ts';
import type { ItemProcessorFn, QueueEvents, RemovalCode, StatusBucket } from '../../rules/index.ts';
import type { BranchUpdater } from '../../git/index.ts';
import type { SweepLog } from '../types.ts';

export type TrainOutcome = 'waiting' | 'updated' | 'merged' | 'dropped' | 'removed' | 'error';

export interface TrainStep {
  entry: QueueEntry;
  outcome: TrainOutcome;
  detail: string;
  statuses?: Record<string, StatusBucket>;
}

/** What the serial queue lends the train: its reads, and its ways of taking a merge request out. */
export interface TrainDeps {
  client: {
    mergeRequests: Pick<Client['mergeRequests'], 'get'>;
    branches: Pick<Client['branches'], 'get'>;
    statuses: Pick<Client['statuses'], 'list'>;
    notes: Pick<Client['notes'], 'listMergeRequestNotes'>;
  };
  store: Pick<StateStore, 'queued' | 'enqueue' | 'dequeue'>;
  updater: BranchUpdater;
  processItem?: ItemProcessorFn;
  now: () => number;
  log: SweepLog;
  /** `api.push_note_lag_ms`: how long a fork's approval settles; FORK_APPROVAL_SETTLE_MS unless given. */
  pushNoteLagMs?: number;
  cloneUrl(projectId: number): Promise<string>;
  /** Out with one comment, remembered at `at` (merge-queue.ts). */
  remove(
    entry: QueueEntry,
    mr: MergeRequest,
    code: RemovalCode,
    why: string,
    at: string,
  ): Promise<{ detail: string }>;
  /** Out at once, without comment. */
  drop(entry: QueueEntry, code: RemovalCode, why: string): Promise<{ detail: string }>;
  /** Out at once after a push by someone else, then evaluated again. */
  pushedOut(entry: QueueEntry, why: string): Promise<{ detail: string }>;
  /** Landings and car builds told (rules/queue/queue-events.ts); default: nowhere. */
  events?: QueueEvents;
  /**
   * Aborted when a wake came during the sweep's run (SweepRunOptions.news): the run's tail leaves
   * what is left of it to the next run, kept in `tails` (train-tail.ts).
   */
  news?: AbortSignal;
  tails?: TrainTails;
}

/** A landed merge request the server had not shown merged yet (train-land.ts `confirmLanded`). */
export interface Unconfirmed {
  entry: QueueEntry;
  car: TrainCar;
  position: number;
  /** The target's commit after the landing. */
  target: string;
  /** A failed car landed through a car behind it that contains it and passed (train-flaky.ts). */
  through?: string;
  /** Reads of it so far, across runs (train-land.ts LANDED_READS in all). */
  reads: number;
}

/** What a train run's tail left to the next run of its queue when news came (train-tail.ts). */
export interface CarriedTail {
  /** The queue's first entry in the run that left it: its project, target branch and queue. */
  head: QueueEntry;
  /** Branches given up and not deleted yet, with the car commit each holds. */
  stale: Map<string, string | undefined>;
  /** The train's folder is to be listed too (train-cleanup.ts). */
  list: boolean;
  unconfirmed: Unconfirmed[];
}

/** Tails left by queue key (state/queue-order.ts `queueKeyOf`). */
export type TrainTails = Map<string, CarriedTail>;
