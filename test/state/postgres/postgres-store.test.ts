/**
 * What the PostgreSQL store promises beyond the contract (test/state/contract.test.ts runs that
 * against it too): several replicas on one database, leases that expire, the schema's versions,
 * and a database that goes away and comes back. Real PostgreSQL, a schema per test.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPostgresStore,
  PG_SCHEMA_VERSION,
  readDecisions,
  StateError,
  type Delivery,
} from '../../../src/state/index.ts';
import type { PostgresStoreOptions } from '../../../src/state/options.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { adminQuery, postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../../helpers/postgres.ts';

const schema = useTestSchemas();
/** Polls until `probe` is true. */
const until = (probe: () => boolean | Promise<boolean>, what: string) =>
  waitFor(async () => ((await probe()) ? true : undefined), 20_000, what);
type Store = ReturnType<typeof createPostgresStore>;
let opened: Store[] = [];

afterEach(async () => {
  for (const store of opened) await store.close();
  opened = [];
});

async function replica(
  name: string,
  shared: string,
  options: Partial<PostgresStoreOptions> = {},
): Promise<Store> {
  const store = createPostgresStore({ url: TEST_DATABASE_URL, schema: shared, replicaId: name, ...options });
  await store.open();
  opened.push(store);
  return store;
}

function delivery(key: string): Delivery {
  return { key, kind: 'Issue Hook', receivedAt: 1, headers: {}, body: { object_kind: 'issue', key } };
}

describe.skipIf(!postgresAvailable)('PostgreSQL store, several replicas', () => {
  it('a delivery sent to two replicas at once is accepted once, and both answer with its id', async () => {
    const shared = schema();
    const a = await replica('a', shared);
    const b = await replica('b', shared);
    for (let round = 0; round < 20; round++) {
      const key = `k${round}`;
      const [ra, rb] = await Promise.all([a.accept(delivery(key)), b.accept(delivery(key))]);
      expect([ra.duplicate, rb.duplicate].sort()).toEqual([false, true]);
      expect(ra.id).toBe(rb.id);
    }
    expect(await a.fleetInbox()).toBe(20);
  });

  it('a refresh asked for while one is under way reads the database again after it: what another replica wrote meanwhile is seen', async () => {
    const shared = schema();
    const a = await replica('a', shared);
    const b = await replica('b', shared);
    // The reload under way is held after it has read the next runs, before its parked deliveries: a
    // lock on that table, taken by a connection of the test's own.
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    try {
      await admin.query('BEGIN');
      await admin.query(`LOCK TABLE "${shared}".hookbot_parked_deliveries IN ACCESS EXCLUSIVE MODE`);
      const first = a.refresh();
      await until(async () => {
        const waiting = await adminQuery(
          `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%hookbot_parked_deliveries%'`,
        );
        return waiting.rowCount! > 0;
      }, 'the first refresh waits on the lock, its next runs read');
      await b.setNextRun('merge_queue', undefined, 4242);
      // Asked now (a replica that just took a lease): it must see b's write.
      const second = a.refresh();
      await admin.query('COMMIT');
      await first;
      await second;
      expect(a.nextRun('merge_queue')).toBe(4242);
    } finally {
      await admin.query('ROLLBACK').catch(() => undefined);
      await admin.end();
    }
  });

  it('an action planned on two replicas at once is created by one of them only', async () => {
    const shared = schema();
    const a = await replica('a', shared);
    const b = await replica('b', shared);
    const action = { id: 'act-1', itemKey: 'acme/web#1', rule: 'r', call: { op: 'comment' } };
    const results = await Promise.all([a.putAction(action), b.putAction(action)]);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    // The one told "not created" holds the stored action in its view.
    expect(a.getAction('act-1')).toMatchObject({ id: 'act-1' });
    expect(b.getAction('act-1')).toMatchObject({ id: 'act-1' });
  });

  it('deliveries of a replica that stops renewing its lease are taken over by another, once', async () => {
    const shared = schema();
    // The survivors first, listening: opened after the dead replica's leases ran out (200 ms, a busy
    // machine), one would take the deliveries over during its open, before anyone listens.
    const b = await replica('b', shared, { leaseMs: 200, refreshMs: 3_600_000 });
    const c = await replica('c', shared, { leaseMs: 200, refreshMs: 3_600_000 });
    let adopted = 0;
    b.onAdopted(() => adopted++);
    // "Killed": never refreshes, so its leases run out (an hour between refreshes).
    const dead = await replica('dead', shared, { leaseMs: 200, refreshMs: 3_600_000 });
    const accepted = await Promise.all(['x', 'y', 'z'].map((key) => dead.accept(delivery(key))));
    await until(async () => {
      await Promise.all([b.refresh(), c.refresh()]);
      return b.pending().length + c.pending().length === 3;
    }, 'the orphaned deliveries taken over');
    const taken = [...b.pending(), ...c.pending()].map((entry) => entry.id).sort();
    expect(taken).toEqual(accepted.map((r) => r.id).sort());
    expect(b.pending().length === 0 || adopted > 0).toBe(true);
    // Processed by whoever took it: gone for the fleet.
    for (const store of [b, c]) for (const entry of store.pending()) await store.markProcessed(entry.id);
    expect(await b.fleetInbox()).toBe(0);
    const fleet = await b.replicas();
    expect(fleet.map((r) => r.id).sort()).toEqual(['b', 'c', 'dead']);
  });

  it('a replica whose delivery leases ran out before it renewed them lets go of what another took over', async () => {
    const shared = schema();
    // A replica that stalls longer than its lease (no refresh between), then comes back.
    const slow = await replica('slow', shared, { leaseMs: 200, refreshMs: 3_600_000 });
    const accepted = await Promise.all(['p', 'q'].map((key) => slow.accept(delivery(key))));
    const other = await replica('other', shared, { leaseMs: 60_000, refreshMs: 3_600_000 });
    await until(async () => {
      await other.refresh();
      return other.pending().length === 2;
    }, 'the deliveries taken over');
    expect(slow.pending()).toHaveLength(2); // its view is stale until it renews
    await slow.refresh();
    // Held by one replica only: the one that took them over.
    expect(slow.pending()).toEqual([]);
    expect(
      other
        .pending()
        .map((entry) => entry.id)
        .sort(),
    ).toEqual(accepted.map((r) => r.id).sort());
    // What it still holds, it keeps.
    const own = await slow.accept(delivery('r'));
    await slow.refresh();
    expect(slow.pending().map((entry) => entry.id)).toEqual([own.id]);
  });

  it('a lease is held by one replica at a time, and another gets it once it expired or was released', async () => {
    const shared = schema();
    // Held: a lease far longer than a busy machine's pause between two calls, so that "held" is
    // never "expired" by accident (a 300 ms lease ran out between two calls on a loaded machine).
    const a = await replica('a', shared, { leaseMs: 600_000, refreshMs: 3_600_000 });
    const b = await replica('b', shared, { leaseMs: 600_000, refreshMs: 3_600_000 });
    expect(await a.tryLease('sweep:merge-watch')).toBe(true);
    expect(await b.tryLease('sweep:merge-watch')).toBe(false);
    expect(await a.tryLease('sweep:merge-watch')).toBe(true); // the holder keeps it
    await a.releaseLease('sweep:merge-watch');
    expect(await b.tryLease('sweep:merge-watch')).toBe(true);
    expect(await a.tryLease('sweep:merge-watch')).toBe(false);
    // Expired: replicas with a short lease; c stops renewing (no refresh): d gets it once it ran out.
    const c = await replica('c', shared, { leaseMs: 300, refreshMs: 3_600_000 });
    const d = await replica('d', shared, { leaseMs: 300, refreshMs: 3_600_000 });
    expect(await c.tryLease('sweep:rules')).toBe(true);
    await until(() => d.tryLease('sweep:rules'), 'the expired lease taken over');
  });

  it('what one replica writes, another sees after its refresh', async () => {
    const shared = schema();
    const a = await replica('a', shared);
    const b = await replica('b', shared);
    await a.recordDecision('acme/web#1', { verdict: 'from a' });
    await a.watch({
      itemKey: 'acme/web!1',
      project: 'acme/web',
      mrId: 1,
      headSha: 'abc',
      rule: 'm',
      required: [],
      since: 1,
    });
    await a.setNextRun('merge-watch', undefined, 1234);
    await a.pauseRule('noisy', 'too many actions');
    await b.refresh();
    expect(b.latestDecision('acme/web#1')?.decision).toEqual({ verdict: 'from a' });
    expect(b.watched().map((w) => w.itemKey)).toEqual(['acme/web!1']);
    expect(b.nextRun('merge-watch')).toBe(1234);
    expect(b.pausedRules().map((p) => p.rule)).toEqual(['noisy']);
    await b.approveRule('noisy');
    await a.refresh();
    expect(a.pausedRules()).toEqual([]);
  });

  it("a merge queue entry one replica writes, with the head's progress, another sees and can take out", async () => {
    const shared = schema();
    const a = await replica('a', shared);
    const b = await replica('b', shared);
    const entry = {
      itemKey: 'merge_request:3:70',
      project: 'acme/web',
      projectId: 3,
      mrId: 70,
      iid: 7,
      targetBranch: 'master',
      queue: 'default',
      rule: 'q',
      priority: 0,
      enqueuedAt: 5,
      required: ['ci/test'],
      statusTimeoutMs: 60_000,
      maxUpdates: 3,
      pinnedSha: 'a'.repeat(40),
      targetSha: 'b'.repeat(40),
      testingSince: 6,
      updates: 1,
    };
    await a.enqueue(entry);
    await b.refresh();
    expect(b.queued()).toEqual([entry]);
    await b.dequeue(entry.itemKey);
    await a.refresh();
    expect(a.queued()).toEqual([]);
  });

  it("an operator's pause of a queue one replica writes, another sees at its refresh, and its lifting too", async () => {
    const shared = schema();
    const a = await replica('a', shared);
    const b = await replica('b', shared);
    const control = {
      project: 'acme/web',
      projectId: 3,
      targetBranch: 'master',
      queue: 'default',
      paused: { by: 'alice', reason: 'release freeze', at: 5 },
    };
    await a.setQueueControl(control);
    await b.refresh();
    expect(b.queueControls()).toEqual([control]);
    await b.setQueueControl({ project: 'Acme/Web', projectId: 3, targetBranch: 'master', queue: 'default' });
    await a.refresh();
    expect(a.queueControls()).toEqual([]);
  });
});

describe.skipIf(!postgresAvailable)('PostgreSQL store, schema versions', () => {
  it('creates the schema on first open and records its version', async () => {
    const shared = schema();
    await replica('a', shared);
    const row = await adminQuery(`SELECT schema_version FROM "${shared}".hookbot_meta`);
    expect(row.rows[0]).toEqual({ schema_version: PG_SCHEMA_VERSION });
  });

  it('refuses a database whose schema is newer than this build, saying what to do, and changes nothing', async () => {
    const shared = schema();
    const first = await replica('a', shared);
    await first.accept(delivery('kept'));
    await first.close();
    opened = [];
    await adminQuery(`UPDATE "${shared}".hookbot_meta SET schema_version = $1`, [PG_SCHEMA_VERSION + 1]);
    const store = createPostgresStore({ url: TEST_DATABASE_URL, schema: shared, replicaId: 'old' });
    const error: unknown = await store.open().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StateError);
    expect((error as StateError).code).toBe('newer_version');
    expect((error as Error).message).toContain(`schema version ${PG_SCHEMA_VERSION + 1}`);
    expect((error as Error).message).toContain('Run the newer hookbot');
    const rows = await adminQuery(`SELECT count(*)::int AS n FROM "${shared}".hookbot_inbox`);
    expect(rows.rows[0]).toEqual({ n: 1 });
  });

  it('a database of schema version 3 opens at version 4 and keeps its latest decisions, which start their history', async () => {
    const shared = schema();
    // A version-3 database: as version 4 without the history table, its decisions as version 3
    // wrote them (no id, nothing about whether they acted).
    const first = await replica('a', shared);
    await first.close();
    opened = [];
    await adminQuery(`DROP TABLE "${shared}".hookbot_decision_history`);
    await adminQuery(`DROP TABLE "${shared}".hookbot_queue_controls`);
    await adminQuery(`UPDATE "${shared}".hookbot_meta SET schema_version = 3`);
    const old = (itemKey: string, verdict: string, at: number) =>
      JSON.stringify({ itemKey, at, decision: { verdict } });
    for (const [itemKey, verdict, at] of [
      ['mr:1', 'merged', 10],
      ['issue:2', 'labelled', 20],
    ] as const) {
      await adminQuery(
        `INSERT INTO "${shared}".hookbot_latest_decisions (item_key, record) VALUES ($1, $2)`,
        [itemKey, old(itemKey, verdict, at)],
      );
      await adminQuery(`INSERT INTO "${shared}".hookbot_recent_decisions (record) VALUES ($1)`, [
        old(itemKey, verdict, at),
      ]);
    }
    // Explain reads a version-3 database as it is: the latest decisions, no history.
    const before = await readDecisions(TEST_DATABASE_URL, shared, () => 'mr:1');
    expect(before.latest.map((d) => d.decision)).toEqual([{ verdict: 'merged' }, { verdict: 'labelled' }]);
    expect(before.kept).toEqual([]);

    const store = await replica('b', shared);
    const row = await adminQuery(`SELECT schema_version FROM "${shared}".hookbot_meta`);
    expect(row.rows[0]).toEqual({ schema_version: PG_SCHEMA_VERSION });
    expect(store.latestDecision('mr:1')).toEqual({
      itemKey: 'mr:1',
      at: 10,
      decision: { verdict: 'merged' },
    });
    expect(await store.keptDecisions('mr:1')).toEqual([
      { itemKey: 'mr:1', at: 10, decision: { verdict: 'merged' } },
    ]);
    expect((await store.keptDecisions('issue:2')).map((d) => d.decision)).toEqual([{ verdict: 'labelled' }]);
    // New decisions go on from there.
    await store.recordDecision('mr:1', { verdict: 'echo' });
    expect((await store.keptDecisions('mr:1')).map((d) => d.decision)).toEqual([
      { verdict: 'echo' },
      { verdict: 'merged' },
    ]);
    const after = await readDecisions(TEST_DATABASE_URL, shared, () => 'mr:1');
    expect(after.kept.map((d) => d.decision)).toEqual([{ verdict: 'echo' }, { verdict: 'merged' }]);
  });

  it('a database of schema version 4 opens at version 5 with its queue as it was and no queue paused', async () => {
    const shared = schema();
    const first = await replica('a', shared);
    const entry = {
      itemKey: 'merge_request:3:70',
      project: 'acme/web',
      projectId: 3,
      mrId: 70,
      iid: 7,
      targetBranch: 'master',
      queue: 'default',
      rule: 'q',
      priority: 0,
      enqueuedAt: 5,
      required: ['ci/test'],
      statusTimeoutMs: 60_000,
      maxUpdates: 3,
      updates: 0,
    };
    await first.enqueue(entry);
    await first.close();
    opened = [];
    await adminQuery(`DROP TABLE "${shared}".hookbot_queue_controls`);
    await adminQuery(`UPDATE "${shared}".hookbot_meta SET schema_version = 4`);
    const store = await replica('b', shared);
    const row = await adminQuery(`SELECT schema_version FROM "${shared}".hookbot_meta`);
    expect(row.rows[0]).toEqual({ schema_version: PG_SCHEMA_VERSION });
    expect(store.queued()).toEqual([entry]);
    expect(store.queueControls()).toEqual([]);
    const paused = { ...entry, paused: { by: 'ops', reason: 'freeze', at: 9 } };
    const control = {
      project: paused.project,
      projectId: 3,
      targetBranch: 'master',
      queue: 'default',
      paused: paused.paused,
    };
    await store.setQueueControl(control);
    expect(store.queueControls()).toEqual([control]);
  });

  it('refuses to open with a clear message when the database cannot be reached', async () => {
    const store = createPostgresStore({
      url: 'postgres://postgres@127.0.0.1:1/none',
      schema: schema(),
      connectTimeoutMs: 2_000,
    });
    await expect(store.open()).rejects.toThrow(/cannot connect .*HOOKBOT_DATABASE_URL/);
  });
});

describe.skipIf(!postgresAvailable)('PostgreSQL store, the database going away', () => {
  it('writes fail while its connections are cut, and succeed again without reopening', async () => {
    const shared = schema();
    const a = await replica('a', shared);
    await a.accept(delivery('before'));
    // Every connection the store holds is terminated (as a database restart does).
    await adminQuery(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`,
      [`hookbot/${shared}`],
    );
    // The pool notices and opens new connections: a later accept succeeds.
    await until(async () => {
      try {
        await a.accept(delivery(`after-${Date.now()}`));
        return true;
      } catch {
        return false;
      }
    }, 'an accept after the cut');
    await a.ping();
    expect(await a.fleetInbox()).toBeGreaterThanOrEqual(2);
  });

  it('a delivery row this replica holds but does not know of (an accept whose answer was lost) runs out and is taken over', async () => {
    const shared = schema();
    // The accept committed, but its answer never reached the process that sent it: a1 stands for
    // that moment's view (it never refreshes again), a2 for the same replica going on without the row.
    const a1 = await replica('a', shared, { leaseMs: 300, refreshMs: 3_600_000 });
    const { id } = await a1.accept(delivery('answer-lost'));
    const a2 = await replica('a', shared, { leaseMs: 300, refreshMs: 3_600_000, takeDeliveries: false });
    const b = await replica('b', shared, { leaseMs: 300, refreshMs: 3_600_000 });
    await until(async () => {
      await a2.refresh(); // its heartbeat must not keep the row it does not hold in its view
      await b.refresh();
      return b.pending().some((entry) => entry.id === id);
    }, 'the orphaned row taken over by b');
  });

  it('a lease whose release failed is neither renewed nor kept: another replica gets it', async () => {
    const shared = schema();
    const a = await replica('a', shared, { leaseMs: 60_000, refreshMs: 3_600_000 });
    const b = await replica('b', shared, { leaseMs: 60_000, refreshMs: 3_600_000 });
    expect(await a.tryLease('act:issue:1:7')).toBe(true);
    expect(await a.tryLease('sweep:retries')).toBe(true);
    await adminQuery(`ALTER TABLE "${shared}".hookbot_leases RENAME TO hookbot_leases_away`);
    await expect(a.releaseLease('act:issue:1:7')).rejects.toThrow();
    await adminQuery(`ALTER TABLE "${shared}".hookbot_leases_away RENAME TO hookbot_leases`);
    expect(await b.tryLease('act:issue:1:7')).toBe(false); // the row is still there, unexpired
    // a's refresh renews what it holds (the sweep) and gives back what it let go of (the item).
    await a.refresh();
    expect(await b.tryLease('act:issue:1:7')).toBe(true);
    expect(await b.tryLease('sweep:retries')).toBe(false);
  });

  it('a processed mark whose delete failed is deleted at the next refresh, never left to be taken over', async () => {
    const shared = schema();
    const a = await replica('a', shared, { refreshMs: 3_600_000 });
    const { id } = await a.accept(delivery('done-once'));
    // The delete fails (the table is away for a moment, as a statement fails when the database does).
    await adminQuery(`ALTER TABLE "${shared}".hookbot_inbox RENAME TO hookbot_inbox_away`);
    await expect(a.markProcessed(id)).rejects.toThrow();
    await adminQuery(`ALTER TABLE "${shared}".hookbot_inbox_away RENAME TO hookbot_inbox`);
    // Processed as far as this replica is concerned; still a row for the fleet until the retry.
    expect(a.pending().map((entry) => entry.id)).not.toContain(id);
    expect(await a.fleetInbox()).toBe(1);
    await a.refresh();
    expect(await a.fleetInbox()).toBe(0);
    // Nobody takes it over later: a replica that starts now finds nothing to process.
    const b = await replica('b', shared, { leaseMs: 200, refreshMs: 3_600_000 });
    await b.refresh();
    expect(b.pending()).toEqual([]);
  });
});
