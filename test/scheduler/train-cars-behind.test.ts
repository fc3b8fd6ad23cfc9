/**
 * The cars behind a front car still tested (src/scheduler/sweeps/train-statuses.ts `checkCarsBehind`):
 * their statuses are read and recorded on the car once final (`TrainCar.checked`), a passed build gives
 * the queue its build time (`trainCiMs`) before anything landed, and nothing else is decided: a failed
 * car behind the front stays, with its members, until it is the front. Against the sandbox over HTTP
 * with real git and the simulated CI, the front car's branch held pending.
 */
import { describe, expect, it } from 'vitest';
import type { TrainCar } from '../../src/state/store.ts';
import { openMergeRequest } from '../helpers/queue-world.ts';
import { trainSuite } from '../helpers/train-suite.ts';

const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, depth: 3 }
`;

describe('the cars behind a front car still tested', { timeout: 240_000 }, () => {
  const suite = trainSuite('tcb');

  it('are read and recorded passed or failed, give the queue its build time, and are judged only at the front', async () => {
    const held = new Set<string>();
    const world = await suite.world(RULES, {
      modeOf: (branch) => (held.has(branch) ? 'pending-forever' : 'normal'),
    });
    const a = await openMergeRequest(world, 'a', { 'a.txt': 'calls: foo\n' });
    const c = await openMergeRequest(world, 'c', { 'c.txt': 'calls: foo\n' });
    const bad = await openMergeRequest(world, 'bad', { 'bad.txt': 'calls: nowhere\n' });
    held.add(`hookbot/train/master/default/${a.iid}`);
    await world.ci.idle();
    for (const mr of [a, c, bad]) await world.processItem(mr.id);
    const carsNow = () => {
      const byId = new Map<string, TrainCar>();
      for (const e of world.store.queued()) if (!e.left && e.car) byId.set(e.car.id, e.car);
      return [...byId.values()].sort((x, y) => x.position - y.position);
    };
    await world.sweeps.run('merge_queue');
    const built = carsNow();
    expect(built.map((car) => car.iids)).toEqual([[a.iid], [c.iid], [bad.iid]]);
    expect(built.every((car) => car.checked === undefined)).toBe(true);
    expect(world.store.queued().some((e) => e.trainCiMs !== undefined)).toBe(false);
    await world.ci.idle();
    await world.sweeps.run('merge_queue');
    const read = carsNow();
    // The same cars (nothing rebuilt, nobody taken out), the two behind read.
    expect(read.map((car) => [car.id, car.sha])).toEqual(built.map((car) => [car.id, car.sha]));
    expect(read[0]!.checked).toBeUndefined();
    expect(read[1]!.checked).toMatchObject({ state: 'passed' });
    expect(read[2]!.checked).toMatchObject({ state: 'failed', failed: ['ci/test'] });
    expect(world.active()).toBe(3);
    // A build seen passing: the queue's estimates have their build time before anything landed.
    const ciMs = world.store.queued().map((e) => e.trainCiMs);
    expect(ciMs.every((ms) => ms !== undefined && ms >= 0)).toBe(true);
    // Read again, unchanged: not written again.
    await world.sweeps.run('merge_queue');
    expect(carsNow().map((car) => car.checked)).toEqual(read.map((car) => car.checked));
  });
});
