/**
 * The StateStore operations over a HeldState, shared by the embedded and the in-memory backend.
 * A backend supplies only durability (`persist`, `settled`) and its lifecycle; so both backends
 * answer every operation the same way, which the shared contract tests check.
 *
 * A write validates and encodes its mutation, applies it to memory synchronously (so the next read
 * and the next duplicate check already see it), then resolves once the backend made it durable.
 *
 * The two writes every delivery makes, `accept` and `markProcessed`, take a shorter path than the
 * others: their fields are checked directly and the body is serialised once, with no parse back
 * (the held entry parses it only if someone reads it). Profiled with 4 KB bodies, the JSON round
 * trip and the schema check of the general path were a fifth of the store's CPU time.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { StateError } from './errors.ts';
import { HeldEntry, type JsonPiece } from './held-entry.ts';
import {
  mutationSchema,
  queueControlSchema,
  queueEntrySchema,
  watchEntrySchema,
  type Mutation,
} from './mutations.ts';
import { queueKeyOf } from './queue-order.ts';
import type { ResolvedStateOptions } from './options.ts';
import { HeldState } from './held-state.ts';
import type {
  AcceptResult,
  ActionFailure,
  ActionInput,
  CloseOptions,
  DecisionRecord,
  Delivery,
  InboxEntry,
  OutboxAction,
  ParkedDelivery,
  PausedRule,
  PendingDelivery,
  QueueControl,
  QueueEntry,
  RecordDecisionOptions,
  StateStats,
  StateStore,
  WatchEntry,
} from './store.ts';

/**
 * Headers that carry credentials: never written to disk, whatever the caller passes (the hook's
 * secret arrives in plain text in X-Gitlab-Token).
 */
const SECRET_HEADERS = new Set(['x-gitlab-token', 'authorization', 'private-token', 'cookie']);

function storableHeaders(headers: Record<string, string>): Record<string, string> {
  // The usual case (the receiver passes only X-Gitlab-Event) copies nothing: checked first.
  let secret = false;
  for (const name in headers) if (SECRET_HEADERS.has(name.toLowerCase())) secret = true;
  if (!secret) return headers;
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !SECRET_HEADERS.has(name.toLowerCase())),
  );
}

/** What an accept's encoding starts with, before its entry's JSON. */
export const ACCEPT_PREFIX = '{"op":"accept","entry":';

export abstract class HeldStateStore implements StateStore {
  protected readonly options: ResolvedStateOptions;
  protected model: HeldState;
  protected isOpen = false;
  /** What the error messages call this store: its file, or "the in-memory state store". */
  protected abstract readonly label: string;

  /**
   * `keepDecisions: false`: the model keeps no decisions for explain besides the latest and the
   * ring (a backend that reads them from elsewhere when asked overrides `keptDecisions`).
   */
  constructor(options: ResolvedStateOptions, model: { keepDecisions?: boolean } = {}) {
    this.options = options;
    this.model = new HeldState(options, model);
  }

  abstract open(): Promise<void>;
  abstract compact(): Promise<void>;
  abstract close(options?: CloseOptions): Promise<void>;
  abstract stats(): StateStats;
  /**
   * Makes an applied mutation durable; `json` is its encoding (in pieces, to be written in order).
   * For an accept, `held` is its entry, whose JSON follows `ACCEPT_PREFIX` in `json`: a backend
   * that can read it back once durable may let memory go of it (HeldEntry.locate).
   */
  protected abstract persist(json: string | readonly JsonPiece[], held?: HeldEntry): Promise<void>;
  /** Resolves once every mutation persisted so far is durable. */
  protected abstract settled(): Promise<void>;

  async flush(): Promise<void> {
    this.assertOpen();
    await this.settled();
  }

  // Inbox

  async accept(delivery: Delivery): Promise<AcceptResult> {
    this.assertOpen();
    const now = this.options.now();
    const first = this.model.duplicateOf(delivery.key, now);
    if (first !== undefined) {
      // The first copy may still be on its way to disk: acknowledging the duplicate before it is
      // durable would let a crash lose both.
      await this.settled();
      return { id: first, duplicate: true };
    }
    if (this.model.inbox.size >= this.options.maxPending)
      throw new StateError(
        'inbox_full',
        `the inbox holds ${this.model.inbox.size} unprocessed deliveries (the limit, maxPending); refusing more until some are processed`,
      );
    const { entry, held, pieces, expiresAt } = this.prepareAccept(delivery, now);
    if (this.model.inboxBytes + held.bytes > this.options.maxPendingBytes)
      throw new StateError(
        'inbox_full',
        `the inbox holds ${this.model.inboxBytes} bytes of unprocessed deliveries and this one (${held.bytes} bytes) would pass the limit of ${this.options.maxPendingBytes} (maxPendingBytes); refusing more until some are processed`,
      );
    this.model.acceptHeld(held, now, expiresAt);
    // The same text as JSON.stringify of the whole mutation, without serialising the body twice,
    // in pieces: the body's text goes into the journal line as it is (journal.ts encodeLine).
    await this.persist([ACCEPT_PREFIX, ...pieces, `,"expiresAt":${expiresAt}}`], held);
    return { id: entry.id, duplicate: false };
  }

  /**
   * The entry a delivery becomes, checked and encoded once: its JSON in pieces (the body's received
   * text spliced in), held as text. Throws a TypeError, before anything changed, for a field a
   * restart would not give back the same or a body JSON cannot hold (BigInt, cycles).
   */
  protected prepareAccept(
    delivery: Delivery,
    now: number,
  ): { entry: InboxEntry; held: HeldEntry; pieces: readonly JsonPiece[]; expiresAt: number } {
    const entry: InboxEntry = {
      id: randomUUID(),
      key: delivery.key,
      kind: delivery.kind,
      receivedAt: delivery.receivedAt,
      acceptedAt: now,
      headers: storableHeaders(delivery.headers),
      body: delivery.body,
    };
    const expiresAt = now + this.options.dedupTtlMs;
    this.checkAccept(entry, expiresAt);
    if (delivery.bodyJson === undefined) {
      const json = JSON.stringify(entry);
      return { entry, held: HeldEntry.fromJson(entry, json), pieces: [json], expiresAt };
    }
    const pieces = entryJsonPieces(entry, delivery.bodyJson);
    const bytes = pieces.reduce((sum, piece) => sum + Buffer.byteLength(piece), 0);
    const held = HeldEntry.fromPieces(entry, pieces, bytes);
    return { entry, held, pieces, expiresAt };
  }

  pending(): InboxEntry[] {
    this.assertOpen();
    return Array.from(this.model.inbox.values(), (held) => held.entry);
  }

  pendingDeliveries(): PendingDelivery[] {
    this.assertOpen();
    return Array.from(this.model.inbox.values(), (held) =>
      this.delivery(held.id, held.kind, undefined, held.receivedAt),
    );
  }

  delivery(id: string, kind: string, fresh?: unknown, receivedAt?: number): PendingDelivery {
    const model = () => this.model;
    let handOver = fresh;
    return {
      id,
      kind,
      receivedAt: receivedAt ?? model().inbox.get(id)?.receivedAt ?? 0,
      get body(): unknown {
        // The receiver's parsed body goes to the first reader; later reads parse the stored text.
        if (handOver !== undefined) {
          const body = handOver;
          handOver = undefined;
          return body;
        }
        return model().inbox.get(id)?.entry.body;
      },
    };
  }

  async markProcessed(id: string): Promise<void> {
    this.assertOpen();
    if (!this.model.inbox.has(id)) return this.settled();
    this.model.apply({ op: 'processed', id });
    await this.persist(`{"op":"processed","id":${JSON.stringify(id)}}`);
  }

  async beginAttempt(id: string): Promise<number> {
    this.assertOpen();
    if (!this.model.inbox.has(id)) {
      await this.settled();
      return 0;
    }
    const written = this.commit({ op: 'attempt', id });
    // Read now: applied synchronously, and the delivery may be processed before the write settles.
    const begun = this.model.attempts.get(id) ?? 0;
    await written;
    return begun;
  }

  deliveryAttempts(id: string): number {
    this.assertOpen();
    return this.model.attempts.get(id) ?? 0;
  }

  async releaseAttempt(id: string): Promise<void> {
    this.assertOpen();
    if (this.model.attempts.has(id)) await this.commit({ op: 'attempt_released', id });
    else await this.settled();
  }

  async parkDelivery(id: string, reason: string): Promise<void> {
    this.assertOpen();
    const held = this.model.inbox.get(id);
    if (held === undefined) return this.settled();
    await this.commit({ op: 'park_delivery', parked: this.parkedRecord(held, reason) });
  }

  /** What a parked delivery keeps of its entry: the fields, the attempts, not the body. */
  protected parkedRecord(held: HeldEntry, reason: string): ParkedDelivery {
    return {
      id: held.id,
      key: held.key,
      kind: held.kind,
      receivedAt: held.receivedAt,
      attempts: this.model.attempts.get(held.id) ?? 0,
      reason,
      at: this.options.now(),
    };
  }

  parkedDeliveries(): ParkedDelivery[] {
    this.assertOpen();
    return [...this.model.parkedDeliveries.values()];
  }

  // Outbox

  async putAction(input: ActionInput): Promise<{ created: boolean }> {
    this.assertOpen();
    if (this.getAction(input.id) !== undefined) {
      await this.settled();
      return { created: false };
    }
    const now = this.options.now();
    const action: OutboxAction = {
      id: input.id,
      itemKey: input.itemKey,
      rule: input.rule,
      call: input.call,
      attempts: 0,
      nextTryAt: input.nextTryAt ?? now,
      createdAt: now,
    };
    await this.commit({ op: 'put_action', action });
    return { created: true };
  }

  getAction(id: string): OutboxAction | undefined {
    this.assertOpen();
    return this.model.outbox.get(id) ?? this.model.parked.get(id);
  }

  dueActions(now: number): OutboxAction[] {
    this.assertOpen();
    // Array.prototype.sort is stable: equal times keep the order the actions were planned in.
    return [...this.model.outbox.values()]
      .filter((action) => action.nextTryAt <= now)
      .sort((a, b) => a.nextTryAt - b.nextTryAt);
  }

  async completeAction(id: string): Promise<void> {
    this.assertOpen();
    if (this.getAction(id) !== undefined) await this.commit({ op: 'complete_action', id });
    else await this.settled();
  }

  async failAction(id: string, failure: ActionFailure): Promise<void> {
    this.assertOpen();
    if (!this.model.outbox.has(id))
      throw new StateError(
        'unknown_action',
        `${this.label}: cannot record a failure of action ${JSON.stringify(id)}: it is not in the outbox (never planned, completed or parked)`,
      );
    await this.commit({
      op: 'fail_action',
      id,
      error: failure.error,
      at: this.options.now(),
      nextTryAt: failure.retryable ? failure.nextTryAt : null,
    });
  }

  async parkAction(id: string, reason: string): Promise<void> {
    this.assertOpen();
    if (this.getAction(id) === undefined)
      throw new StateError(
        'unknown_action',
        `${this.label}: cannot park action ${JSON.stringify(id)}: it is not in the outbox (never planned or completed)`,
      );
    await this.commit({ op: 'park_action', id, reason, at: this.options.now() });
  }

  listParked(): OutboxAction[] {
    this.assertOpen();
    return [...this.model.parked.values()];
  }

  // Merge watch

  async watch(entry: WatchEntry): Promise<void> {
    this.assertOpen();
    // Fields the entry does not know are not kept (as for queue entries).
    await this.commit({ op: 'watch', entry: watchEntrySchema.parse(entry) });
  }

  async unwatch(itemKey: string): Promise<void> {
    this.assertOpen();
    if (this.model.watches.has(itemKey)) await this.commit({ op: 'unwatch', itemKey });
    else await this.settled();
  }

  watched(): WatchEntry[] {
    this.assertOpen();
    return [...this.model.watches.values()];
  }

  // Merge queues

  async enqueue(entry: QueueEntry): Promise<void> {
    this.assertOpen();
    // A copy of the known fields only, as the journal and the database will hold it.
    await this.commit({ op: 'enqueue', entry: queueEntrySchema.parse(entry) });
  }

  async dequeue(itemKey: string): Promise<void> {
    this.assertOpen();
    if (this.model.queue.has(itemKey)) await this.commit({ op: 'dequeue', itemKey });
    else await this.settled();
  }

  queued(): QueueEntry[] {
    this.assertOpen();
    return [...this.model.queue.values()];
  }

  async setQueueControl(control: QueueControl): Promise<void> {
    this.assertOpen();
    const parsed = queueControlSchema.parse(control);
    const key = queueKeyOf(parsed.project, parsed.targetBranch, parsed.queue);
    // Nothing to lift on a queue without a control: no record.
    if (parsed.paused === undefined && !this.model.controls.has(key)) return this.settled();
    await this.commit({ op: 'queue_control', control: parsed });
  }

  queueControls(): QueueControl[] {
    this.assertOpen();
    return [...this.model.controls.values()];
  }

  // Schedules and approvals

  nextRun(sweep: string, project?: string): number | undefined {
    this.assertOpen();
    return this.model.nextRun(sweep, project ?? '');
  }

  async setNextRun(sweep: string, project: string | undefined, at: number): Promise<void> {
    this.assertOpen();
    await this.commit({ op: 'next_run', sweep, project: project ?? '', at });
  }

  lastSuccess(sweep: string): number | undefined {
    this.assertOpen();
    return this.model.lastSuccess.get(sweep);
  }

  async setLastSuccess(sweep: string, at: number): Promise<void> {
    this.assertOpen();
    await this.commit({ op: 'last_success', sweep, at });
  }

  async pauseRule(rule: string, reason: string): Promise<void> {
    this.assertOpen();
    await this.commit({ op: 'pause_rule', paused: { rule, reason, at: this.options.now() } });
  }

  async approveRule(rule: string): Promise<void> {
    this.assertOpen();
    if (this.model.paused.has(rule)) await this.commit({ op: 'approve_rule', rule });
    else await this.settled();
  }

  pausedRules(): PausedRule[] {
    this.assertOpen();
    return [...this.model.paused.values()];
  }

  // Decisions

  async recordDecision(
    itemKey: string,
    decision: unknown,
    options: RecordDecisionOptions = {},
  ): Promise<void> {
    this.assertOpen();
    const record: DecisionRecord = {
      id: options.id ?? randomBytes(6).toString('hex'),
      itemKey,
      at: this.options.now(),
      ...(options.acted ? { acted: true as const } : {}),
      decision,
    };
    await this.commit({ op: 'decision', record });
  }

  latestDecision(itemKey: string): DecisionRecord | undefined {
    this.assertOpen();
    return this.model.latest.get(itemKey);
  }

  latestDecisions(): DecisionRecord[] {
    this.assertOpen();
    return [...this.model.latest.values()];
  }

  recentDecisions(limit: number = this.options.recentDecisions): DecisionRecord[] {
    this.assertOpen();
    if (limit <= 0) return [];
    return this.model.recent.slice(-limit).reverse();
  }

  async keptDecisions(itemKey: string): Promise<DecisionRecord[]> {
    this.assertOpen();
    return this.model.kept?.of(itemKey) ?? [];
  }

  // For backends

  /** The counts part of `stats()`. */
  protected counts(): Pick<
    StateStats,
    | 'inbox'
    | 'inboxBytes'
    | 'dedupKeys'
    | 'outbox'
    | 'parked'
    | 'watched'
    | 'pausedRules'
    | 'queueControls'
    | 'decisionItems'
    | 'recentDecisions'
  > {
    const m = this.model;
    return {
      inbox: m.inbox.size,
      inboxBytes: m.inboxBytes,
      dedupKeys: m.dedup.size,
      outbox: m.outbox.size,
      parked: m.parked.size,
      watched: m.watches.size,
      pausedRules: m.paused.size,
      queueControls: m.controls.size,
      decisionItems: m.latest.size,
      recentDecisions: m.recent.length,
    };
  }

  protected assertOpen(): void {
    if (!this.isOpen) throw new StateError('closed', `${this.label} is not open (call open() first)`);
  }

  /**
   * What the mutation schema checks of an accept, checked directly (the values JSON cannot hold
   * would come back different after a restart). The message names the field as the schema would.
   */
  private checkAccept(entry: InboxEntry, expiresAt: number): void {
    const invalid = (field: string, expected: string) =>
      new TypeError(`${this.label}: refusing to store an invalid accept (${field}: expected ${expected})`);
    for (const field of ['key', 'kind'] as const)
      if (typeof entry[field] !== 'string') throw invalid(`entry.${field}`, 'a string');
    for (const field of ['receivedAt', 'acceptedAt'] as const)
      if (!Number.isFinite(entry[field])) throw invalid(`entry.${field}`, 'a finite number');
    if (!Number.isFinite(expiresAt)) throw invalid('expiresAt', 'a finite number');
    for (const name in entry.headers)
      if (typeof entry.headers[name] !== 'string') throw invalid(`entry.headers.${name}`, 'a string');
  }

  /**
   * Encodes, validates and applies a mutation, then waits for the backend. Values travel as JSON,
   * so memory holds exactly what a replay would rebuild, and a value that JSON cannot hold (or a
   * time that is not a number) is refused here rather than written into the journal.
   */
  private async commit(mutation: Mutation): Promise<void> {
    const { json, checked } = this.validated(mutation);
    this.model.apply(checked);
    await this.persist(json);
  }

  /** The mutation as JSON and as read back from it (what memory and the backend keep), or a TypeError. */
  protected validated(mutation: Mutation): { json: string; checked: Mutation } {
    const json = JSON.stringify(mutation);
    const checked = mutationSchema.safeParse(JSON.parse(json));
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new TypeError(
        `${this.label}: refusing to store an invalid ${mutation.op} (${issue?.path.join('.')}: ${issue?.message})`,
      );
    }
    return { json, checked: checked.data as Mutation };
  }
}

/**
 * The entry's JSON with the body's received JSON spliced in, rather than the parsed body serialised
 * again, in three pieces (before the body, the body, after it). The body is valid JSON (the caller
 * parsed it), so a line break can only be whitespace between tokens (JSON strings cannot hold one
 * unescaped): it becomes a space, and the journal's one line per record holds. Read back, it parses
 * to the same body the caller had. Bytes stay bytes: they are written to the journal as they are.
 */
export function entryJsonPieces(entry: InboxEntry, bodyJson: string | Buffer): [string, JsonPiece, string] {
  const head = JSON.stringify({ ...entry, body: undefined });
  return [`${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"body":`, withoutLineBreaks(bodyJson), '}'];
}

const LF = 0x0a;
const CR = 0x0d;

/** Line breaks as spaces; indexOf (native), not a regular expression, on every body of the hook route. */
function withoutLineBreaks(json: string | Buffer): string | Buffer {
  if (typeof json === 'string')
    return json.includes('\n') || json.includes('\r') ? json.replace(/[\r\n]/g, ' ') : json;
  if (json.indexOf(LF) === -1 && json.indexOf(CR) === -1) return json;
  const copy = Buffer.from(json); // the caller's bytes are left as they are
  for (let at = 0; at < copy.length; at++) if (copy[at] === LF || copy[at] === CR) copy[at] = 0x20;
  return copy;
}
