/**
 * Reloading the merge queues from the database (Fleet.reloadQueue, and the refresh's reload): what
 * other replicas wrote comes in, and a write of this replica's own that is still on its way to the
 * database is never undone by a reload that read before it committed. Real PostgreSQL, a schema per test.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresStore, type QueueEntry } from '../../../src/state/index.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { adminQuery, postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../../helpers/postgres.ts';

const schema = useTestSchemas();
type Store = ReturnType<typeof createPostgresStore>;
let opened: Store[] = [];

afterEach(async () => {
  for (const store of opened) await store.close();
  opened = [];
});

async function replica(name: string, shared: string): Promise<Store> {
  // No reload by the timer in the test's time: only the ones asked for.
  const store = createPostgresStore({
    url: TEST_DATABASE_URL,
    schema: shared,
    replicaId: name,
    refreshMs: 3_600_000,
  });
  await store.open();
  opened.push(store);
  return store;
}

const entry = (iid: number, priority = 0): QueueEntry => ({
  itemKey: `merge_request:8:${100 + iid}`,
  project: 'acme/web',
  projectId: 8,
  mrId: 100 + iid,
  iid,
  targetBranch: 'master',
  queue: 'default',
  rule: 'queue',
  priority,
  enqueuedAt: 1_000 + iid,
  required: ['ci/test'],
  statusTimeoutMs: 60_000,
  maxUpdates: 3,
  updates: 0,
  depthAuto: { min: 2, max: 10 },
  trainWindow: 4,
});

describe.skipIf(!postgresAvailable)('reloading the merge queues', () => {
  it("reloadQueue takes in another replica's entries and controls, and keeps depthAuto and trainWindow", async () => {
    const shared = schema();
    const a = await replica('a', shared);
    const b = await replica('b', shared);
    await a.enqueue(entry(1));
    await a.setQueueControl({
      project: 'acme/web',
      projectId: 8,
      targetBranch: 'master',
      queue: 'default',
      paused: { by: 'alice', reason: 'freeze', at: 5 },
    });
    await b.enqueue(entry(2));
    expect(b.queued().map((e) => e.iid)).toEqual([2]);
    await b.reloadQueue();
    expect(
      b
        .queued()
        .map((e) => e.iid)
        .sort(),
    ).toEqual([1, 2]);
    expect(b.queued().find((e) => e.iid === 1)).toMatchObject({
      depthAuto: { min: 2, max: 10 },
      trainWindow: 4,
    });
    expect(b.queueControls()).toHaveLength(1);
  });

  for (const how of ['reloadQueue'] as const)
    it(`a ${how} asked while this replica's own write of an entry waits to commit reads after it: the write is not undone in the view`, async () => {
      const shared = schema();
      const a = await replica('a', shared);
      await a.enqueue(entry(1, 0));
      // Another connection holds the entry's row: a's update of it waits, as on a busy database.
      const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await admin.connect();
      try {
        await admin.query('BEGIN');
        await admin.query(`SELECT 1 FROM "${shared}".hookbot_queue WHERE item_key = $1 FOR UPDATE`, [
          entry(1).itemKey,
        ]);
        const write = a.enqueue(entry(1, 5));
        await waitFor(
          async () => {
            const waiting = await adminQuery(
              `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO hookbot_queue%'`,
            );
            return waiting.rowCount! > 0 ? true : undefined;
          },
          20_000,
          "a's write waits on the row",
        );
        // Before the fix the reload read the row as it stood (priority 0) without waiting for the
        // write, and put that in the view, where it stayed until the next reload.
        const reload = how === 'reloadQueue' ? a.reloadQueue() : a.refresh();
        await admin.query('COMMIT');
        await write;
        await reload;
        expect(a.queued().find((e) => e.iid === 1)?.priority).toBe(5);
      } finally {
        await admin.query('ROLLBACK').catch(() => undefined);
        await admin.end();
      }
    });
});
