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
 *
 * This file holds the store itself (open, close, the inbox, the outbox, the leases, the refresh);
 * its parts are in the files beside it: accept-batch.ts (the group commit of accepts),
 * write-through.ts (a mutation's statement), shared-view.ts (the reload), fleet-upkeep.ts (heartbeat,
 * bounds, parked deliveries, takeover), connection.ts (the pool and the readiness check).
 */
import type pg from 'pg';
import { StateError } from '../errors.ts';
import type { JsonPiece } from '../held-entry.ts';
import { HeldState } from '../held-state.ts';
import { HeldStateStore } from '../held-state-store.ts';
import { outboxActionSchema, type Mutation } from '../mutations.ts';
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
  ReplicaView,
  StateStats,
  StateStore,
} from '../store.ts';
import { writeAccepts, type AcceptOutcome, type PendingAccept } from './accept-batch.ts';
import { BatchWriter } from './batch-writer.ts';
import { answersWithin, Connections, settlesWithin as within } from './connection.ts';
import { readKept } from './decision-history.ts';
import { adopt, heartbeat, loadParkedDeliveries, prune, readReplicas } from './fleet-upkeep.ts';
import { migrateSchema } from './schema-migrations.ts';
import { installShared, readShared, reloadQueueInto, VIEW } from './shared-view.ts';
import type { DedupEstimate, StoreAccess } from './store-access.ts';
import { writeThrough } from './write-through.ts';

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
  readonly #dedup: DedupEstimate = { keys: 0 };
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
  /** What the parts in the other files of this folder reach of the store (store-access.ts). */
  readonly #access: StoreAccess;

  constructor(options: ResolvedPostgresStoreOptions) {
    super(options, VIEW);
    this.#pg = options;
    this.replicaId = options.replicaId;
    this.label = `state database ${describeDatabase(options.url)}`;
    const view = () => this.model;
    this.#access = {
      query: (text, values) => this.#query(text, values),
      get model() {
        return view();
      },
      options,
      replicaId: options.replicaId,
    };
    // Two batches of accepts in flight: one gathers and is sent while the other waits for its commit.
    this.#accepts = new BatchWriter(
      (items) => writeAccepts(this.#access, this.#dedup, items),
      options.maxBatch,
      2,
    );
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
      this.#dedup.keys = Number(counted.rows[0]?.n ?? 0);
      this.isOpen = true;
      await heartbeat(this.#access, this.#heldLeases, this.#unfinishedDeletes);
      await this.#reload();
      await loadParkedDeliveries(this.#access);
      await adopt(this.#access, this.#adoptedListeners);
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
    await prune(this.#access, this.#dedup);
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
        await heartbeat(this.#access, this.#heldLeases, this.#unfinishedDeletes);
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
        await prune(this.#access, this.#dedup);
        await this.#reload();
        await loadParkedDeliveries(this.#access);
        await adopt(this.#access, this.#adoptedListeners);
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
    await answersWithin(db, this.label, this.#pg.acceptTimeoutMs);
  }

  replicas(): Promise<ReplicaView[]> {
    return readReplicas(this.#access);
  }

  async fleetInbox(): Promise<number> {
    const rows = await this.#query<{ n: string }>('SELECT count(*) AS n FROM hookbot_inbox');
    return Number(rows.rows[0]?.n ?? 0);
  }

  // For HeldStateStore

  protected persist(json: string | readonly JsonPiece[]): Promise<void> {
    const text = typeof json === 'string' ? json : json.map((piece) => piece.toString()).join('');
    const mutation = JSON.parse(text) as Mutation;
    const write = writeThrough(this.#access, (collection, key) => this.#touch(collection, key), mutation);
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

  /** Reloads what the fleet shares; keys written during the reload keep this replica's value. */
  async #reload(): Promise<void> {
    const touched = new Set<string>();
    this.#touched.add(touched);
    try {
      // What this replica wrote before the reload is in the database first: a reload that read
      // before such a write committed would take it out of the view until the next one.
      await this.#chain;
      const loaded = await readShared(this.#access);
      installShared(this.model, loaded, touched);
    } finally {
      this.#touched.delete(touched);
    }
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
      await reloadQueueInto(this.#access, this.model, touched);
    } finally {
      this.#touched.delete(touched);
    }
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
