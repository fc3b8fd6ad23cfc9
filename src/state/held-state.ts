/**
 * The whole state in memory and the one function that changes it: `apply(mutation)`. Live writes,
 * journal replay and the in-memory store all go through `apply`, so a restart rebuilds exactly the
 * state the process had, bounds included (every bound is enforced inside `apply`, from values the
 * mutation carries, never from the clock).
 *
 * Records are replaced, never modified in place, so an object a read returned does not change
 * under the caller's feet.
 */
import { SCHEMA_VERSION, type DedupEntry, type StateDocument } from './file/document.ts';
import { HeldEntry } from './held-entry.ts';
import type { Mutation } from './mutations.ts';
import type { ResolvedStateOptions } from './options.ts';
import { KeptDecisions } from './kept-decisions.ts';
import type { RawJson } from './file/sliced-json.ts';
import type {
  DecisionRecord,
  OutboxAction,
  ParkedDelivery,
  PausedRule,
  QueueControl,
  QueueEntry,
  WatchEntry,
} from './store.ts';
import { queueKeyOf } from './queue-order.ts';

export type ModelBounds = Pick<
  ResolvedStateOptions,
  | 'maxDedupKeys'
  | 'maxParked'
  | 'decisionItems'
  | 'recentDecisions'
  | 'decisionHistory'
  | 'actingDecisions'
  | 'decisionItemBytes'
  | 'decisionBytes'
>;

/** The document as a compaction writes it: inbox entries go as the JSON they were journaled as. */
export type DocumentSnapshot = Omit<StateDocument, 'inbox'> & { inbox: RawJson[] };

interface ScheduleEntry {
  sweep: string;
  project: string;
  at: number;
}

export class HeldState {
  /** Insertion order is acceptance order. */
  readonly inbox = new Map<string, HeldEntry>();
  /** The inbox entries' stored size, summed (the byte bound, `maxPendingBytes`). */
  inboxBytes = 0;
  /** De-dup key -> the entry in force for it. */
  readonly dedup = new Map<string, DedupEntry>();
  /**
   * Every de-dup entry set, oldest first from `#head` on: the order keys expire in (one TTL for all)
   * and are pushed out in. An entry no longer in force (its key was set again) is skipped. A queue of
   * its own because taking the oldest key by iterating the Map walks over the holes deleted keys
   * leave at its front: at a full window (100,000 keys) that cost 11 µs per accept.
   */
  #order: DedupEntry[] = [];
  #head = 0;
  /**
   * De-dup keys added since they were last written to a de-dup file, oldest first (the file store
   * writes them out at a compaction; see dedup-file.ts). May hold keys that since expired or were
   * replaced: `liveRecentKeys` filters them.
   */
  recentKeys: DedupEntry[] = [];
  readonly outbox = new Map<string, OutboxAction>();
  /** Insertion order is parking order, so the oldest parked goes first past the bound. */
  readonly parked = new Map<string, OutboxAction>();
  /** Attempts begun on pending deliveries, by id (only those with any). */
  readonly attempts = new Map<string, number>();
  /** Deliveries parked unprocessed; insertion order is parking order (the oldest goes first past the bound). */
  readonly parkedDeliveries = new Map<string, ParkedDelivery>();
  readonly watches = new Map<string, WatchEntry>();
  readonly queue = new Map<string, QueueEntry>();
  /** Operators' queue controls, by `queueKeyOf` their queue. */
  readonly controls = new Map<string, QueueControl>();
  readonly nextRuns = new Map<string, ScheduleEntry>();
  readonly lastSuccess = new Map<string, number>();
  readonly paused = new Map<string, PausedRule>();
  /** Insertion order is recency: the least recently decided item goes first past the bound. */
  readonly latest = new Map<string, DecisionRecord>();
  /** Oldest first. */
  readonly recent: DecisionRecord[] = [];
  /**
   * The decisions kept for explain, per item (kept-decisions.ts); an item's newest is its latest.
   * Undefined in a PostgreSQL replica's view: there they are read from the database when asked.
   */
  readonly kept: KeptDecisions | undefined;

  readonly #bounds: ModelBounds;

  constructor(bounds: ModelBounds, options: { keepDecisions?: boolean } = {}) {
    this.#bounds = bounds;
    this.kept = options.keepDecisions === false ? undefined : new KeptDecisions(bounds);
  }

  /**
   * `filed`: the keys of the document's de-dup files, oldest first (older than its inline ones).
   * `held`: inbox entries read apart from the document (document-inbox.ts), after its own.
   */
  static fromDocument(
    doc: StateDocument,
    bounds: ModelBounds,
    filed: Iterable<DedupEntry> = [],
    held: Iterable<HeldEntry> = [],
    options: { keepDecisions?: boolean } = {},
  ): HeldState {
    const model = new HeldState(bounds, options);
    for (const entry of doc.inbox) model.#hold(HeldEntry.fromEntry(entry));
    for (const entry of held) model.#hold(entry);
    for (const entry of filed) model.#setKey(entry.key, entry.id, entry.expiresAt);
    for (const entry of doc.dedup) model.recentKeys.push(model.#setKey(entry.key, entry.id, entry.expiresAt));
    for (const action of doc.outbox) model.outbox.set(action.id, action);
    for (const action of doc.parked) model.parked.set(action.id, action);
    for (const { id, attempts } of doc.deliveryAttempts ?? [])
      if (model.inbox.has(id)) model.attempts.set(id, attempts);
    for (const parked of doc.parkedDeliveries ?? []) model.parkedDeliveries.set(parked.id, parked);
    for (const entry of doc.watches) model.watches.set(entry.itemKey, entry);
    for (const entry of doc.queue) model.queue.set(entry.itemKey, entry);
    for (const control of doc.queueControls ?? []) model.#control(control);
    for (const entry of doc.schedules.nextRuns)
      model.nextRuns.set(scheduleKey(entry.sweep, entry.project), entry);
    for (const { sweep, at } of doc.schedules.lastSuccess) model.lastSuccess.set(sweep, at);
    for (const paused of doc.pausedRules) model.paused.set(paused.rule, paused);
    for (const record of doc.decisions.latest) model.latest.set(record.itemKey, record);
    for (const record of doc.decisions.recent) model.recent.push(record);
    if (model.kept) {
      const history = doc.decisions.history;
      // A document from before decision history: each item's latest decision is all it kept.
      if (history === undefined) for (const record of model.latest.values()) model.kept.add(record);
      for (const { itemKey, earlier } of history ?? []) {
        const latest = model.latest.get(itemKey);
        if (latest !== undefined) model.kept.restore(itemKey, [...earlier, latest]);
      }
    }
    // The bounds may have been lowered in the configuration since the document was written.
    model.#enforceBounds();
    model.#enforceKeptBounds();
    return model;
  }

  /**
   * The document as of record `seq`, with `inline` as its de-dup keys (the file store decides which
   * go to a file). Arrays are copies and records are never modified in place, so mutations applied
   * while it is being written do not leak in.
   */
  toDocument(seq: number, inline: DedupEntry[]): DocumentSnapshot {
    return {
      version: SCHEMA_VERSION,
      seq,
      inbox: [...this.inbox.values()],
      dedup: inline,
      outbox: [...this.outbox.values()],
      parked: [...this.parked.values()],
      watches: [...this.watches.values()],
      queue: [...this.queue.values()],
      schedules: {
        nextRuns: [...this.nextRuns.values()],
        lastSuccess: [...this.lastSuccess].map(([sweep, at]) => ({ sweep, at })),
      },
      pausedRules: [...this.paused.values()],
      decisions: {
        latest: [...this.latest.values()],
        recent: [...this.recent],
        history: (this.kept?.entries() ?? []).map(([itemKey, records]) => ({
          itemKey,
          earlier: records.slice(0, -1),
        })),
      },
      dedupFiles: [],
      deliveryAttempts: [...this.attempts].map(([id, attempts]) => ({ id, attempts })),
      parkedDeliveries: [...this.parkedDeliveries.values()],
      queueControls: [...this.controls.values()],
    };
  }

  /** The recent keys still in force (not expired, not replaced, not pushed out), oldest first; keeps only those. */
  liveRecentKeys(): DedupEntry[] {
    this.recentKeys = this.recentKeys.filter((entry) => this.dedup.get(entry.key) === entry);
    return this.recentKeys;
  }

  /** Accepts an entry whose JSON the store already encoded (the write path: no parse of the body). */
  acceptHeld(held: HeldEntry, acceptedAt: number, expiresAt: number): void {
    this.#accept(held, acceptedAt, expiresAt);
    this.#enforceBounds();
  }

  /**
   * Holds an inbox entry accepted elsewhere (another replica's, taken over once its lease ran out):
   * its de-dup key is the database's business, not this replica's.
   */
  adopt(held: HeldEntry): void {
    if (!this.inbox.has(held.id)) this.#hold(held);
  }

  /** Lets a delivery go from this view without processing it (another replica holds it now). */
  release(id: string): void {
    this.apply({ op: 'processed', id });
  }

  /** The id of the delivery first accepted with `key`, if the key is still within its window at `now`. */
  duplicateOf(key: string, now: number): string | undefined {
    const seen = this.dedup.get(key);
    return seen !== undefined && seen.expiresAt > now ? seen.id : undefined;
  }

  /** Forgets de-dup keys expired at `now`. Safe outside the journal: an expired key changes no answer. */
  pruneExpired(now: number): void {
    for (; this.#head < this.#order.length; this.#head++) {
      const entry = this.#order[this.#head] as DedupEntry;
      if (this.dedup.get(entry.key) !== entry) continue;
      if (entry.expiresAt > now) break;
      this.dedup.delete(entry.key);
    }
    this.#trimOrder();
  }

  nextRun(sweep: string, project: string): number | undefined {
    return this.nextRuns.get(scheduleKey(sweep, project))?.at;
  }

  /**
   * `held`: for an accept, its entry already held as text (journal replay converts each record as
   * it reads it, so a backlog is never all parsed at once); the mutation's entry is used otherwise.
   */
  apply(m: Mutation, held?: HeldEntry): void {
    switch (m.op) {
      case 'accept':
        this.#accept(held ?? HeldEntry.fromEntry(m.entry), m.entry.acceptedAt, m.expiresAt);
        break;
      case 'processed':
        this.#drop(m.id);
        break;
      case 'attempt':
        if (this.inbox.has(m.id)) this.attempts.set(m.id, (this.attempts.get(m.id) ?? 0) + 1);
        break;
      case 'attempt_released': {
        const begun = this.attempts.get(m.id) ?? 0;
        if (begun > 1) this.attempts.set(m.id, begun - 1);
        else this.attempts.delete(m.id);
        break;
      }
      case 'park_delivery':
        if (!this.inbox.has(m.parked.id)) break;
        this.#drop(m.parked.id);
        this.parkedDeliveries.delete(m.parked.id);
        this.parkedDeliveries.set(m.parked.id, m.parked);
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
      case 'enqueue':
        this.queue.set(m.entry.itemKey, m.entry);
        break;
      case 'dequeue':
        this.queue.delete(m.itemKey);
        break;
      case 'queue_control':
        this.#control(m.control);
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
        if (this.kept) {
          this.kept.add(m.record);
          this.#enforceKeptBounds();
        }
        break;
    }
    this.#enforceBounds();
  }

  /** A delivery leaves the inbox (processed, parked, or another replica's now). */
  #drop(id: string): void {
    const gone = this.inbox.get(id);
    if (gone !== undefined) {
      this.inbox.delete(id);
      this.inboxBytes -= gone.bytes;
    }
    this.attempts.delete(id);
  }

  #hold(held: HeldEntry): void {
    const replaced = this.inbox.get(held.id);
    if (replaced !== undefined) this.inboxBytes -= replaced.bytes;
    this.inbox.set(held.id, held);
    this.inboxBytes += held.bytes;
  }

  #accept(held: HeldEntry, acceptedAt: number, expiresAt: number): void {
    this.#hold(held);
    this.recentKeys.push(this.#setKey(held.key, held.id, expiresAt));
    this.pruneExpired(acceptedAt);
    // Without compactions (the in-memory store) nobody takes the recent keys: keep them bounded.
    if (this.recentKeys.length > 2 * this.#bounds.maxDedupKeys + 1_000) this.liveRecentKeys();
  }

  /** The key's entry in force from now on; it goes to the back of the order. */
  #setKey(key: string, id: string, expiresAt: number): DedupEntry {
    const entry = { key, id, expiresAt };
    this.dedup.set(key, entry);
    this.#order.push(entry);
    return entry;
  }

  /** Forgets the oldest de-dup keys beyond `max`. */
  #dropOldestKeys(max: number): void {
    for (; this.dedup.size > max && this.#head < this.#order.length; this.#head++) {
      const entry = this.#order[this.#head] as DedupEntry;
      if (this.dedup.get(entry.key) === entry) this.dedup.delete(entry.key);
    }
    this.#trimOrder();
  }

  /** Drops the consumed front of the order once it is most of it (amortised O(1) per key). */
  #trimOrder(): void {
    if (this.#head > 1_024 && this.#head * 2 > this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Sets or (nothing set) removes the control of a queue. */
  #control(control: QueueControl): void {
    const key = queueKeyOf(control.project, control.targetBranch, control.queue);
    if (control.paused === undefined) this.controls.delete(key);
    else this.controls.set(key, control);
  }

  #park(action: OutboxAction, reason: string, at: number): void {
    this.outbox.delete(action.id);
    this.parked.delete(action.id);
    this.parked.set(action.id, { ...action, parked: { reason, at } });
  }

  #enforceBounds(): void {
    this.#dropOldestKeys(this.#bounds.maxDedupKeys);
    dropOldest(this.parked, this.#bounds.maxParked);
    dropOldest(this.parkedDeliveries, this.#bounds.maxParked);
    dropOldest(this.latest, this.#bounds.decisionItems, (itemKey) => this.kept?.forget(itemKey));
    const excess = this.recent.length - this.#bounds.recentDecisions;
    if (excess > 0) this.recent.splice(0, excess);
  }

  /** The bound on all kept decisions' bytes: the least recently decided items' go first. */
  #enforceKeptBounds(): void {
    const kept = this.kept;
    if (kept === undefined || kept.bytes <= this.#bounds.decisionBytes) return;
    kept.enforceTotal([...this.latest.keys()].reverse());
  }
}

function dropOldest<K, V>(map: Map<K, V>, max: number, dropped?: (key: K) => void): void {
  if (map.size <= max) return;
  for (const key of map.keys()) {
    if (map.size <= max) return;
    map.delete(key);
    dropped?.(key);
  }
}

/** JSON of the pair: no separator character can make two different pairs collide. */
function scheduleKey(sweep: string, project: string): string {
  return JSON.stringify([sweep, project]);
}
