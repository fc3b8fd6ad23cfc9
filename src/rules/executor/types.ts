/** The executor's vocabulary, shared by executor.ts and the handlers of calls/ (one file per kind of API call). */
import type { StateStore } from '../../state/index.ts';
import type { CallOf, Op, PlannedCall } from '../engine/planned-call.ts';
import type { BotIdentity, ItemSnapshot, Trigger } from '../engine/snapshot.ts';
import type { Client } from '../../api/index.ts';

/**
 * The resource families the executor uses: the reads of its re-checks, and the writes of the plan.
 * Whole families, so that a handler using another method of one of them needs nothing here; a
 * handler of a family not named yet adds it.
 */
export type ExecutorClient = Pick<
  Client,
  'issues' | 'mergeRequests' | 'notes' | 'statuses' | 'users' | 'projects' | 'branches'
>;

export type ExecutorStore = Pick<
  StateStore,
  | 'putAction'
  | 'getAction'
  | 'dueActions'
  | 'completeAction'
  | 'failAction'
  | 'parkAction'
  | 'watch'
  | 'unwatch'
  | 'watched'
  | 'enqueue'
  | 'queued'
>;

export interface ExecutorLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * - `done`: the call was made and took effect (or an ambiguous answer was re-read and it had).
 * - `skipped`: the re-check found nothing to do (the effect already holds, or the call no longer
 *   applies: a merge whose head moved is skipped with `headMoved`, so the caller re-evaluates).
 * - `failed`: with the error, and whether a later retry may help.
 * - `ambiguous`: the server may or may not have acted and a re-read could not tell; retried later
 *   (the retry re-checks before acting, so it never acts twice).
 * - `withdrawn`: not made, because the item's latest evaluation no longer plans it (a retry, or
 *   the fresh re-evaluation right before a merge, found the rule no longer matching); the reason
 *   says which condition saw what.
 * - `dry-run`: described, no call made.
 */
export type CallStatus = 'done' | 'skipped' | 'failed' | 'ambiguous' | 'withdrawn' | 'dry-run';

export interface CallResult {
  status: CallStatus;
  /** What happened, in words (for explain and logs). */
  detail: string;
  /** The error (redacted: ApiError messages never carry a token). */
  error?: string;
  /** For `failed` and `ambiguous`: whether a retry may help. */
  retryable?: boolean;
  /** A merge found the head moved since the evaluation: re-read and re-evaluate. */
  headMoved?: boolean;
}

/** What the outbox holds per action (the store's `call`, opaque to it). */
export interface StoredCall {
  /** Format version of this record. */
  v: 1;
  planned: PlannedCall;
  /** `namespace/project` of the item (the merge watch is keyed by project path). */
  project: string;
  /** Required status names of the rule, for the merge watch (merge-when-build-succeeds only). */
  required?: string[];
  /**
   * The trigger the call was planned under: a retry, and the fresh check before a merge, evaluate
   * the item again with it (a rule `on: [merge_request.update]` is judged on the same event).
   * Absent in records of older versions: every event rule applies then.
   */
  trigger?: Trigger;
  /**
   * A merge the merge watch makes for an armed merge request, or the merge queue for the tested head
   * of a queue (no rule plans either as such).
   */
  origin?: 'merge_watch' | 'merge_queue' | 'disarm';
  /**
   * A merge queue's removal comment: a retry sends it only while the entry is marked as left (the
   * removal took effect); otherwise the queue's next run judges the merge request again.
   */
  queueExit?: true;
}

/** What a handler needs besides the call. */
export interface CallContext {
  client: ExecutorClient;
  store: ExecutorStore;
  itemKey: string;
  stored: StoredCall;
  now: () => number;
  log: ExecutorLog;
  /** The bot's own user: only its notes count when looking for a comment's marker. */
  bot?: BotIdentity;
  /**
   * The item as the fresh check read it just before this call (calls in CHECKED_FRESH only): the
   * call relies on it instead of reading again, so the evaluation is the last read before the call.
   */
  fresh?: ItemSnapshot;
}

export const done = (detail: string): CallResult => ({ status: 'done', detail });
export const skipped = (detail: string): CallResult => ({ status: 'skipped', detail });
export const failed = (detail: string, error: string, retryable: boolean): CallResult => ({
  status: 'failed',
  detail,
  error,
  retryable,
});

/**
 * One kind of API call (one file each in calls/): how a plan tells two of them apart, whether it
 * waits for a fresh evaluation, how it is carried out, and what a plan says it does. `in K`: one
 * handler may serve a kind on both items (`CallHandler<'issues.update' | 'mergeRequests.update'>`).
 */
export interface CallHandler<K extends Op> {
  /** Two calls of this kind with the same key do the same thing to the item: a plan keeps one. */
  key(call: CallOf<K>): string;
  /**
   * Made only on a fresh evaluation that still plans it (fresh-check.ts): calls that cannot be taken
   * back (a merge, a move to another project) or that decide one (arming and cancelling
   * merge-when-build-succeeds).
   */
  freshCheck: boolean;
  /** Re-reads what it changes and acts only when the effect does not hold yet; safe to run twice. */
  perform(ctx: CallContext, call: CallOf<K>): Promise<CallResult>;
  /**
   * What the plan of a rules change (rules/repository/plan.ts, `hookbot plan`, the comment on a
   * merge request that changes `.hookbot.yml`) says the call would do: one line per effect, `{items}`
   * standing for the items (`would close {items}`); `hideText`: the item is confidential, leave out
   * any text the call writes.
   */
  effects(call: CallOf<K>, hideText: boolean): string[];
  /**
   * In a dry run, what the call would come to as the store alone tells it (no read of the server):
   * a result to report instead of "would call", or undefined. The merge queue's memory of a merge
   * request taken out at its head, so that `simulate` says what the bot does.
   */
  dryRun?(
    store: Pick<CallContext['store'], 'queued'>,
    itemKey: string,
    call: CallOf<K>,
  ): CallResult | undefined;
}
