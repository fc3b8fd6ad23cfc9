/**
 * Item runs across replicas (rules/executor/lock.ts): two replicas sharing one database never work
 * on one item at the same time (real PostgreSQL leases, `item:<key>`, held for a whole run), and
 * different items go on in parallel.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createItemRuns } from '../../../src/rules/executor/lock.ts';
import { createPostgresStore, type PostgresStateStore } from '../../../src/state/index.ts';
import { postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../../helpers/postgres.ts';

const schema = useTestSchemas();
let stores: PostgresStateStore[] = [];
afterEach(async () => {
  for (const store of stores) await store.close();
  stores = [];
});

describe.skipIf(!postgresAvailable)('the per-item lock across replicas', () => {
  it('lets one replica at a time act on an item', async () => {
    const shared = schema();
    for (const id of ['a', 'b']) {
      const store = createPostgresStore({ url: TEST_DATABASE_URL, schema: shared, replicaId: id });
      await store.open();
      stores.push(store);
    }
    const locks = stores.map((store) => createItemRuns({ fleet: store, retryMs: 5 }));
    let inside = 0;
    let most = 0;
    const order: string[] = [];
    const work = (who: string) => async () => {
      inside++;
      most = Math.max(most, inside);
      order.push(`${who} in`);
      // Stays inside across several event-loop turns and database round trips.
      for (let i = 0; i < 5; i++) await stores[0]!.ping();
      order.push(`${who} out`);
      inside--;
    };
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => locks[i % 2]!.run('acme/web#1', work(`${i % 2 ? 'b' : 'a'}${i}`))),
    );
    expect(most).toBe(1);
    expect(order).toHaveLength(12);
    // Each "in" is followed by its own "out".
    for (let i = 0; i < order.length; i += 2) expect(order[i + 1]).toBe(order[i]!.replace(' in', ' out'));
  });

  it("holds an item for a whole run: another replica's hook run is refused at once, its sweep waits; the run's own calls take no second lease", async () => {
    const shared = schema();
    for (const id of ['a', 'b']) {
      const store = createPostgresStore({ url: TEST_DATABASE_URL, schema: shared, replicaId: id });
      await store.open();
      stores.push(store);
    }
    const [a, b] = stores.map((store) => createItemRuns({ fleet: store, retryMs: 5 }));
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inside: () => void = () => undefined;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const order: string[] = [];
    const run = a!.tryRun('merge_request:1:7', async () => {
      order.push('a in');
      // The executor's call inside the run: straight through, on the same lease.
      await a!.run('merge_request:1:7', async () => void order.push('a call'));
      inside();
      await held;
      order.push('a out');
    });
    await entered;
    const leases = (await stores[0]!.replicas()).find((replica) => replica.id === 'a')?.leases;
    expect(leases).toEqual(['item:merge_request:1:7']);
    // The other replica: its hook run does not wait (its events stay coalesced), its sweep waits.
    expect(await b!.tryRun('merge_request:1:7', async () => void order.push('b hook'))).toBe(false);
    const sweep = b!.run('merge_request:1:7', async () => void order.push('b sweep'));
    for (let i = 0; i < 5; i++) await stores[1]!.ping();
    expect(order).toEqual(['a in', 'a call']);
    release();
    expect(await run).toBe(true);
    await sweep;
    expect(order).toEqual(['a in', 'a call', 'a out', 'b sweep']);
  });
});
