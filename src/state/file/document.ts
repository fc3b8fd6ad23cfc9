/**
 * The lowdb document: the whole bounded state as of journal record `seq`. Collections are arrays
 * (not objects keyed by id) because their order means something: acceptance order of the inbox,
 * expiry order of the de-dup keys, recency of decisions.
 */
import { z } from 'zod';
import {
  decisionRecordSchema,
  deliveryAttemptsSchema,
  inboxEntrySchema,
  parkedDeliverySchema,
  outboxActionSchema,
  pausedRuleSchema,
  queueControlSchema,
  queueEntrySchema,
  watchEntrySchema,
} from '../mutations.ts';

/** Bump together with a step in migrations.ts whenever the document's shape changes. */
export const SCHEMA_VERSION = 2;

export const dedupEntrySchema = z.object({ key: z.string(), id: z.string(), expiresAt: z.number() });

/**
 * A de-dup file the document relies on (see dedup-file.ts): written once, never changed, dropped
 * whole once every key in it expired or was pushed out by newer ones.
 */
export const dedupFileRefSchema = z.object({
  /** Its name, in the document's folder (never a path: the document names no file elsewhere). */
  file: z.string().regex(/^[^/\\]+$/),
  /** How many keys it holds. */
  keys: z.number().int().nonnegative(),
  /** Its size. */
  bytes: z.number().int().nonnegative(),
  /** The latest expiry in it: past this time none of its keys counts any more. */
  newest: z.number(),
  /** CRC-32 of the whole file, as 8 hex digits. */
  crc: z.string().regex(/^[0-9a-f]{8}$/),
});

export const stateDocumentSchema = z.object({
  version: z.literal(SCHEMA_VERSION),
  /** The last journal record folded into this document; replay skips records up to it. */
  seq: z.number().int().nonnegative(),
  inbox: z.array(inboxEntrySchema),
  /**
   * The newest de-dup keys, inline while there are few (fewer than `dedupFileKeys`); older ones
   * live in `dedupFiles`, so a compaction does not rewrite the whole de-duplication window.
   */
  dedup: z.array(dedupEntrySchema),
  /** Actions still to try, in the order they were planned. */
  outbox: z.array(outboxActionSchema),
  /** Actions given up on, oldest parked first. */
  parked: z.array(outboxActionSchema),
  watches: z.array(watchEntrySchema),
  /** Merge queue entries. Absent in documents written before merge queues existed: none. */
  queue: z.array(queueEntrySchema).default([]),
  schedules: z.object({
    /** `project` '' stands for the sweep as a whole. */
    nextRuns: z.array(z.object({ sweep: z.string(), project: z.string(), at: z.number() })),
    lastSuccess: z.array(z.object({ sweep: z.string(), at: z.number() })),
  }),
  pausedRules: z.array(pausedRuleSchema),
  decisions: z.object({
    /** Latest decision per item, least recently decided first. */
    latest: z.array(decisionRecordSchema),
    /** The ring of recent decisions, oldest first. */
    recent: z.array(decisionRecordSchema),
    /**
     * The decisions kept for explain (`keptDecisions`) of each item that has any, besides its latest
     * (in `latest`, and the newest of them): `earlier`, oldest first. Absent in documents written
     * before decision history: each item's latest decision is then all it has kept.
     */
    history: z.array(z.object({ itemKey: z.string(), earlier: z.array(decisionRecordSchema) })).optional(),
  }),
  /** Oldest first. Absent in documents written before de-dup files existed: none. */
  dedupFiles: z.array(dedupFileRefSchema).default([]),
  /** Attempts begun on pending deliveries (those with any). Absent before poison deliveries were parked: none. */
  deliveryAttempts: z.array(deliveryAttemptsSchema).optional(),
  /** Deliveries parked, oldest parked first. Absent before poison deliveries were parked: none. */
  parkedDeliveries: z.array(parkedDeliverySchema).optional(),
  /** Operators' queue controls (paused queues). Absent before queues could be steered: none. */
  queueControls: z.array(queueControlSchema).optional(),
});

export type StateDocument = z.infer<typeof stateDocumentSchema>;
export type DedupEntry = z.infer<typeof dedupEntrySchema>;
export type DedupFileRef = z.infer<typeof dedupFileRefSchema>;

export function emptyDocument(): StateDocument {
  return {
    version: SCHEMA_VERSION,
    seq: 0,
    inbox: [],
    dedup: [],
    outbox: [],
    parked: [],
    watches: [],
    queue: [],
    schedules: { nextRuns: [], lastSuccess: [] },
    pausedRules: [],
    decisions: { latest: [], recent: [] },
    dedupFiles: [],
  };
}
