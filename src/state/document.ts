/**
 * The lowdb document: the whole bounded state as of journal record `seq`. Collections are arrays
 * (not objects keyed by id) because their order means something: acceptance order of the inbox,
 * expiry order of the de-dup keys, recency of decisions.
 */
import { z } from 'zod';
import {
  decisionRecordSchema,
  inboxEntrySchema,
  outboxActionSchema,
  pausedRuleSchema,
  watchEntrySchema,
} from './mutations.ts';

/** Bump together with a step in migrations.ts whenever the document's shape changes. */
export const SCHEMA_VERSION = 2;

export const dedupEntrySchema = z.object({ key: z.string(), id: z.string(), expiresAt: z.number() });

export const stateDocumentSchema = z.object({
  version: z.literal(SCHEMA_VERSION),
  /** The last journal record folded into this document; replay skips records up to it. */
  seq: z.number().int().nonnegative(),
  inbox: z.array(inboxEntrySchema),
  dedup: z.array(dedupEntrySchema),
  /** Actions still to try, in the order they were planned. */
  outbox: z.array(outboxActionSchema),
  /** Actions given up on, oldest parked first. */
  parked: z.array(outboxActionSchema),
  watches: z.array(watchEntrySchema),
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
  }),
});

export type StateDocument = z.infer<typeof stateDocumentSchema>;
export type DedupEntry = z.infer<typeof dedupEntrySchema>;

export function emptyDocument(): StateDocument {
  return {
    version: SCHEMA_VERSION,
    seq: 0,
    inbox: [],
    dedup: [],
    outbox: [],
    parked: [],
    watches: [],
    schedules: { nextRuns: [], lastSuccess: [] },
    pausedRules: [],
    decisions: { latest: [], recent: [] },
  };
}
