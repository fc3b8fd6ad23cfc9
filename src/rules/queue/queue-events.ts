/**
 * The merge queue's events (docs/merge-queue.md#where-it-shows): the serial queue and the merge train
 * (scheduler/sweeps/) call one small function per event, and each is told where people look:
 *
 * - explain and the status page's actions list: a merge request's landing, removal and drop are
 *   recorded through the store as a decision that acted (`recordDecision(..., { acted: true })`), so
 *   every backend (memory, file, PostgreSQL) and every replica keeps it with no schema of its own,
 *   and the echoes of the bot's own merge and comment (evaluations that did nothing) never push it
 *   out. The record looks like a decision: the merge request as the queue left it (`evaluation.item`,
 *   merged after a landing: explain's latest is then not a stale "opened"), one call that tells the
 *   event (`execution.calls`, what the actions list shows), and `queueEvent`, the event itself
 *   (queue-story.ts reads the story back);
 * - metrics (`hookbot_merge_queue_*`, ops/metrics.ts): landings by mode and the time from entering
 *   the queue, removals by reason code, car builds by outcome, rounds. Entries and trouble per queue
 *   are read from the store when scraped, not counted here.
 *
 * Entering the queue is the `mergeQueue.enqueue` call of an evaluation (a decision that acted
 * already); `entered` is for a caller that puts a merge request in a queue another way.
 *
 * Recording never fails the queue: an error is logged and the queue goes on.
 */
import type { QueueEntry, StateStore, TrainCar } from '../../state/index.ts';
import { unhandled } from '../../text/index.ts';

/**
 * Why a merge request left its queue, as a stable code: the label of
 * `hookbot_merge_queue_removed_total` and the `code` of the story's JSON.
 */
export const REMOVAL_CODES = [
  'conflict',
  'status_failed',
  'status_timeout',
  'max_updates',
  'merge_refused',
  'push_refused',
  'not_allowed',
  'pushed',
  'closed',
  'merged_elsewhere',
  'gone',
  'target_changed',
  'rule_stopped',
  'operator',
  'dequeue_command',
] as const;
export type RemovalCode = (typeof REMOVAL_CODES)[number];

/** What became of a train car once its fate is known (`hookbot_merge_queue_car_builds_total`). */
export const CAR_OUTCOMES = ['passed', 'failed', 'timed_out', 'replaced'] as const;
export type CarOutcome = (typeof CAR_OUTCOMES)[number];

export const QUEUE_MODES = ['serial', 'train'] as const;
export type QueueMode = (typeof QUEUE_MODES)[number];

/** Where the counters go (ops/metrics.ts `Metrics.mergeQueue` is one). */
export interface QueueMetricsSink {
  /** One merge request landed; `seconds` since it entered its queue. */
  landed(mode: QueueMode, seconds: number): void;
  removed(code: RemovalCode): void;
  carBuilt(outcome: CarOutcome): void;
  round(mode: QueueMode): void;
}

/** The event as recorded (`decision.queueEvent`): what queue-story.ts reads back. */
export interface QueueEventRecord {
  kind: 'entered' | 'came_back' | 'landed' | 'removed' | 'dropped';
  project: string;
  iid: number;
  queue: string;
  targetBranch: string;
  /** When it happened (ms since the epoch). */
  at: number;
  mode?: QueueMode;
  /** Landed: the commit the target branch is at with it (the merge commit, or the car's commit). */
  commit?: string;
  /** Landed by the serial queue: the tested head it merged. */
  tested?: string;
  /** Landed by a train: its car (position now, its members' iids in order). */
  car?: { position: number; members: number[] };
  /** Landed by a train through a car behind its own, which passed while its own failed (flaky CI). */
  through?: string;
  /** Landed: how long since it entered the queue (ms). */
  waitedMs?: number;
  /** Removed or dropped: why. */
  code?: RemovalCode;
  reason?: string;
  /** Removed: the comment the bot posted (or tried to), and whether it is posted. */
  comment?: { body: string; posted: boolean };
  /** Came back: why it had left before. */
  after?: string;
}

/** What the queue saw of the merge request (its title, state and head), when it read it. */
export interface SeenMergeRequest {
  title?: string;
  state?: string;
  sha?: string | null;
}

export type Landing =
  | { mode: 'serial'; tested: string; commit?: string }
  | {
      mode: 'train';
      car: Pick<TrainCar, 'position' | 'iids' | 'sha'>;
      commit: string;
      /** Its own car failed, a car behind it (which contains it) passed: why it landed all the same. */
      through?: string;
    };

export interface Removal {
  code: RemovalCode;
  reason: string;
  comment?: { body: string; posted: boolean };
}

export interface QueueEvents {
  entered(entry: QueueEntry, mr?: SeenMergeRequest): Promise<void>;
  cameBack(entry: QueueEntry, after: string, mr?: SeenMergeRequest): Promise<void>;
  landed(entry: QueueEntry, landing: Landing, mr?: SeenMergeRequest): Promise<void>;
  /** Out with a comment: remembered at the head it left at. */
  removed(entry: QueueEntry, removal: Removal, mr?: SeenMergeRequest): Promise<void>;
  /** Out at once, without a comment. */
  dropped(entry: QueueEntry, removal: Omit<Removal, 'comment'>, mr?: SeenMergeRequest): Promise<void>;
  carBuilt(outcome: CarOutcome): void;
  round(mode: QueueMode): void;
}

export interface QueueEventDeps {
  store: Pick<StateStore, 'recordDecision'>;
  now: () => number;
  metrics?: QueueMetricsSink;
  log?: { warn(fields: Record<string, unknown>, message: string): void };
}

const short = (sha: string | undefined | null): string => (sha ? sha.slice(0, 7) : 'none');
const iids = (members: readonly number[]): string => members.map((n) => `!${n}`).join(', ');

/** The event in words: a headline (the actions list's call) and its details. */
export function queueEventWords(event: QueueEventRecord): { headline: string; detail: string } {
  const where = `the ${event.queue} queue for ${event.targetBranch}`;
  switch (event.kind) {
    case 'entered':
      return { headline: 'merge queue: entered', detail: `entered ${where}` };
    case 'came_back':
      return {
        headline: 'merge queue: came back',
        detail: `entered ${where} again${event.after ? ` after it left (${event.after})` : ''}`,
      };
    case 'landed': {
      const commit = event.commit ? ` at ${short(event.commit)}` : '';
      if (event.mode === 'train' && event.car)
        return {
          headline: `merge queue: landed in car ${event.car.position} of a train`,
          detail: `${event.targetBranch} fast-forwarded to ${short(event.commit)}, the commit of car ${event.car.position} of the ${event.queue} merge train (members ${iids(event.car.members)})${event.through ? `; ${event.through}` : ''}`,
        };
      return {
        headline: 'merge queue: merged by the serial queue',
        detail: `${where} merged its tested head ${short(event.tested)}; ${event.targetBranch} is${commit} with it`,
      };
    }
    case 'removed':
      return {
        headline: `merge queue: removed (${event.code ?? 'unknown'})`,
        detail: `taken out of ${where}: ${event.reason ?? ''}${event.comment ? (event.comment.posted ? '; comment posted' : '; the comment is not posted yet (the retry sweep sends it)') : '; no comment'}`,
      };
    case 'dropped':
      return {
        headline: `merge queue: left (${event.code ?? 'unknown'})`,
        detail: `out of ${where} at once, without a comment: ${event.reason ?? ''}`,
      };
    default:
      return unhandled(event.kind, 'queue event kind');
  }
}

/** The decision recorded for an event: a decision that acted, in the shape explain and the status page read. */
export function queueEventDecision(
  entry: Pick<QueueEntry, 'itemKey' | 'mrId' | 'iid' | 'project' | 'rule'>,
  event: QueueEventRecord,
  mr: SeenMergeRequest = {},
): Record<string, unknown> {
  const at = new Date(event.at).toISOString();
  const { headline, detail } = queueEventWords(event);
  const state = mr.state ?? (event.kind === 'landed' ? 'merged' : undefined);
  const call = {
    id: `queue-${event.kind}-${event.at.toString(36)}`,
    op: `mergeQueue.${event.kind}`,
    rule: entry.rule,
    action: 'queue',
    reason: detail,
    call: headline,
    status: 'done',
    detail,
  };
  const text = [
    `${headline} (${at})`,
    `  ${detail}`,
    ...(event.comment ? ['  comment:', ...event.comment.body.split('\n').map((line) => `    ${line}`)] : []),
    ...(state ? [`  ${entry.project}!${entry.iid} is ${state} now`] : []),
  ].join('\n');
  return {
    itemKey: entry.itemKey,
    at,
    dryRun: false,
    queueEvent: event,
    evaluation: {
      item: {
        kind: 'merge_request',
        id: entry.mrId,
        iid: entry.iid,
        project: entry.project,
        title: mr.title ?? '',
        ...(state ? { state } : {}),
        ...(mr.sha !== undefined ? { sha: mr.sha } : {}),
      },
      event: `merge_queue.${event.kind}`,
      at,
      trigger: { kind: 'merge_queue', byBot: true },
      rules: [],
      plan: [],
    },
    execution: {
      itemKey: entry.itemKey,
      dryRun: false,
      calls: [call],
      headMoved: false,
      counts: { done: 1, skipped: 0, failed: 0, ambiguous: 0, withdrawn: 0, 'dry-run': 0 },
    },
    text,
  };
}

/** The events of a queue driver that records them into `deps.store` and counts them into `deps.metrics`. */
export function createQueueEvents(deps: QueueEventDeps): QueueEvents {
  const { store, now, metrics } = deps;
  const base = (entry: QueueEntry) => ({
    project: entry.project,
    iid: entry.iid,
    queue: entry.queue,
    targetBranch: entry.targetBranch,
    at: now(),
  });

  async function record(entry: QueueEntry, event: QueueEventRecord, mr?: SeenMergeRequest): Promise<void> {
    try {
      await store.recordDecision(entry.itemKey, queueEventDecision(entry, event, mr), { acted: true });
    } catch (error) {
      deps.log?.warn(
        { sweep: 'merge_queue', itemKey: entry.itemKey, err: (error as Error).message ?? String(error) },
        `merge queue: could not record the event "${event.kind}" for explain`,
      );
    }
  }

  return {
    entered: (entry, mr) => record(entry, { kind: 'entered', ...base(entry) }, mr),
    cameBack: (entry, after, mr) => record(entry, { kind: 'came_back', ...base(entry), after }, mr),
    async landed(entry, landing, mr) {
      const event = base(entry);
      const waitedMs = Math.max(0, event.at - entry.enqueuedAt);
      metrics?.landed(landing.mode, waitedMs / 1000);
      await record(
        entry,
        landing.mode === 'serial'
          ? {
              kind: 'landed',
              ...event,
              mode: 'serial',
              tested: landing.tested,
              ...(landing.commit ? { commit: landing.commit } : {}),
              waitedMs,
            }
          : {
              kind: 'landed',
              ...event,
              mode: 'train',
              commit: landing.commit,
              car: { position: landing.car.position, members: [...landing.car.iids] },
              ...(landing.through ? { through: landing.through } : {}),
              waitedMs,
            },
        { ...mr, state: mr?.state ?? 'merged' },
      );
    },
    async removed(entry, removal, mr) {
      metrics?.removed(removal.code);
      await record(
        entry,
        {
          kind: 'removed',
          ...base(entry),
          code: removal.code,
          reason: removal.reason,
          ...(removal.comment ? { comment: removal.comment } : {}),
        },
        mr,
      );
    },
    async dropped(entry, removal, mr) {
      metrics?.removed(removal.code);
      await record(
        entry,
        { kind: 'dropped', ...base(entry), code: removal.code, reason: removal.reason },
        mr,
      );
    },
    carBuilt: (outcome) => metrics?.carBuilt(outcome),
    round: (mode) => metrics?.round(mode),
  };
}

/** Events that go nowhere (a dry run, a tool without a store). */
export const noQueueEvents: QueueEvents = {
  entered: async () => undefined,
  cameBack: async () => undefined,
  landed: async () => undefined,
  removed: async () => undefined,
  dropped: async () => undefined,
  carBuilt: () => undefined,
  round: () => undefined,
};
