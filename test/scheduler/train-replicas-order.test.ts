/**
 * One order across replicas (docs/merge-queue.md#merge-trains, "One order across replicas"): the
 * replica that drives a merge train works from the queue as the database holds it, read under the
 * train's lock, not from its own view, which lacks the merge requests whose hooks another replica
 * received. Two PostgreSQL stores on one database (two replicas' views), the sandbox over HTTP, real
 * git and the simulated CI; every wait is on a condition.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { createPostgresStore } from '../../src/state/index.ts';
import { queueShape, queuesOf } from '../../src/state/queue-order.ts';
import type { StateStore } from '../../src/state/store.ts';
import { makeQueueWorld, masterLine, openMergeRequest } from '../helpers/queue-world.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../helpers/postgres.ts';

const rules = (depth: string) => `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, priority_labels: [urgent], depth: ${depth} }
`;

const schema = useTestSchemas();

describe.skipIf(!postgresAvailable)(
  'a merge train driven by one replica of several',
  { timeout: 240_000 },
  () => {
    let sb: Sandbox;
    let dir = '';
    const cleanups: (() => Promise<void>)[] = [];
    beforeAll(async () => {
      sb = await startSandbox({ adminToken: 'tro-root-token', hookTimeoutMs: 2_000 });
      dir = await mkdtemp(path.join(tmpdir(), 'hookbot-tro-'));
    });
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });
    afterAll(async () => {
      await sb?.close();
      await rm(dir, { recursive: true, force: true });
    });

    /** A replica's store on the shared schema; its view is reloaded only when asked (no timer in the test's time). */
    async function replicaStore(shared: string, name: string): Promise<StateStore> {
      const store = createPostgresStore({
        url: TEST_DATABASE_URL,
        schema: shared,
        replicaId: name,
        refreshMs: 3_600_000,
      });
      await store.open();
      return store;
    }

    let n = 0;
    it("builds from every replica's entries in priority, then arrival, and rebuilds no car for order", async () => {
      n += 1;
      const shared = schema();
      const storeA = await replicaStore(shared, 'a');
      const storeB = await replicaStore(shared, 'b');
      cleanups.push(() => storeA.close());
      // The world is replica B (it drives the train) and closes its store.
      const w = await makeQueueWorld(sb, {
        prefix: `tro${n}`,
        rules: rules('{ min: 4, max: 6 }'),
        workDir: dir,
        store: storeB,
      });
      cleanups.push(() => w.close());
      const a = w.replica(storeA);
      const open = (name: string, labels?: string[]) =>
        openMergeRequest(w, name, { [`${name}.txt`]: 'calls: foo\n' }, labels);
      const first = await open('first');
      const second = await open('second');
      const third = await open('third');
      const urgent = await open('urgent', ['automerge', 'urgent']);
      await w.ci.idle();
      // Hooks reach either replica: A receives the first, third and the urgent one, B the second.
      await a.processItem(first.id);
      await w.processItem(second.id);
      await a.processItem(third.id);
      await a.processItem(urgent.id);
      // B's view holds only what B wrote (its view reloads on its timer, an hour away here).
      expect(storeB.queued().map((e) => e.iid)).toEqual([second.iid]);
      // B drives: the urgent one first, then by arrival, whichever replica received which hook.
      await w.sweeps.run('merge_queue');
      const order = [urgent.iid, first.iid, second.iid, third.iid];
      const built = () => {
        const cars = new Map<number, { iids: number[]; sha: string | undefined }>();
        for (const e of queuesOf(storeB.queued()).values().next().value ?? [])
          if (e.car) cars.set(e.car.position, { iids: e.car.iids, sha: e.car.sha });
        return [...cars.entries()].sort(([x], [y]) => x - y).map(([, car]) => car);
      };
      const cars = built();
      expect(cars.map((car) => car.iids)).toEqual(order.map((iid) => [iid]));
      const before = (await masterLine(w)).map((x) => x.sha);
      // They land as built: master's new first-parent commits are exactly those four cars, in order
      // (a car built again for order's sake would land another commit).
      await w.drive(() => w.active() === 0, 'the train empties');
      const line = (await masterLine(w)).map((x) => x.sha);
      expect(line).toEqual([...before, ...cars.map((car) => car.sha)]);
    });

    it("the window of depth: auto is the queue's: a restarted replica (a new view of the database) goes on with it", async () => {
      n += 1;
      const shared = schema();
      const storeA = await replicaStore(shared, 'a');
      const storeB = await replicaStore(shared, 'b');
      cleanups.push(() => storeA.close());
      const w = await makeQueueWorld(sb, {
        prefix: `tro${n}`,
        rules: rules('{ min: 2, max: 6 }'),
        workDir: dir,
        store: storeB,
      });
      cleanups.push(() => w.close());
      const a = w.replica(storeA);
      const mrs = [];
      for (const name of ['a', 'b', 'c', 'd', 'e'])
        mrs.push(await openMergeRequest(w, name, { [`${name}.txt`]: 'calls: foo\n' }));
      await w.ci.idle();
      for (const mr of mrs) await a.processItem(mr.id);
      // B drives: 2 cars (the lower bound), then both land: 2 + 2 = 4, the three left in cars.
      // (The scheduler refreshes B's view when B takes the sweep's lease.)
      await storeB.fleet!.refresh();
      await w.sweeps.run('merge_queue');
      await w.ci.idle();
      await w.sweeps.run('merge_queue');
      const key = [...queuesOf(storeB.queued()).keys()][0]!;
      expect(
        queuesOf(storeB.queued())
          .get(key)!
          .map((e) => e.trainWindow),
      ).toEqual([4, 4, 4]);
      // A restart: a new replica, whose view is the database's.
      const storeC = await replicaStore(shared, 'c');
      cleanups.push(() => storeC.close());
      const c = w.replica(storeC);
      expect(queueShape(queuesOf(storeC.queued()).get(key)!)).toMatchObject({
        depth: 4,
        auto: { min: 2, max: 6 },
      });
      // And A's view, once reloaded.
      await storeA.fleet!.reloadQueue();
      expect(queueShape(queuesOf(storeA.queued()).get(key)!).depth).toBe(4);
      await waitFor(
        async () => {
          await w.ci.idle();
          await c.sweeps.run('merge_queue');
          return (queuesOf(storeC.queued()).get(key) ?? []).length === 0 ? true : undefined;
        },
        60_000,
        'replica C lands the rest',
      );
      for (const mr of mrs)
        expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('merged');
    });
  },
);
