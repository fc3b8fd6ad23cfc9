/**
 * The PostgreSQL backend: several identical replicas share one database (docs/deployment.md).
 *
 * The database is the truth; each replica keeps the HeldState of the other backends as its view,
 * so reads stay synchronous (store.ts). What must be decided across replicas is decided by the
 * database, never by a replica's view:
 *
 * - `accept`: the de-dup key is the primary key of `hookbot_dedup`; a batch of accepts is one
 *   multi-row `INSERT … ON CONFLICT` (group commit), and a key another replica inserted first comes
 *   back as a duplicate with its id. Durable (committed) before it resolves.
 * - `putAction`: `INSERT … ON CONFLICT DO NOTHING`: of two replicas planning one action id, one
 *   creates it; the other is told `created: false` and takes the stored action into its view.
 * - the inbox: each delivery is leased to the replica that accepted it; a replica killed stops
 *   renewing, and once the lease ran out another takes the delivery over (`FOR UPDATE SKIP
 *   LOCKED`), so nothing accepted is lost and no two live replicas work one delivery.
 * - named leases (`hookbot_leases`): one replica runs an item at a time, one runs a sweep.
 *
 * Every other write goes through to the database in the order it was made (one chain), as the
 * record it left in this replica's view. The view of what the fleet shares (outbox, watches,
 * schedules, paused rules, decisions) is reloaded at each refresh; keys written meanwhile keep
 * this replica's value, so a reload never undoes a write it raced with.
 */
import type pg from 'pg';
import { StateError } from '../errors.ts';
import { HeldEntry, type JsonPiece } from '../held-entry.ts';
import { HeldState } from '../held-state.ts';
import { HeldStateStore } from '../held-state-store.ts';
import { inboxEntrySchema, outboxActionSchema, type Mutation } from '../mutations.ts';
import {
  resolvePostgresStoreOptions,
  type PostgresStoreOptions,
  type ResolvedPostgresStoreOptions,
} from '../options.ts';
import type {
  AcceptResult,
  ActionInput,
  CloseOptions,
  DecisionRecord,
  Delivery,
  Fleet,
  OutboxAction,
  ParkedDelivery,
  PausedRule,
  ReplicaView,
  StateStats,
  StateStore,
  QueueControl,
  QueueEntry,
  WatchEntry,
} from '../store.ts';
import { SCHEMA_VERSION as DOCUMENT_VERSION } from '../file/document.ts';
import { BatchWriter } from './batch-writer.ts';
import { Connections, settlesWithin as within } from './connection.ts';
import { migrateSchema } from './schema-migrations.ts';
import { queueKeyOf } from '../queue-order.ts';
import { insertDecision, pruneDecisionHistory, readKept } from './decision-history.ts';

/** The store, which is also its replica's handle on the fleet (`fleet` is itself). */
export type PostgresStateStore = StateStore & Fleet & { readonly fleet: Fleet };

export function createPostgresStore(options: PostgresStoreOptions): PostgresStateStore {
  return new PostgresStore(resolvePostgresStoreOptions(options));
}

/** The URL without its password, for messages and logs. */
export function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString().replace(/^(postgres(?:ql)?:\/\/[^:@/]*):?@/, '$1@');
  } catch {
    return 'the database (unparsable URL)';
  }
}

interface PendingAccept {
  key: string;
  id: string;
  json: string;
  bytes: number;
  expiresAt: number;
  now: number;
}

type AcceptOutcome = AcceptResult | StateError;

/**
 * Takes what a reload read (`theirs`) into the view's collection (`mine`), except the keys written
 * during the reload (`touched`, `collection\0key`), which keep this replica's value.
 */
function mergeLoaded<V>(
  collection: string,
  mine: Map<string, V>,
  theirs: Map<string, V>,
  touched: ReadonlySet<string>,
): void {
  const result = new Map(theirs);
  for (const entry of touched) {
    const [name, key] = entry.split('\0') as [string, string];
    if (name !== collection) continue;
    const value = mine.get(key);
    if (value === undefined) result.delete(key);
    else result.set(key, value);
  }
  mine.clear();
  for (const [key, value] of result) mine.set(key, value);
}

/** A replica's view keeps no decisions for explain beyond the latest and the ring: they are read when asked. */
const VIEW = { keepDecisions: false } as const;

class PostgresStore extends HeldStateStore implements Fleet {
  protected readonly label: string;
  readonly replicaId: string;
  readonly #pg: ResolvedPostgresStoreOptions;
  /** The pool and its bounds (connection.ts); undefined while closed. */
  #db: Connections | undefined;
  readonly #accepts: BatchWriter<PendingAccept, AcceptOutcome>;
  readonly #processed: BatchWriter<string, undefined>;
  /** The other writes, one after the other, in the order they were made. */
  #chain: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #refreshing: Promise<void> | undefined;
  /** The reload that follows the one under way, shared by the callers that arrived during it. */
  #nextRefresh: Promise<void> | undefined;
  /** Keys written while a reload reads, one set per reload under way: they keep this replica's value (`collection\0key`). */
  readonly #touched = new Set<Set<string>>();
  /** About how many de-dup keys the table holds (pruned past maxDedupKeys). */
  #dedupEstimate = 0;
  readonly #adoptedListeners: (() => void)[] = [];
  #refreshFailures = 0;
  /** Deliveries processed here whose delete failed (the database was away): deleted at a refresh. */
  readonly #unfinishedDeletes = new Set<string>();
  /**
   * Named leases this replica holds now: the heartbeat renews these and no others. A lease whose
   * release failed (the database was away) is not in it, so it runs out by itself instead of being
   * renewed for as long as the process lives (found by the replicas scenario: an item lease left
   * behind by a release during a database restart kept every other replica off that item).
   */
  readonly #heldLeases = new Set<string>();
  /** Leases whose release failed: deleted again at a refresh, so another replica need not wait them out. */
  readonly #unreleasedLeases = new Set<string>();

  constructor(options: ResolvedPostgresStoreOptions) {
    super(options, VIEW);
    this.#pg = options;
    this.replicaId = options.replicaId;
    this.label = `state database ${describeDatabase(options.url)}`;
    // Two batches of accepts in flight: one gathers and is sent while the other waits for its commit.
    this.#accepts = new BatchWriter((items) => this.#writeAccepts(items), options.maxBatch, 2);
    // A processed mark does not wait for the database's WAL flush (synchronous_commit off for this
    // one statement's transaction): losing it in a database crash only means the delivery is
    // processed again, which the level-triggered design makes harmless (the handlers re-read and
    // act only where the effect does not hold, the outbox keeps an action's id). In the file store
    // the mark rides in the same group commit as the accepts; here it would be a second WAL flush
    // per batch, which cost the acks about a tenth of their rate (docs/benchmarks.md).
    this.#processed = new BatchWriter<string, undefined>(async (ids) => {
      await this.#query(
        `DELETE FROM hookbot_inbox WHERE id = ANY($1::text[])
           AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL`,
        [ids],
      );
      return ids.map(() => undefined);
    }, options.maxBatch);
  }

  get fleet(): Fleet {
    return this;
  }

  // Lifecycle

  async open(): Promise<void> {
    if (this.isOpen) return;
    const db = new Connections(this.#pg, (error) =>
      this.options.log?.warn({ err: error }, 'a database connection was lost'),
    );
    const pool = db.pool;
    this.#db = db;
    try {
      const client = await pool.connect().catch((error: unknown) => {
        throw new StateError(
          'io',
          `${this.label}: cannot connect (${error instanceof Error ? error.message : String(error)}); check HOOKBOT_DATABASE_URL and that the database is up`,
          { cause: error },
        );
      });
      try {
        const migrated = await migrateSchema(client, this.#pg.schema, describeDatabase(this.#pg.url));
        if (migrated.from !== migrated.to)
          this.options.log?.info(
            { from: migrated.from, to: migrated.to, schema: this.#pg.schema },
            migrated.from === 0 ? 'created the state schema' : 'migrated the state schema',
          );
      } finally {
        client.release();
      }
      this.model = new HeldState(this.options, VIEW);
      const counted = await this.#query<{ n: string }>('SELECT count(*) AS n FROM hookbot_dedup');
      this.#dedupEstimate = Number(counted.rows[0]?.n ?? 0);
      this.isOpen = true;
      await this.#heartbeat();
      await this.#reload();
      await this.#loadParkedDeliveries();
      await this.#adopt();
    } catch (error) {
      this.isOpen = false;
      this.#db = undefined;
      await pool.end().catch(() => undefined);
      throw error;
    }
    this.#timer = setInterval(() => void this.#refreshQuietly(), this.#pg.refreshMs);
    this.#timer.unref();
  }

  async compact(): Promise<void> {
    this.assertOpen();
    await this.settled();
    await this.#prune();
  }

  /**
   * Waits for the writes in flight, hands back what this replica held, and ends the pool. With
   * `timeoutMs`, no longer than that: past it the pool's sockets are destroyed (a database that does
   * not answer must not hold a stop), the writes still in flight fail, and what this replica held is
   * left to expire (`leaseMs`) and be taken over, as after a crash. Nothing accepted is lost either
   * way: the inbox rows stay until a replica processes them.
   */
  async close(options: CloseOptions = {}): Promise<void> {
    const db = this.#db;
    if (!this.isOpen || db === undefined) return;
    this.isOpen = false;
    clearInterval(this.#timer);
    this.#timer = undefined;
    const handBack = async () => {
      try {
        await this.settled();
        await this.#refreshing?.catch(() => undefined);
        // What this replica held goes back at once: a replica still running takes it over at its
        // next refresh rather than after the lease.
        await this.#query(
          `UPDATE hookbot_inbox SET holder = NULL, lease_until = '-infinity' WHERE holder = $1`,
          [this.replicaId],
        );
        await this.#query('DELETE FROM hookbot_leases WHERE holder = $1', [this.replicaId]);
        await this.#query('UPDATE hookbot_replicas SET stopped_at = clock_timestamp() WHERE id = $1', [
          this.replicaId,
        ]);
      } catch (error) {
        // Unless the close stopped waiting for it (it said so itself).
        if (this.#db === db)
          this.options.log?.warn(
            { err: error },
            'could not hand back the leases at close (they expire by themselves)',
          );
      }
    };
    let ending = false;
    const finished = await within(
      (async () => {
        await handBack();
        // Closed for whatever still runs (a query now fails with `closed`), then the pool ends once
        // its connections are back.
        this.#db = undefined;
        ending = true;
        await db.pool.end().catch(() => undefined);
      })(),
      options.timeoutMs,
    );
    const held = this.model.inbox.size;
    this.#db = undefined;
    this.model = new HeldState(this.options, VIEW);
    if (finished) return;
    this.options.log?.warn(
      {
        afterMs: options.timeoutMs,
        statements: db.inFlight,
        accepts: this.#accepts.unwritten,
        processedMarks: this.#processed.unwritten,
        deliveries: held,
      },
      'the state database did not finish within the stop bound: its connections are destroyed, the writes in flight abandoned; the deliveries this replica held stay in the database and are taken over once their lease runs out',
    );
    db.destroy();
    // Ends once the destroyed connections are gone; nothing waits for it.
    if (!ending) void db.pool.end().catch(() => undefined);
  }

  stats(): StateStats {
    return {
      ...this.counts(),
      documentBytes: 0,
      journalBytes: 0,
      journalRecords: 0,
      commits: this.#accepts.batches + this.#processed.batches,
      fsyncs: 0,
      compactions: 0,
    };
  }

  // Inbox

  override async accept(delivery: Delivery): Promise<AcceptResult> {
    this.assertOpen();
    const now = this.options.now();
    const { entry, held, expiresAt } = this.prepareAccept(delivery, now);
    // Bounded: a real server waits 10 s for the answer. Past the bound the delivery is refused (503,
    // the server retries); if its batch commits later all the same, the row is one this replica
    // never took into its view, so it runs out and is taken over like any orphan (heartbeat).
    const outcome = await this.#accepts.submit(
      { key: entry.key, id: entry.id, json: held.json, bytes: held.bytes, expiresAt, now },
      {
        ms: this.#pg.acceptTimeoutMs,
        error: () =>
          new StateError(
            'unavailable',
            `${this.label}: the delivery was not committed within ${this.#pg.acceptTimeoutMs} ms (the database does not answer); try again`,
          ),
      },
    );
    if (outcome instanceof StateError) throw outcome;
    if (!outcome.duplicate) this.model.acceptHeld(held, now, expiresAt);
    return outcome;
  }

  override async markProcessed(id: string): Promise<void> {
    this.assertOpen();
    if (!this.model.inbox.has(id)) return this.settled();
    this.model.apply({ op: 'processed', id });
    try {
      await this.#processed.submit(id);
    } catch (error) {
      // Gone from this replica's view but still in the table, held (and renewed) by this replica:
      // the delete is tried again at each refresh, or the row would be renewed forever.
      this.#unfinishedDeletes.add(id);
      throw error;
    }
  }

  /** The database's count: attempts begun by every replica, this one included. */
  override async beginAttempt(id: string): Promise<number> {
    this.assertOpen();
    if (!this.model.inbox.has(id)) {
      await this.settled();
      return 0;
    }
    // In the view at once (a clean stop may give it back before the database answers).
    this.model.apply({ op: 'attempt', id });
    let begun = 0;
    await this.#serial(async () => {
      const counted = await this.#query<{ attempts: number }>(
        'UPDATE hookbot_inbox SET attempts = attempts + 1 WHERE id = $1 RETURNING attempts',
        [id],
      );
      begun = counted.rows[0]?.attempts ?? 0;
    });
    if (begun > 0 && this.model.inbox.has(id)) this.model.attempts.set(id, begun);
    return begun;
  }

  // Outbox

  override async putAction(input: ActionInput): Promise<{ created: boolean }> {
    this.assertOpen();
    if (this.getAction(input.id) !== undefined) {
      await this.settled();
      return { created: false };
    }
    const now = this.options.now();
    const { json, checked } = this.validated({
      op: 'put_action',
      action: {
        id: input.id,
        itemKey: input.itemKey,
        rule: input.rule,
        call: input.call,
        attempts: 0,
        nextTryAt: input.nextTryAt ?? now,
        createdAt: now,
      },
    });
    if (checked.op !== 'put_action') throw new Error('unreachable');
    const action = checked.action;
    const actionJson = JSON.stringify((JSON.parse(json) as { action: unknown }).action);
    let created = false;
    let stored: { action: string; parked_seq: string | null } | undefined;
    await this.#serial(async () => {
      const inserted = await this.#query(
        'INSERT INTO hookbot_outbox (id, action) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id',
        [action.id, actionJson],
      );
      created = inserted.rowCount === 1;
      if (!created) {
        const row = await this.#query<{ action: string; parked_seq: string | null }>(
          'SELECT action, parked_seq FROM hookbot_outbox WHERE id = $1',
          [action.id],
        );
        stored = row.rows[0];
      }
    });
    this.#touch('outbox', action.id);
    if (created) this.model.apply({ op: 'put_action', action });
    else if (stored !== undefined) {
      // Another replica planned it first: its record is the one in force.
      const theirs = outboxActionSchema.parse(JSON.parse(stored.action)) as OutboxAction;
      if (stored.parked_seq === null) this.model.outbox.set(theirs.id, theirs);
      else this.model.parked.set(theirs.id, theirs);
    }
    return { created };
  }

  // Decisions

  /** Read from the database (decision-history.ts), once the writes issued so far are done. */
  override async keptDecisions(itemKey: string): Promise<DecisionRecord[]> {
    this.assertOpen();
    await this.settled();
    return readKept((text, values) => this.#query<{ record: string }>(text, values), itemKey);
  }

  // Fleet

  async tryLease(name: string): Promise<boolean> {
    this.assertOpen();
    const taken = await this.#query(
      `INSERT INTO hookbot_leases (name, holder, until)
       VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
       WHERE hookbot_leases.until < clock_timestamp() OR hookbot_leases.holder = excluded.holder
       RETURNING name`,
      [name, this.replicaId, this.#pg.leaseMs],
    );
    if (taken.rowCount !== 1) return false;
    this.#heldLeases.add(name);
    this.#unreleasedLeases.delete(name);
    return true;
  }

  async releaseLease(name: string): Promise<void> {
    this.#heldLeases.delete(name);
    if (this.#db === undefined) return;
    try {
      await this.#query('DELETE FROM hookbot_leases WHERE name = $1 AND holder = $2', [name, this.replicaId]);
    } catch (error) {
      this.#unreleasedLeases.add(name);
      throw error;
    }
  }

  /**
   * Reloads from the database, by a reload that starts after this call: a caller that just took a
   * lease (a sweep, a merge train's driver) must see what the previous holder wrote before it let
   * go, which a reload already under way may have read too early. Callers that arrive during a
   * reload share the one that follows it.
   */
  refresh(): Promise<void> {
    this.assertOpen();
    if (this.#refreshing === undefined) return this.#refreshNow();
    this.#nextRefresh ??= this.#refreshing
      .catch(() => undefined)
      .then(() => {
        this.#nextRefresh = undefined;
        return this.isOpen ? this.#refreshNow() : undefined;
      });
    return this.#nextRefresh;
  }

  /** The timer's reload: one under way will do. */
  #refreshJoin(): Promise<void> {
    return this.#refreshing ?? this.#refreshNow();
  }

  #refreshNow(): Promise<void> {
    this.#refreshing ??= (async () => {
      try {
        await this.#heartbeat();
        if (this.#unfinishedDeletes.size > 0) {
          const ids = [...this.#unfinishedDeletes];
          await this.#query('DELETE FROM hookbot_inbox WHERE id = ANY($1::text[])', [ids]);
          for (const id of ids) this.#unfinishedDeletes.delete(id);
        }
        if (this.#unreleasedLeases.size > 0) {
          const names = [...this.#unreleasedLeases].filter((name) => !this.#heldLeases.has(name));
          await this.#query('DELETE FROM hookbot_leases WHERE holder = $1 AND name = ANY($2::text[])', [
            this.replicaId,
            names,
          ]);
          for (const name of names) this.#unreleasedLeases.delete(name);
        }
        await this.#prune();
        await this.#reload();
        await this.#loadParkedDeliveries();
        await this.#adopt();
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  onAdopted(listener: () => void): void {
    this.#adoptedListeners.push(listener);
  }

  /**
   * Ready means this replica's own work gets through, not only that a fresh connection answers: as
   * soon as any statement of this replica (the `SELECT 1` included) has waited longer than
   * `acceptTimeoutMs`, deliveries are being refused, and the check fails without waiting further.
   */
  async ping(): Promise<void> {
    const db = this.#db;
    if (db === undefined) throw new StateError('closed', `${this.label} is not open`);
    const bound = this.#pg.acceptTimeoutMs;
    const stalled = (): StateError | undefined => {
      const waited = db.oldestWaitMs();
      return waited > bound
        ? new StateError(
            'unavailable',
            `${this.label}: a statement has waited ${Math.round(waited)} ms for the database (the bound is ${bound} ms)`,
          )
        : undefined;
    };
    const now = stalled();
    if (now !== undefined) throw now;
    let watch: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        watch = setInterval(
          () => {
            const problem = stalled();
            if (problem !== undefined) reject(problem);
          },
          Math.min(250, bound),
        );
        this.#query('SELECT 1').then(() => resolve(), reject);
      });
    } finally {
      clearInterval(watch);
    }
  }

  async replicas(): Promise<ReplicaView[]> {
    const rows = await this.#query<{
      id: string;
      started_at: Date;
      seen_at: Date;
      stopped_at: Date | null;
      deliveries: string;
      leases: string[] | null;
    }>(
      `SELECT r.id, r.started_at, r.seen_at, r.stopped_at,
              (SELECT count(*) FROM hookbot_inbox i WHERE i.holder = r.id AND i.lease_until > clock_timestamp()) AS deliveries,
              (SELECT array_agg(l.name ORDER BY l.name) FROM hookbot_leases l WHERE l.holder = r.id AND l.until > clock_timestamp()) AS leases
       FROM hookbot_replicas r ORDER BY r.started_at`,
    );
    return rows.rows.map((row) => ({
      id: row.id,
      startedAt: row.started_at.getTime(),
      seenAt: row.seen_at.getTime(),
      ...(row.stopped_at ? { stoppedAt: row.stopped_at.getTime() } : {}),
      deliveries: Number(row.deliveries),
      leases: row.leases ?? [],
    }));
  }

  async fleetInbox(): Promise<number> {
    const rows = await this.#query<{ n: string }>('SELECT count(*) AS n FROM hookbot_inbox');
    return Number(rows.rows[0]?.n ?? 0);
  }

  // For HeldStateStore

  protected persist(json: string | readonly JsonPiece[]): Promise<void> {
    const text = typeof json === 'string' ? json : json.map((piece) => piece.toString()).join('');
    const mutation = JSON.parse(text) as Mutation;
    const write = this.#writeThrough(mutation);
    return write === undefined ? Promise.resolve() : this.#serial(write);
  }

  protected async settled(): Promise<void> {
    await Promise.allSettled([this.#chain, this.#accepts.idle(), this.#processed.idle()]);
  }

  // Internals

  #query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    if (this.#db === undefined) throw new StateError('closed', `${this.label} is not open`);
    return this.#db.query<R>(this.label, text, values);
  }

  /** Runs `write` after every write issued before it; a failure fails this write only. */
  #serial(write: () => Promise<void>): Promise<void> {
    const run = this.#chain.then(write);
    this.#chain = run.catch(() => undefined);
    return run;
  }

  #touch(collection: string, key: string): void {
    for (const touched of this.#touched) touched.add(`${collection}\0${key}`);
  }

  /** The statement that makes the database hold what `mutation` left in this replica's view. */
  #writeThrough(m: Mutation): (() => Promise<void>) | undefined {
    const q = async (text: string, values: unknown[]) => void (await this.#query(text, values));
    switch (m.op) {
      case 'accept':
      case 'processed':
      case 'attempt':
        return undefined; // their own paths (accept, markProcessed, beginAttempt)
      case 'attempt_released':
        return () => q('UPDATE hookbot_inbox SET attempts = greatest(attempts - 1, 0) WHERE id = $1', [m.id]);
      case 'park_delivery':
        // Out of the inbox and into the parked ones in one statement; the oldest past the bound go.
        return async () => {
          await q(
            `WITH gone AS (DELETE FROM hookbot_inbox WHERE id = $1 RETURNING id)
             INSERT INTO hookbot_parked_deliveries (id, record) SELECT id, $2 FROM gone
             ON CONFLICT (id) DO NOTHING`,
            [m.parked.id, JSON.stringify(m.parked)],
          );
          await q(
            `DELETE FROM hookbot_parked_deliveries WHERE seq <= (SELECT max(seq) FROM hookbot_parked_deliveries) - $1`,
            [this.options.maxParked],
          );
        };
      case 'put_action':
        this.#touch('outbox', m.action.id);
        return () =>
          q('INSERT INTO hookbot_outbox (id, action) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [
            m.action.id,
            JSON.stringify(m.action),
          ]);
      case 'complete_action':
        this.#touch('outbox', m.id);
        return () => q('DELETE FROM hookbot_outbox WHERE id = $1', [m.id]);
      case 'fail_action':
      case 'park_action': {
        this.#touch('outbox', m.id);
        const parked = this.model.parked.get(m.id);
        const action = parked ?? this.model.outbox.get(m.id);
        if (action === undefined) return undefined;
        const json = JSON.stringify(action);
        return () =>
          q(
            `UPDATE hookbot_outbox SET action = $2,
               parked_seq = CASE WHEN $3 THEN nextval('hookbot_parked_n') ELSE NULL END
             WHERE id = $1`,
            [m.id, json, parked !== undefined],
          );
      }
      case 'watch':
        this.#touch('watches', m.entry.itemKey);
        return () =>
          q(
            'INSERT INTO hookbot_watches (item_key, entry) VALUES ($1, $2) ON CONFLICT (item_key) DO UPDATE SET entry = excluded.entry',
            [m.entry.itemKey, JSON.stringify(m.entry)],
          );
      case 'unwatch':
        this.#touch('watches', m.itemKey);
        return () => q('DELETE FROM hookbot_watches WHERE item_key = $1', [m.itemKey]);
      case 'enqueue':
        this.#touch('queue', m.entry.itemKey);
        return () =>
          q(
            'INSERT INTO hookbot_queue (item_key, entry) VALUES ($1, $2) ON CONFLICT (item_key) DO UPDATE SET entry = excluded.entry',
            [m.entry.itemKey, JSON.stringify(m.entry)],
          );
      case 'dequeue':
        this.#touch('queue', m.itemKey);
        return () => q('DELETE FROM hookbot_queue WHERE item_key = $1', [m.itemKey]);
      case 'queue_control': {
        const key = queueKeyOf(m.control.project, m.control.targetBranch, m.control.queue);
        this.#touch('controls', key);
        if (m.control.paused === undefined)
          return () => q('DELETE FROM hookbot_queue_controls WHERE key = $1', [key]);
        return () =>
          q(
            'INSERT INTO hookbot_queue_controls (key, control) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET control = excluded.control',
            [key, JSON.stringify(m.control)],
          );
      }
      case 'next_run':
        this.#touch('nextRuns', JSON.stringify([m.sweep, m.project]));
        return () =>
          q(
            'INSERT INTO hookbot_next_runs (sweep, project, at) VALUES ($1, $2, $3) ON CONFLICT (sweep, project) DO UPDATE SET at = excluded.at',
            [m.sweep, m.project, m.at],
          );
      case 'last_success':
        this.#touch('lastSuccess', m.sweep);
        return () =>
          q(
            'INSERT INTO hookbot_last_success (sweep, at) VALUES ($1, $2) ON CONFLICT (sweep) DO UPDATE SET at = excluded.at',
            [m.sweep, m.at],
          );
      case 'pause_rule':
        this.#touch('paused', m.paused.rule);
        return () =>
          q(
            'INSERT INTO hookbot_paused_rules (rule, paused) VALUES ($1, $2) ON CONFLICT (rule) DO UPDATE SET paused = excluded.paused',
            [m.paused.rule, JSON.stringify(m.paused)],
          );
      case 'approve_rule':
        this.#touch('paused', m.rule);
        return () => q('DELETE FROM hookbot_paused_rules WHERE rule = $1', [m.rule]);
      case 'decision':
        this.#touch('decisions', m.record.itemKey);
        return () =>
          insertDecision(
            (text, values) => this.#query(text, values),
            m.record,
            JSON.stringify(m.record),
            this.options,
          );
    }
  }

  /**
   * One batch of accepts: one multi-row insert (each key and its inbox row in one statement, so both
   * or neither). A key already in force, whoever inserted it, is not inserted again and comes back
   * as a duplicate with the first copy's id.
   */
  async #writeAccepts(items: PendingAccept[]): Promise<AcceptOutcome[]> {
    const now = items.reduce((latest, item) => Math.max(latest, item.now), 0);
    // One round trip per batch: no look-up first. A key already in force is not inserted again by
    // the statement below (its de-dup row is kept, so its inbox row is not written), and comes back
    // as a duplicate with the first copy's id from the look-up that follows, which only runs when
    // some key was in force. Let the event loop apply the previous batch to the view first.
    await Promise.resolve();
    // The bounds are this replica's: what it holds in memory (its view of the inbox). Every accepted
    // row is held by the replica that accepted it, and a replica takes over orphaned rows only while
    // it has room, so the database holds at most the replicas' bounds together. Counting the whole
    // table instead cost a scan per batch, over every row deleted since the last vacuum: half the
    // throughput, measured (docs/state.md).
    let pending = this.model.inbox.size;
    let pendingBytes = this.model.inboxBytes;
    const outcomes: (AcceptOutcome | undefined)[] = [];
    /** Key -> the item of this batch that inserts it. */
    const inserting = new Map<string, PendingAccept>();
    for (const item of items) {
      const first = inserting.get(item.key)?.id;
      if (first !== undefined) {
        outcomes.push({ id: first, duplicate: true });
        continue;
      }
      if (pending >= this.options.maxPending) {
        outcomes.push(
          new StateError(
            'inbox_full',
            `the inbox holds ${pending} unprocessed deliveries (the limit, maxPending); refusing more until some are processed`,
          ),
        );
        continue;
      }
      if (pendingBytes + item.bytes > this.options.maxPendingBytes) {
        outcomes.push(
          new StateError(
            'inbox_full',
            `the inbox holds ${pendingBytes} bytes of unprocessed deliveries and this one (${item.bytes} bytes) would pass the limit of ${this.options.maxPendingBytes} (maxPendingBytes); refusing more until some are processed`,
          ),
        );
        continue;
      }
      pending++;
      pendingBytes += item.bytes;
      inserting.set(item.key, item);
      outcomes.push(undefined);
    }
    const fresh = [...inserting.values()];
    if (fresh.length > 0) {
      const inserted = await this.#query<{ id: string }>(
        `WITH input AS (
           SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::int[])
             WITH ORDINALITY AS t(key, id, expires_at, entry, bytes, ord)
         ), keyed AS (
           INSERT INTO hookbot_dedup (key, delivery_id, expires_at)
           SELECT key, id, expires_at FROM input ORDER BY ord
           ON CONFLICT (key) DO UPDATE
             SET delivery_id = excluded.delivery_id, expires_at = excluded.expires_at, n = excluded.n
             WHERE hookbot_dedup.expires_at <= $6
           RETURNING delivery_id
         )
         INSERT INTO hookbot_inbox (id, entry, bytes, holder, lease_until)
         SELECT input.id, input.entry, input.bytes, $7, clock_timestamp() + $8 * interval '1 millisecond'
         FROM input JOIN keyed ON keyed.delivery_id = input.id ORDER BY input.ord
         RETURNING id`,
        [
          fresh.map((item) => item.key),
          fresh.map((item) => item.id),
          fresh.map((item) => item.expiresAt),
          fresh.map((item) => item.json),
          fresh.map((item) => item.bytes),
          now,
          this.replicaId,
          this.#pg.leaseMs,
        ],
      );
      const stored = new Set(inserted.rows.map((r) => r.id));
      const lost = fresh.filter((item) => !stored.has(item.id));
      // Keys another replica inserted after the first look: theirs is the first copy.
      const winners = new Map<string, string>();
      if (lost.length > 0) {
        const found = await this.#query<{ key: string; delivery_id: string }>(
          'SELECT key, delivery_id FROM hookbot_dedup WHERE key = ANY($1::text[])',
          [lost.map((item) => item.key)],
        );
        for (const r of found.rows) winners.set(r.key, r.delivery_id);
      }
      this.#dedupEstimate += stored.size;
      if (this.#dedupEstimate > this.options.maxDedupKeys) await this.#pruneDedup();
      items.forEach((item, i) => {
        if (outcomes[i] !== undefined) return;
        if (stored.has(item.id)) outcomes[i] = { id: item.id, duplicate: false };
        else outcomes[i] = { id: winners.get(item.key) ?? item.id, duplicate: true };
      });
      // Duplicates of a key this batch inserted but lost: point them at the winner too.
      items.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome instanceof StateError || outcome === undefined || !outcome.duplicate) return;
        const winner = winners.get(item.key);
        if (winner !== undefined) outcomes[i] = { id: winner, duplicate: true };
      });
    }
    return outcomes as AcceptOutcome[];
  }

  async #pruneDedup(): Promise<void> {
    const removed = await this.#query(
      'DELETE FROM hookbot_dedup WHERE key IN (SELECT key FROM hookbot_dedup ORDER BY n DESC OFFSET $1)',
      [this.options.maxDedupKeys],
    );
    this.#dedupEstimate = Math.max(0, this.#dedupEstimate - (removed.rowCount ?? 0));
    if (this.#dedupEstimate > this.options.maxDedupKeys) this.#dedupEstimate = this.options.maxDedupKeys;
  }

  /** The bounds, enforced in the database (each replica's view enforces them too). */
  async #prune(): Promise<void> {
    const o = this.options;
    await this.#query('DELETE FROM hookbot_dedup WHERE expires_at <= $1', [o.now()]);
    const counted = await this.#query<{ n: string }>('SELECT count(*) AS n FROM hookbot_dedup');
    this.#dedupEstimate = Number(counted.rows[0]?.n ?? 0);
    if (this.#dedupEstimate > o.maxDedupKeys) await this.#pruneDedup();
    await this.#query(
      `DELETE FROM hookbot_outbox WHERE id IN (SELECT id FROM hookbot_outbox WHERE parked_seq IS NOT NULL ORDER BY parked_seq DESC OFFSET $1)`,
      [o.maxParked],
    );
    await this.#query(
      `DELETE FROM hookbot_latest_decisions WHERE item_key IN (SELECT item_key FROM hookbot_latest_decisions ORDER BY n DESC OFFSET $1)`,
      [o.decisionItems],
    );
    await this.#query(
      `DELETE FROM hookbot_recent_decisions WHERE n IN (SELECT n FROM hookbot_recent_decisions ORDER BY n DESC OFFSET $1)`,
      [o.recentDecisions],
    );
    await pruneDecisionHistory((text, values) => this.#query(text, values), o);
  }

  async #heartbeat(): Promise<void> {
    await this.#query(
      `INSERT INTO hookbot_replicas (id, started_at, seen_at) VALUES ($1, clock_timestamp(), clock_timestamp())
       ON CONFLICT (id) DO UPDATE SET seen_at = clock_timestamp(), stopped_at = NULL`,
      [this.replicaId],
    );
    const extend = [this.replicaId, this.#pg.leaseMs];
    // Only the deliveries this replica knows it holds (its view, and those whose delete is pending).
    // A row inserted by an accept whose answer was lost (the connection dropped after the commit)
    // names this replica as its holder too, but nothing here will ever process it: it must run out
    // and be taken over, or it would be renewed, unprocessed, for as long as this replica lives
    // (found by the replicas scenario: two deliveries answered 202 as duplicates on another
    // replica were never processed).
    const viewed = [...this.model.inbox.keys()];
    const held = [...viewed, ...this.#unfinishedDeletes];
    if (held.length > 0) {
      const renewed = await this.#query<{ id: string }>(
        `UPDATE hookbot_inbox SET lease_until = clock_timestamp() + $2 * interval '1 millisecond'
         WHERE holder = $1 AND id = ANY($3::text[]) RETURNING id`,
        [...extend, held],
      );
      if (renewed.rows.length < held.length) this.#releaseLost(viewed, renewed.rows);
    }
    if (this.#heldLeases.size > 0)
      await this.#query(
        `UPDATE hookbot_leases SET until = clock_timestamp() + $2 * interval '1 millisecond'
         WHERE holder = $1 AND name = ANY($3::text[])`,
        [...extend, [...this.#heldLeases]],
      );
  }

  /**
   * Deliveries of this view the renewal did not find held by this replica: processed meanwhile (gone
   * already), or their lease ran out before this renewal (a pause longer than the lease: a stalled
   * process, the database away) and another replica took them over. Those leave this view: the other
   * replica processes them, and both doing so would act twice (found by the replicas test on a busy
   * machine: two replicas each holding the same three deliveries).
   */
  #releaseLost(viewed: readonly string[], renewed: readonly { id: string }[]): void {
    const kept = new Set(renewed.map((row) => row.id));
    const lost = viewed.filter((id) => !kept.has(id) && this.model.inbox.has(id));
    for (const id of lost) this.model.release(id);
    if (lost.length > 0)
      this.options.log?.warn(
        { deliveries: lost.length },
        'deliveries whose lease ran out before it was renewed were taken over by another replica; left to it',
      );
  }

  /** The deliveries parked by the fleet (the status page's), oldest parked first. */
  async #loadParkedDeliveries(): Promise<void> {
    const rows = await this.#query<{ record: string }>(
      'SELECT record FROM (SELECT record, seq FROM hookbot_parked_deliveries ORDER BY seq DESC LIMIT $1) t ORDER BY seq',
      [this.options.maxParked],
    );
    const parked = this.model.parkedDeliveries;
    parked.clear();
    for (const row of rows.rows) {
      const record = JSON.parse(row.record) as ParkedDelivery;
      parked.set(record.id, record);
    }
  }

  /** Takes over deliveries whose lease ran out (their replica died or closed), oldest first. */
  async #adopt(): Promise<void> {
    if (!this.#pg.takeDeliveries) return;
    const room = Math.max(0, this.options.maxPending - this.model.inbox.size);
    if (room === 0) return;
    const taken = await this.#query<{
      id: string;
      entry: string;
      bytes: number;
      seq: string;
      attempts: number;
    }>(
      `UPDATE hookbot_inbox SET holder = $1, lease_until = clock_timestamp() + $2 * interval '1 millisecond'
       WHERE id IN (
         SELECT id FROM hookbot_inbox WHERE lease_until < clock_timestamp()
         ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED
       )
       RETURNING id, entry, bytes, seq, attempts`,
      [this.replicaId, this.#pg.leaseMs, Math.min(room, 1_000)],
    );
    if (taken.rowCount === 0) return;
    const rows = taken.rows.sort((a, b) => Number(a.seq) - Number(b.seq));
    for (const r of rows) {
      const parsed = inboxEntrySchema.safeParse(JSON.parse(r.entry));
      if (!parsed.success) {
        this.options.log?.warn({ delivery: r.id }, 'an inbox row is not an entry hookbot writes; left aside');
        continue;
      }
      this.model.adopt(HeldEntry.fromJson(parsed.data, r.entry, r.bytes));
      if (r.attempts > 0) this.model.attempts.set(r.id, r.attempts);
    }
    for (const listener of this.#adoptedListeners) listener();
  }

  /**
   * Reloads the merge queues' tables alone (Fleet.reloadQueue): what this replica wrote before is
   * durable first (its write chain), keys written during the reload keep this replica's value.
   */
  async reloadQueue(): Promise<void> {
    this.assertOpen();
    const touched = new Set<string>();
    this.#touched.add(touched);
    try {
      await this.#chain;
      const [queue, controls] = await Promise.all([
        this.#query<{ entry: string }>('SELECT entry FROM hookbot_queue ORDER BY seq'),
        this.#query<{ control: string }>('SELECT control FROM hookbot_queue_controls ORDER BY seq'),
      ]);
      const loaded = new Map<string, QueueEntry>();
      for (const row of queue.rows) {
        const entry = JSON.parse(row.entry) as QueueEntry;
        loaded.set(entry.itemKey, entry);
      }
      const loadedControls = new Map<string, QueueControl>();
      for (const row of controls.rows) {
        const control = JSON.parse(row.control) as QueueControl;
        loadedControls.set(queueKeyOf(control.project, control.targetBranch, control.queue), control);
      }
      mergeLoaded('queue', this.model.queue, loaded, touched);
      mergeLoaded('controls', this.model.controls, loadedControls, touched);
    } finally {
      this.#touched.delete(touched);
    }
  }

  /** Reloads what the fleet shares; keys written during the reload keep this replica's value. */
  async #reload(): Promise<void> {
    const touched = new Set<string>();
    this.#touched.add(touched);
    try {
      // What this replica wrote before the reload is in the database first: a reload that read
      // before such a write committed would take it out of the view until the next one.
      await this.#chain;
      const [outbox, watches, nextRuns, lastSuccess, paused, latest, recent, queue, controls] =
        await Promise.all([
          this.#query<{ action: string; parked_seq: string | null }>(
            'SELECT action, parked_seq FROM hookbot_outbox ORDER BY seq',
          ),
          this.#query<{ entry: string }>('SELECT entry FROM hookbot_watches ORDER BY seq'),
          this.#query<{ sweep: string; project: string; at: string }>(
            'SELECT sweep, project, at FROM hookbot_next_runs',
          ),
          this.#query<{ sweep: string; at: string }>('SELECT sweep, at FROM hookbot_last_success'),
          this.#query<{ paused: string }>('SELECT paused FROM hookbot_paused_rules ORDER BY seq'),
          this.#query<{ record: string }>(
            'SELECT record FROM (SELECT record, n FROM hookbot_latest_decisions ORDER BY n DESC LIMIT $1) t ORDER BY n',
            [this.options.decisionItems],
          ),
          this.#query<{ record: string }>(
            'SELECT record FROM (SELECT record, n FROM hookbot_recent_decisions ORDER BY n DESC LIMIT $1) t ORDER BY n',
            [this.options.recentDecisions],
          ),
          this.#query<{ entry: string }>('SELECT entry FROM hookbot_queue ORDER BY seq'),
          this.#query<{ control: string }>('SELECT control FROM hookbot_queue_controls ORDER BY seq'),
        ]);
      const actions = outbox.rows.map((r) => ({
        action: JSON.parse(r.action) as OutboxAction,
        parkedSeq: r.parked_seq === null ? undefined : Number(r.parked_seq),
      }));
      const loaded = HeldState.fromDocument(
        {
          version: DOCUMENT_VERSION,
          seq: 0,
          inbox: [],
          dedup: [],
          outbox: actions.filter((a) => a.parkedSeq === undefined).map((a) => a.action),
          parked: actions
            .filter((a) => a.parkedSeq !== undefined)
            .sort((a, b) => (a.parkedSeq ?? 0) - (b.parkedSeq ?? 0))
            .map((a) => a.action),
          watches: watches.rows.map((r) => JSON.parse(r.entry) as WatchEntry),
          queue: queue.rows.map((r) => JSON.parse(r.entry) as QueueEntry),
          schedules: {
            nextRuns: nextRuns.rows.map((r) => ({ sweep: r.sweep, project: r.project, at: Number(r.at) })),
            lastSuccess: lastSuccess.rows.map((r) => ({ sweep: r.sweep, at: Number(r.at) })),
          },
          pausedRules: paused.rows.map((r) => JSON.parse(r.paused) as PausedRule),
          decisions: {
            latest: latest.rows.map((r) => JSON.parse(r.record) as DecisionRecord),
            recent: recent.rows.map((r) => JSON.parse(r.record) as DecisionRecord),
          },
          dedupFiles: [],
          queueControls: controls.rows.map((r) => JSON.parse(r.control) as QueueControl),
        },
        this.options,
        [],
        [],
        VIEW,
      );
      this.#install(loaded, touched);
    } finally {
      this.#touched.delete(touched);
    }
  }

  /** Takes the shared collections of `loaded` into the view, except the keys written meanwhile. */
  #install(loaded: HeldState, touched: Set<string>): void {
    const view = this.model;
    const merge = <V>(collection: string, mine: Map<string, V>, theirs: Map<string, V>) =>
      mergeLoaded(collection, mine, theirs, touched);
    // The outbox and the parked actions are one collection: an id is in one or the other.
    const touchedActions = [...touched].filter((t) => t.startsWith('outbox\0')).map((t) => t.slice(7));
    const mineOutbox = new Map(view.outbox);
    const mineParked = new Map(view.parked);
    view.outbox.clear();
    view.parked.clear();
    for (const [id, action] of loaded.outbox) if (!touchedActions.includes(id)) view.outbox.set(id, action);
    for (const [id, action] of loaded.parked) if (!touchedActions.includes(id)) view.parked.set(id, action);
    for (const id of touchedActions) {
      const active = mineOutbox.get(id);
      const parked = mineParked.get(id);
      if (active !== undefined) view.outbox.set(id, active);
      if (parked !== undefined) view.parked.set(id, parked);
    }
    merge('watches', view.watches, loaded.watches);
    merge('queue', view.queue, loaded.queue);
    merge('controls', view.controls, loaded.controls);
    merge('nextRuns', view.nextRuns, loaded.nextRuns);
    merge('lastSuccess', view.lastSuccess, loaded.lastSuccess);
    merge('paused', view.paused, loaded.paused);
    merge('decisions', view.latest, loaded.latest);
    if (![...touched].some((t) => t.startsWith('decisions\0')))
      view.recent.splice(0, view.recent.length, ...loaded.recent);
  }

  async #refreshQuietly(): Promise<void> {
    if (!this.isOpen) return;
    try {
      await this.#refreshJoin();
      if (this.#refreshFailures > 0)
        this.options.log?.info({ failures: this.#refreshFailures }, 'the state database answers again');
      this.#refreshFailures = 0;
    } catch (error) {
      // One line when it starts failing, then one a minute: the database may be down a while.
      if (this.#refreshFailures % Math.max(1, Math.round(60_000 / this.#pg.refreshMs)) === 0)
        this.options.log?.warn({ err: error }, 'could not refresh from the state database; retrying');
      this.#refreshFailures++;
    }
  }
}
