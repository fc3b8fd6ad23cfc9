/**
 * `depth: auto` (docs/merge-queue.md#depth-auto-a-window-that-follows-the-ci): the window of a merge
 * train grows by one per car landed and halves after a failed car, within its bounds, and is the
 * queue's state (a second driver on the same store goes on with it). Against the sandbox over HTTP,
 * with real git and the simulated CI: every wait is on a condition.
 */
import { describe, expect, it } from 'vitest';
import type { QueueEntry } from '../../src/state/store.ts';
import { queuePosition, queueShape, queuesOf } from '../../src/state/queue-order.ts';
import { openMergeRequest, type QueueWorld } from '../helpers/queue-world.ts';
import { queueAll, trainRules, trainSuite } from '../helpers/train-suite.ts';

const rules = trainRules;

describe('depth: auto, the window of a merge train', { timeout: 240_000 }, () => {
  const suite = trainSuite('tw');
  const world = (options: string) => suite.world(rules(options));
  const live = (w: QueueWorld): QueueEntry[] => [...queuesOf(w.store.queued()).values()][0] ?? [];
  /** The cars as the store holds them, front first: each one's merge requests' iids. */
  const cars = (w: QueueWorld) => {
    const seen = new Map<string, number[]>();
    for (const entry of live(w)) if (entry.car) seen.set(entry.car.id, entry.car.iids);
    return [...seen.values()];
  };
  const windowOf = (w: QueueWorld) => queueShape(live(w));
  /** One run of the queue once the CI built everything pushed. */
  async function round(w: QueueWorld, sweeps = w.sweeps) {
    await w.ci.idle();
    await sweeps.run('merge_queue');
  }

  it('starts at its lower bound, grows by one per car landed up to its upper bound; a second driver on the same store goes on with it', async () => {
    const w = await world('depth: { min: 2, max: 3 }');
    const mrs = [];
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f'])
      mrs.push(await openMergeRequest(w, name, { [`${name}.txt`]: 'calls: foo\n' }));
    await queueAll(
      w,
      mrs.map((mr) => mr.id),
    );
    const iids = mrs.map((mr) => mr.iid);
    expect(windowOf(w)).toEqual({ depth: 2, batch: 1, train: true, auto: { min: 2, max: 3 } });
    // Run 1: the window's lower bound, two cars.
    await round(w);
    expect(cars(w)).toEqual([[iids[0]], [iids[1]]]);
    const first = live(w).find((e) => e.iid === iids[2])!;
    expect(queuePosition(w.store.queued(), first.itemKey, w.now())).toMatch(
      /^position 3 of 6 in the default queue for master \(a merge train, depth auto 2 \(2\.\.3\)\); waiting for a car of the merge train$/,
    );
    // Run 2: both land in one push (+2), the window is 3 (its upper bound), not 4: three cars.
    await round(w);
    expect(live(w).map((e) => e.iid)).toEqual(iids.slice(2));
    expect(live(w).every((e) => e.trainWindow === 3)).toBe(true);
    expect(windowOf(w).depth).toBe(3);
    expect(cars(w)).toEqual([[iids[2]], [iids[3]], [iids[4]]]);
    // A second driver on the same store (a restart: nothing of the first one's memory) goes on with
    // the window recorded: it lands the three and builds the last one, never more than 3 cars.
    const again = w.replica(w.store);
    await round(w, again.sweeps);
    expect(live(w).map((e) => e.iid)).toEqual([iids[5]]);
    expect(windowOf(w).depth).toBe(3);
    expect(cars(w)).toEqual([[iids[5]]]);
    await w.drive(() => w.active() === 0, 'the train empties');
  });

  it('halves after a failed car, never below its lower bound', async () => {
    const w = await world('depth: { min: 2, max: 6 }');
    const names = ['a', 'b', 'bad1', 'bad2', 'e', 'f', 'g'];
    const mrs: Awaited<ReturnType<typeof openMergeRequest>>[] = [];
    for (const name of names)
      mrs.push(
        await openMergeRequest(w, name, {
          [`${name}.txt`]: name.startsWith('bad') ? 'calls: nowhere\n' : 'calls: foo\n',
        }),
      );
    await queueAll(
      w,
      mrs.map((mr) => mr.id),
    );
    const iid = (name: string) => mrs[names.indexOf(name)]!.iid;
    await round(w);
    expect(cars(w)).toEqual([[iid('a')], [iid('b')]]);
    // a and b land: 2 + 2 = 4 cars, built in the same run.
    await round(w);
    expect(windowOf(w).depth).toBe(4);
    expect(cars(w)).toEqual([[iid('bad1')], [iid('bad2')], [iid('e')], [iid('f')]]);
    // bad1 fails at the front: 4 / 2 = 2; the cars behind it are built again, two of them.
    await round(w);
    expect(live(w).map((e) => e.iid)).not.toContain(iid('bad1'));
    expect(windowOf(w).depth).toBe(2);
    expect(live(w).every((e) => e.trainWindow === 2)).toBe(true);
    expect(cars(w)).toEqual([[iid('bad2')], [iid('e')]]);
    // bad2 fails: 2 / 2 = 1, kept at the lower bound, 2.
    await round(w);
    expect(live(w).map((e) => e.iid)).not.toContain(iid('bad2'));
    expect(windowOf(w).depth).toBe(2);
    expect(cars(w)).toEqual([[iid('e')], [iid('f')]]);
    // e and f land: 2 + 2 = 4; g alone is left.
    await round(w);
    expect(windowOf(w).depth).toBe(4);
    expect(cars(w)).toEqual([[iid('g')]]);
    await w.drive(() => w.active() === 0, 'the train empties');
  });

  it('beside a number in one queue: the number wins (never above the window), and the depth does not move', async () => {
    const w = await world('depth: auto');
    const mrs = [];
    for (const name of ['a', 'b', 'c', 'd'])
      mrs.push(await openMergeRequest(w, name, { [`${name}.txt`]: 'calls: foo\n' }));
    await queueAll(
      w,
      mrs.map((mr) => mr.id),
    );
    // Another rule's entry asks depth 3 (written as the executor would have queued it).
    const other = live(w).at(-1)!;
    const { depthAuto: _auto, ...fixed } = other;
    await w.store.enqueue({ ...fixed, depth: 3 });
    expect(windowOf(w)).toEqual({ depth: 3, batch: 1, train: true });
    await round(w);
    expect(cars(w)).toHaveLength(3);
    await round(w);
    expect(live(w).every((e) => e.trainWindow === undefined)).toBe(true);
    await w.drive(() => w.active() === 0, 'the train empties');
  });
});
