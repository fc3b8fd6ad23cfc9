/**
 * The whole state in memory and the one function that changes it: `apply(mutation)`. Live writes,
 * journal replay and the in-memory store all go through `apply`, so a restart rebuilds exactly the
 * state the process had, bounds included (every bound is enforced inside `apply`, from values the
 * mutation carries, never from the clock).
 *
 * Records are replaced, never modified in place, so an object a read returned does not change
 * under the caller's feet.
 */
import { SCHEMA_VERSION, type StateDocument } from './document.ts';
import type { Mutation } from './mutations.ts';
import type { ResolvedStateOptions } from './options.ts';
import type { DecisionRecord, InboxEntry, OutboxAction, PausedRule, WatchEntry } from './store.ts';

export type ModelBounds = Pick<
  ResolvedStateOptions,
  'maxDedupKeys' | 'maxParked' | 'decisionItems' | 'recentDecisions'
>;

interface ScheduleEntry {
  sweep: string;
  project: string;
  at: number;
}

export class StateModel {
  /** Insertion order is acceptance order. */
  readonly inbox = new Map<string, InboxEntry>();
  /** Insertion order is expiry order (one TTL for all keys), so expired keys sit at the front. */
  readonly dedup = new Map<string, { id: string; expiresAt: number }>();
  readonly outbox = new Map<string, OutboxAction>();
  /** Insertion order is parking order, so the oldest parked goes first past the bound. */
  readonly parked = new Map<string, OutboxAction>();
  readonly watches = new Map<string, WatchEntry>();
  readonly nextRuns = new Map<string, ScheduleEntry>();
  readonly lastSuccess = new Map<string, number>();
  readonly paused = new Map<string, PausedRule>();
  /** Insertion order is recency: the least recently decided item goes first past the bound. */
  readonly latest = new Map<string, DecisionRecord>();
  /** Oldest first. */
  readonly recent: DecisionRecord[] = [];

  readonly #bounds: ModelBounds;

  constructor(bounds: ModelBounds) {
    this.#bounds = bounds;
  }

  static fromDocument(doc: StateDocument, bounds: ModelBounds): StateModel {
    const model = new StateModel(bounds);
    for (const entry of doc.inbox) model.inbox.set(entry.id, entry);
    for (const { key, id, expiresAt } of doc.dedup) model.dedup.set(key, { id, expiresAt });
    for (const action of doc.outbox) model.outbox.set(action.id, action);
    for (const action of doc.parked) model.parked.set(action.id, action);
    for (const entry of doc.watches) model.watches.set(entry.itemKey, entry);
    for (const entry of doc.schedules.nextRuns)
      model.nextRuns.set(scheduleKey(entry.sweep, entry.project), entry);
    for (const { sweep, at } of doc.schedules.lastSuccess) model.lastSuccess.set(sweep, at);
    for (const paused of doc.pausedRules) model.paused.set(paused.rule, paused);
    for (const record of doc.decisions.latest) model.latest.set(record.itemKey, record);
    for (const record of doc.decisions.recent) model.recent.push(record);
    // The bounds may have been lowered in the configuration since the document was written.
    model.#enforceBounds();
    return model;
  }

  toDocument(seq: number): StateDocument {
    return {
      version: SCHEMA_VERSION,
      seq,
      inbox: [...this.inbox.values()],
      dedup: [...this.dedup].map(([key, { id, expiresAt }]) => ({ key, id, expiresAt })),
      outbox: [...this.outbox.values()],
      parked: [...this.parked.values()],
      watches: [...this.watches.values()],
      schedules: {
        nextRuns: [...this.nextRuns.values()],
        lastSuccess: [...this.lastSuccess].map(([sweep, at]) => ({ sweep, at })),
      },
      pausedRules: [...this.paused.values()],
      decisions: { latest: [...this.latest.values()], recent: [...this.recent] },
    };
  }

  /** The id of the delivery first accepted with `key`, if the key is still within its window at `now`. */
  duplicateOf(key: string, now: number): string | undefined {
    const seen = this.dedup.get(key);
    return seen !== undefined && seen.expiresAt > now ? seen.id : undefined;
  }

  /** Forgets de-dup keys expired at `now`. Safe outside the journal: an expired key changes no answer. */
  pruneExpired(now: number): void {
    for (const [key, { expiresAt }] of this.dedup) {
      if (expiresAt > now) break;
      this.dedup.delete(key);
    }
  }

  nextRun(sweep: string, project: string): number | undefined {
    return this.nextRuns.get(scheduleKey(sweep, project))?.at;
  }

  apply(m: Mutation): void {
    switch (m.op) {
      case 'accept': {
        this.inbox.set(m.entry.id, m.entry);
        // Re-inserting moves the key to the back, keeping the map in expiry order.
        this.dedup.delete(m.entry.key);
        this.dedup.set(m.entry.key, { id: m.entry.id, expiresAt: m.expiresAt });
        this.pruneExpired(m.entry.acceptedAt);
        break;
      }
      case 'processed':
        this.inbox.delete(m.id);
        break;
      case 'put_action':
        if (!this.outbox.has(m.action.id) && !this.parked.has(m.action.id))
          this.outbox.set(m.action.id, m.action);
        break;
      case 'complete_action':
        this.outbox.delete(m.id);
        this.parked.delete(m.id);
        break;
      case 'fail_action': {
        const action = this.outbox.get(m.id);
        if (action === undefined) break;
        const failed = { ...action, attempts: action.attempts + 1, lastError: m.error };
        if (m.nextTryAt === null) this.#park(failed, m.error, m.at);
        else this.outbox.set(m.id, { ...failed, nextTryAt: m.nextTryAt });
        break;
      }
      case 'park_action': {
        const action = this.outbox.get(m.id) ?? this.parked.get(m.id);
        if (action !== undefined) this.#park(action, m.reason, m.at);
        break;
      }
      case 'watch':
        this.watches.set(m.entry.itemKey, m.entry);
        break;
      case 'unwatch':
        this.watches.delete(m.itemKey);
        break;
      case 'next_run':
        this.nextRuns.set(scheduleKey(m.sweep, m.project), { sweep: m.sweep, project: m.project, at: m.at });
        break;
      case 'last_success':
        this.lastSuccess.set(m.sweep, m.at);
        break;
      case 'pause_rule':
        this.paused.set(m.paused.rule, m.paused);
        break;
      case 'approve_rule':
        this.paused.delete(m.rule);
        break;
      case 'decision':
        this.latest.delete(m.record.itemKey);
        this.latest.set(m.record.itemKey, m.record);
        this.recent.push(m.record);
        break;
    }
    this.#enforceBounds();
  }

  #park(action: OutboxAction, reason: string, at: number): void {
    this.outbox.delete(action.id);
    this.parked.delete(action.id);
    this.parked.set(action.id, { ...action, parked: { reason, at } });
  }

  #enforceBounds(): void {
    dropOldest(this.dedup, this.#bounds.maxDedupKeys);
    dropOldest(this.parked, this.#bounds.maxParked);
    dropOldest(this.latest, this.#bounds.decisionItems);
    const excess = this.recent.length - this.#bounds.recentDecisions;
    if (excess > 0) this.recent.splice(0, excess);
  }
}

function dropOldest<K, V>(map: Map<K, V>, max: number): void {
  if (map.size <= max) return;
  for (const key of map.keys()) {
    if (map.size <= max) return;
    map.delete(key);
  }
}

/** JSON of the pair: no separator character can make two different pairs collide. */
function scheduleKey(sweep: string, project: string): string {
  return JSON.stringify([sweep, project]);
}
