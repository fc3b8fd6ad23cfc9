/**
 * The mutations of the state: what a write appends to the journal and what replay applies again.
 * Each carries every value it needs (ids, times), so applying it is deterministic: the state after
 * a replay is the state before the crash.
 *
 * Compatibility rule: a mutation's meaning never changes once released. A new kind of change gets
 * a new `op`; so a journal written by an older schema version replays as it is.
 */
import { z } from 'zod';
import type {
  DecisionRecord,
  InboxEntry,
  OutboxAction,
  ParkedDelivery,
  PausedRule,
  QueueControl,
  QueueEntry,
  WatchEntry,
} from './store.ts';

export type Mutation =
  | { op: 'accept'; entry: InboxEntry; expiresAt: number }
  | { op: 'processed'; id: string }
  | { op: 'put_action'; action: OutboxAction }
  | { op: 'complete_action'; id: string }
  /** `nextTryAt: null` parks the action with the error as the reason. */
  | { op: 'fail_action'; id: string; error: string; at: number; nextTryAt: number | null }
  | { op: 'park_action'; id: string; reason: string; at: number }
  | { op: 'watch'; entry: WatchEntry }
  | { op: 'unwatch'; itemKey: string }
  | { op: 'enqueue'; entry: QueueEntry }
  | { op: 'dequeue'; itemKey: string }
  /** An operator's control of a queue; one with nothing set removes it (docs/merge-queue.md#steering-the-queue). */
  | { op: 'queue_control'; control: QueueControl }
  /** `project` is '' for the sweep as a whole. */
  | { op: 'next_run'; sweep: string; project: string; at: number }
  | { op: 'last_success'; sweep: string; at: number }
  | { op: 'pause_rule'; paused: PausedRule }
  | { op: 'approve_rule'; rule: string }
  | { op: 'decision'; record: DecisionRecord }
  /** A process begins processing a pending delivery (issue 28: poison deliveries). */
  | { op: 'attempt'; id: string }
  /** An attempt ended without a crash (a clean stop). */
  | { op: 'attempt_released'; id: string }
  /** A pending delivery set aside unprocessed, with the reason. */
  | { op: 'park_delivery'; parked: ParkedDelivery };

const time = z.number().finite();

export const inboxEntrySchema = z.object({
  id: z.string(),
  key: z.string(),
  kind: z.string(),
  receivedAt: time,
  acceptedAt: time,
  headers: z.record(z.string(), z.string()),
  body: z.unknown(),
});

export const outboxActionSchema = z.object({
  id: z.string(),
  itemKey: z.string(),
  rule: z.string(),
  call: z.unknown(),
  attempts: z.number().int().nonnegative(),
  nextTryAt: time,
  lastError: z.string().optional(),
  createdAt: time,
  parked: z.object({ reason: z.string(), at: time }).optional(),
});

/** A comment a queue or watch entry keeps (store.ts `CommentTrigger`): checked again before its merge. */
const commentTriggerSchema = z.object({
  kind: z.literal('note'),
  noteId: z.number().int(),
  byBot: z.boolean(),
  events: z.array(z.object({ name: z.string(), byBot: z.boolean() })).optional(),
});

export const watchEntrySchema = z.object({
  itemKey: z.string(),
  project: z.string(),
  mrId: z.number().int(),
  headSha: z.string(),
  targetBranch: z.string().optional(),
  onServer: z.boolean().optional(),
  rule: z.string(),
  required: z.array(z.string()),
  since: time,
  trigger: commentTriggerSchema.optional(),
});

export const queueEntrySchema = z.object({
  itemKey: z.string(),
  project: z.string(),
  projectId: z.number().int(),
  mrId: z.number().int(),
  iid: z.number().int(),
  targetBranch: z.string(),
  queue: z.string(),
  rule: z.string(),
  priority: z.number(),
  enqueuedAt: time,
  required: z.array(z.string()),
  statusTimeoutMs: z.number().nonnegative(),
  maxUpdates: z.number().int().nonnegative(),
  retries: z.number().int().nonnegative().optional(),
  depth: z.number().int().positive().optional(),
  depthAuto: z.object({ min: z.number().int().positive(), max: z.number().int().positive() }).optional(),
  batch: z.number().int().positive().optional(),
  car: z
    .object({
      id: z.string(),
      position: z.number().int().positive(),
      base: z.string(),
      members: z.array(z.string()),
      iids: z.array(z.number().int()),
      heads: z.array(z.string()),
      branch: z.string(),
      date: z.number().int(),
      identity: z.object({ name: z.string(), email: z.string() }),
      sha: z.string().optional(),
      pushedAt: time.optional(),
      landing: time.optional(),
      checked: z
        .object({
          state: z.enum(['passed', 'failed']),
          at: time,
          failed: z.array(z.string()).optional(),
        })
        .optional(),
      retried: z.object({ count: z.number().int().positive(), failed: z.array(z.string()) }).optional(),
    })
    .optional(),
  carCap: z.number().int().positive().optional(),
  carAfter: z.array(z.string()).optional(),
  carsBefore: z
    .array(
      z.object({
        position: z.number().int().positive(),
        base: z.string(),
        members: z.array(z.string()),
        heads: z.array(z.string()),
        branch: z.string(),
        date: z.number().int(),
        identity: z.object({ name: z.string(), email: z.string() }),
      }),
    )
    .max(16)
    .optional(),
  trainCiMs: z.number().nonnegative().optional(),
  trainWindow: z.number().int().positive().optional(),
  removeSourceBranch: z.boolean().optional(),
  mergeCommitMessage: z.string().optional(),
  pinnedSha: z.string().optional(),
  targetSha: z.string().optional(),
  testingSince: time.optional(),
  updates: z.number().int().nonnegative(),
  left: z
    .object({ at: time, sha: z.string(), reason: z.string(), noteId: z.number().int().optional() })
    .optional(),
  approval: z
    .object({
      by: z.string(),
      level: z.number().int(),
      noteId: z.number().int(),
      sha: z.string(),
      at: time.optional(),
    })
    .optional(),
  trigger: commentTriggerSchema.optional(),
  trouble: z
    .object({ since: time, count: z.number().int().nonnegative(), error: z.string(), told: time.optional() })
    .optional(),
  front: z.object({ by: z.string(), at: time }).optional(),
}) satisfies z.ZodType<QueueEntry>;

export const queueControlSchema = z.object({
  project: z.string(),
  projectId: z.number().int(),
  targetBranch: z.string(),
  queue: z.string(),
  paused: z.object({ by: z.string(), reason: z.string(), at: time }).optional(),
}) satisfies z.ZodType<QueueControl>;

export const pausedRuleSchema = z.object({ rule: z.string(), reason: z.string(), at: time });

export const parkedDeliverySchema = z.object({
  id: z.string(),
  key: z.string(),
  kind: z.string(),
  receivedAt: time,
  attempts: z.number().int().nonnegative(),
  reason: z.string(),
  at: time,
}) satisfies z.ZodType<ParkedDelivery>;

/** A pending delivery's attempts begun (only those with any). */
export const deliveryAttemptsSchema = z.object({ id: z.string(), attempts: z.number().int().nonnegative() });

/** `id` and `acted` are absent in records written before decision history (each reads as not acting). */
export const decisionRecordSchema = z.object({
  id: z.string().optional(),
  itemKey: z.string(),
  at: time,
  acted: z.literal(true).optional(),
  decision: z.unknown(),
}) satisfies z.ZodType<DecisionRecord>;

export const mutationSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('accept'), entry: inboxEntrySchema, expiresAt: time }),
  z.object({ op: z.literal('processed'), id: z.string() }),
  z.object({ op: z.literal('put_action'), action: outboxActionSchema }),
  z.object({ op: z.literal('complete_action'), id: z.string() }),
  z.object({
    op: z.literal('fail_action'),
    id: z.string(),
    error: z.string(),
    at: time,
    nextTryAt: time.nullable(),
  }),
  z.object({ op: z.literal('park_action'), id: z.string(), reason: z.string(), at: time }),
  z.object({ op: z.literal('watch'), entry: watchEntrySchema }),
  z.object({ op: z.literal('unwatch'), itemKey: z.string() }),
  z.object({ op: z.literal('enqueue'), entry: queueEntrySchema }),
  z.object({ op: z.literal('dequeue'), itemKey: z.string() }),
  z.object({ op: z.literal('queue_control'), control: queueControlSchema }),
  z.object({ op: z.literal('next_run'), sweep: z.string(), project: z.string(), at: time }),
  z.object({ op: z.literal('last_success'), sweep: z.string(), at: time }),
  z.object({ op: z.literal('pause_rule'), paused: pausedRuleSchema }),
  z.object({ op: z.literal('approve_rule'), rule: z.string() }),
  z.object({ op: z.literal('decision'), record: decisionRecordSchema }),
  z.object({ op: z.literal('attempt'), id: z.string() }),
  z.object({ op: z.literal('attempt_released'), id: z.string() }),
  z.object({ op: z.literal('park_delivery'), parked: parkedDeliverySchema }),
]) satisfies z.ZodType<Mutation>;
