/**
 * What the PostgreSQL store promises beyond the contract (test/state/contract.test.ts runs that
 * against it too): several replicas on one database, leases that expire, the schema's versions,
 * and a database that goes away and comes back. Real PostgreSQL, a schema per test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPostgresStore,
  PG_SCHEMA_VERSION,
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
    // "Killed": never refreshes, so its leases run out (an hour between refreshes).
    const dead = await replica('dead', shared, { leaseMs: 200, refreshMs: 3_600_000 });
    const accepted = await Promise.all(['x', 'y', 'z'].map((key) => dead.accept(delivery(key))));
    const b = await replica('b', shared, { leaseMs: 200, refreshMs: 3_600_000 });
    const c = await replica('c', shared, { leaseMs: 200, refreshMs: 3_600_000 });
    let adopted = 0;
    b.onAdopted(() => adopted++);
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

  it('a lease is held by one replica at a time, and another gets it once it expired or was released', async () => {
    const shared = schema();
    const a = await replica('a', shared, { leaseMs: 300, refreshMs: 3_600_000 });
    const b = await replica('b', shared, { leaseMs: 300, refreshMs: 3_600_000 });
    expect(await a.tryLease('sweep:merge-watch')).toBe(true);
    expect(await b.tryLease('sweep:merge-watch')).toBe(false);
    expect(await a.tryLease('sweep:merge-watch')).toBe(true); // the holder keeps it
    await a.releaseLease('sweep:merge-watch');
    expect(await b.tryLease('sweep:merge-watch')).toBe(true);
    // b stops renewing (no refresh): a gets it once it ran out.
    await until(() => a.tryLease('sweep:merge-watch'), 'the expired lease taken over');
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
});
