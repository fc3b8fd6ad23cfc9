/**
 * A merge train with flaky CI and failed batches (docs/merge-queue.md#flaky-ci, Batches), against the
 * sandbox over HTTP with real git and the simulated CI (test/helpers/queue-world.ts), whose
 * `modeOf(branch, sha)` makes a build fail whatever its tree (a flake). Every wait is on a condition.
 */
import { describe, expect, it } from 'vitest';
import type { QueueEntry, TrainCar } from '../../src/state/store.ts';
import { queuePosition } from '../../src/state/queue-order.ts';
import type { MergeQueueReport } from '../../src/scheduler/sweeps/merge-queue.ts';
import { itemKeyOf } from '../../src/rules/index.ts';
import type { CiMode } from '../helpers/simulated-ci.ts';
import {
  masterLine,
  openMergeRequest,
  type QueueWorld,
  type QueueWorldOptions,
} from '../helpers/queue-world.ts';
import { botNotes, queueAll, stateOf, trainRules, trainSuite } from '../helpers/train-suite.ts';

const rules = trainRules;

const carBranch = (iid: number) => `hookbot/train/master/default/${iid}`;

/** A CI whose first build on each of `branches` fails (a flake); every other build is judged by its tree. */
function flakyFirst(branches: () => string[]): (branch: string) => CiMode {
  const seen = new Set<string>();
  return (branch) => {
    if (!branches().includes(branch) || seen.has(branch)) return 'normal';
    seen.add(branch);
    return 'fail';
  };
}

describe('merge trains with flaky CI and failed batches', { timeout: 240_000 }, () => {
  const suite = trainSuite('mtf');
  const world = (options: string, extra: Partial<QueueWorldOptions> = {}) =>
    suite.world(rules(options), extra);
  const cars = (w: QueueWorld): TrainCar[] => [
    ...new Map(
      w.store
        .queued()
        .filter((e: QueueEntry) => !e.left && e.car)
        .map((e) => [e.car!.id, e.car!] as const),
    ).values(),
  ];
  /** What the reports said of merge request `mrId` with `outcome`. */
  const detailOf = (w: QueueWorld, reports: MergeQueueReport[], mrId: number, outcome: string) =>
    reports
      .flatMap((r) => r.items)
      .filter((item) => item.itemKey === itemKeyOf('merge_request', w.project.id, mrId))
      .filter((item) => item.outcome === outcome)
      .map((item) => item.detail);
  /** Runs the queue once, a second later on the bot's clock (a car built again is another commit). */
  async function round(w: QueueWorld): Promise<MergeQueueReport> {
    await w.ci.idle();
    w.clock.offset += 1_000;
    return (await w.sweeps.run('merge_queue')) as MergeQueueReport;
  }
  async function rounds(w: QueueWorld, max = 20): Promise<MergeQueueReport[]> {
    const reports: MergeQueueReport[] = [];
    for (let i = 0; i < max && w.active() > 0; i++) reports.push(await round(w));
    await w.ci.idle();
    return reports;
  }

  it('a flaky front car with a passing car behind lands through it: both merged in one push, no comment; the report says why', async () => {
    const lands: string[] = [];
    let aIid = 0;
    const w = await world('depth: 2', {
      modeOf: flakyFirst(() => [carBranch(aIid)]),
      trainGit: (base) => ({
        ...base,
        identity: base.identity,
        land(request) {
          lands.push(request.sha);
          return base.land(request);
        },
      }),
    });
    const a = await openMergeRequest(w, 'a', { 'a.txt': 'calls: foo\n' });
    aIid = a.iid;
    const b = await openMergeRequest(w, 'b', { 'b.txt': 'calls: foo\n' });
    await queueAll(w, [a.id, b.id]);
    const runs = w.ci.runs;
    await w.sweeps.run('merge_queue');
    const built = cars(w).map((car) => car.sha!);
    expect(built).toHaveLength(2);
    const reports = await rounds(w);
    expect(w.active()).toBe(0);
    for (const id of [a.id, b.id]) expect(await stateOf(w, id)).toBe('merged');
    for (const id of [a.id, b.id]) expect(await botNotes(w, id)).toEqual([]);
    // One push, to car 2's commit; nothing built again.
    expect(lands).toEqual([built[1]]);
    expect(w.ci.runs - runs).toBe(2);
    // The trade-off, written down: car 1's commit, whose own build failed, is in master's history.
    const line = (await masterLine(w)).map((x) => x.sha);
    expect(line.slice(-2)).toEqual(built);
    const said = detailOf(w, reports, a.id, 'merged');
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(
      "landed through car 2: car 1's own build failed (ci/test) but car 2, which contains it, passed",
    );
  });

  // Review of issue 38: a car behind vouches for the failed car only with the failed car's own
  // requirements passed on its commit, not only those of its own members (issue 36's finding 1 again).
  it("a car behind lands a failed car through it only when every requirement of the failed car's merge request passed on it", async () => {
    let codeIid = 0;
    const w = await suite.world(
      `
rules:
  - name: queue docs
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [docs] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, depth: 2 }
  - name: queue code
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [code] } } ]
    do:
      - queue: { statuses: [ci/test, review/approved], status_timeout: 10m, depth: 2 }
`,
      { modeOf: flakyFirst(() => [carBranch(codeIid)]) },
    );
    const code = await openMergeRequest(w, 'code', { 'code.txt': 'calls: foo\n' }, ['code']);
    codeIid = code.iid;
    const docs = await openMergeRequest(w, 'docs', { 'docs.txt': 'calls: foo\n' }, ['docs']);
    await queueAll(w, [code.id, docs.id]);
    await w.sweeps.run('merge_queue');
    expect(cars(w)).toHaveLength(2);
    // Car 1 (code) flakes; car 2 (docs on code) passes ci/test; nothing ever posts review/approved.
    await rounds(w);
    expect(await stateOf(w, code.id)).toBe('opened');
    expect(await stateOf(w, docs.id)).toBe('merged');
    const notes = await botNotes(w, code.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('Removed from the default merge queue for `master`');
  });

  it('a real failure: the front waits for the car behind, which contains it; when that fails too, the culprit leaves with one comment, not built again, and the rest is rebuilt', async () => {
    let cIid = 0;
    let held: string | undefined;
    const w = await world('depth: 2', {
      // Car 2's first build never reports by itself: the test posts its verdict.
      modeOf: (branch, sha) => {
        if (branch !== carBranch(cIid) || held !== undefined) return 'normal';
        held = sha;
        return 'pending-forever';
      },
    });
    const bad = await openMergeRequest(w, 'bad', { 'bad.txt': 'calls: nowhere\n' });
    const c = await openMergeRequest(w, 'c', { 'c.txt': 'calls: foo\n' });
    cIid = c.iid;
    await queueAll(w, [bad.id, c.id]);
    const runs = w.ci.runs;
    await w.sweeps.run('merge_queue');
    const [carBad, carC] = cars(w);
    await w.ci.idle();
    // Car 1 failed; car 2, which contains it, is still tested: car 1 waits, and says so.
    const waiting = await round(w);
    expect(detailOf(w, [waiting], bad.id, 'waiting')).toEqual([
      `car 1 failed (ci/test on ${carBad!.sha!.slice(0, 7)}); waiting for car 2, which contains it: if it passes, car 1 lands through it`,
    ]);
    expect(w.store.queued().find((e) => e.mrId === bad.id)?.left).toBeUndefined();
    expect(await botNotes(w, bad.id)).toEqual([]);
    const badKey = w.store.queued().find((e) => e.mrId === bad.id)!.itemKey;
    expect(queuePosition(w.store.queued(), badKey, w.now())).toContain('its build failed (ci/test) on');
    // Car 2 fails too: a real failure.
    expect(held).toBe(carC!.sha);
    await w.admin.statuses.create(w.project.id, carC!.sha!, {
      state: 'failed',
      name: 'ci/test',
      ref: carC!.branch,
    });
    await rounds(w);
    expect(await stateOf(w, bad.id)).toBe('opened');
    expect(await stateOf(w, c.id)).toBe('merged');
    const notes = await botNotes(w, bad.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('Removed from the default merge queue for `master`: ci/test failed on');
    // bad's car, c's car on it, c's car again on master: bad was not built again (a car behind tested it).
    expect(w.ci.runs - runs).toBe(3);
    expect((await masterLine(w)).every((x) => x.passes)).toBe(true);
  });

  it('the car right behind a failed front failed too: the front is judged at once, without waiting for a car further behind still tested', async () => {
    let dIid = 0;
    const w = await world('depth: 3', {
      // Car 3's build never reports: only the two cars ahead of it speak.
      modeOf: (branch) => (branch === carBranch(dIid) ? 'pending-forever' : 'normal'),
    });
    const bad = await openMergeRequest(w, 'bad', { 'bad.txt': 'calls: nowhere\n' });
    const c = await openMergeRequest(w, 'c', { 'c.txt': 'calls: foo\n' });
    const d = await openMergeRequest(w, 'd', { 'd.txt': 'calls: foo\n' });
    dIid = d.iid;
    await queueAll(w, [bad.id, c.id, d.id]);
    await w.sweeps.run('merge_queue');
    expect(cars(w)).toHaveLength(3);
    // Cars 1 and 2 fail (both hold `bad`); car 3 is still tested: bad leaves now, with one comment.
    await round(w);
    expect(w.store.queued().find((e) => e.mrId === bad.id)?.left).toBeDefined();
    const notes = await botNotes(w, bad.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('Removed from the default merge queue for `master`: ci/test failed on');
    // c and d ride again, on master without bad.
    const rebuilt = cars(w);
    expect(rebuilt[0]!.iids).toEqual([c.iid]);
  });

  it('a car of one that fails alone is built again (a new commit) and lands when the retry passes', async () => {
    let aIid = 0;
    const w = await world('depth: 2', { modeOf: flakyFirst(() => [carBranch(aIid)]) });
    const a = await openMergeRequest(w, 'a', { 'a.txt': 'calls: foo\n' });
    aIid = a.iid;
    await queueAll(w, [a.id]);
    const runs = w.ci.runs;
    await w.sweeps.run('merge_queue');
    const [first] = cars(w);
    const retry = await round(w);
    const [again] = cars(w);
    expect(again!.sha).not.toBe(first!.sha);
    expect(again!.retried).toEqual({ count: 1, failed: ['ci/test'] });
    expect(detailOf(w, [retry], a.id, 'waiting')[0]).toContain(
      `car 1 failed (ci/test on ${first!.sha!.slice(0, 7)}) and no car behind it tested it: built again as ${again!.sha!.slice(0, 7)} (retry 1 of 1`,
    );
    await rounds(w);
    expect(await stateOf(w, a.id)).toBe('merged');
    expect(await botNotes(w, a.id)).toEqual([]);
    expect((await masterLine(w)).at(-1)!.sha).toBe(again!.sha);
    expect(w.ci.runs - runs).toBe(2);
  });

  it('retries exhausted: a car that keeps failing is taken out with one comment after `retries` builds again', async () => {
    const w = await world('depth: 2, retries: 2', {
      // Every build of a train car fails (a broken runner for that branch), whatever the tree.
      modeOf: (branch) => (branch.startsWith('hookbot/train/') ? 'fail' : 'normal'),
    });
    const a = await openMergeRequest(w, 'a', { 'a.txt': 'calls: foo\n' });
    await queueAll(w, [a.id]);
    const runs = w.ci.runs;
    await w.sweeps.run('merge_queue');
    await rounds(w);
    expect(await stateOf(w, a.id)).toBe('opened');
    expect(w.store.queued().find((e) => e.mrId === a.id)?.left).toBeDefined();
    const notes = await botNotes(w, a.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('ci/test failed on');
    // Built once, then twice again.
    expect(w.ci.runs - runs).toBe(3);
  });

  it('a crash between the record of a retry and its push: the retry is rebuilt from its record to the same commit, and counted once', async () => {
    let pushes = 0;
    let aIid = 0;
    const w = await world('depth: 2', {
      modeOf: flakyFirst(() => [carBranch(aIid)]),
      trainGit: (base) => ({
        ...base,
        identity: base.identity,
        async pushCars(request) {
          // The second push of the cars is the retry's.
          if (++pushes === 2) throw new Error('killed before the push');
          return base.pushCars(request);
        },
      }),
    });
    const a = await openMergeRequest(w, 'a', { 'a.txt': 'calls: foo\n' });
    aIid = a.iid;
    await queueAll(w, [a.id]);
    await w.sweeps.run('merge_queue');
    const [first] = cars(w);
    const crashed = await round(w);
    expect(crashed.counts.error).toBe(1);
    const [recorded] = cars(w);
    expect(recorded!.sha).not.toBe(first!.sha);
    expect(recorded!.pushedAt).toBeUndefined();
    expect(recorded!.retried).toEqual({ count: 1, failed: ['ci/test'] });
    // An hour later: the same commit all the same, the count not reset.
    w.clock.offset += 3_600_000;
    await w.sweeps.run('merge_queue');
    const [pushed] = cars(w);
    expect(pushed!.sha).toBe(recorded!.sha);
    expect(pushed!.pushedAt).toBeDefined();
    expect(pushed!.retried).toEqual({ count: 1, failed: ['ci/test'] });
    expect((await w.admin.branches.get(w.project.id, recorded!.branch)).commit.id).toBe(recorded!.sha);
    await rounds(w);
    expect(await stateOf(w, a.id)).toBe('merged');
    expect((await w.admin.branches.get(w.project.id, 'master')).commit.id).toBe(recorded!.sha);
  });

  for (const culprit of [1, 2, 3, 4])
    it(`a failed batch of 4 with one culprit (at ${culprit}), depth 2: at most 5 builds, as docs/merge-queue.md says`, async () => {
      const w = await world('depth: 2, batch: 4');
      const ids: number[] = [];
      let bad = 0;
      for (let i = 1; i <= 4; i++) {
        const name = i === culprit ? 'bad' : `ok${i}`;
        const mr = await openMergeRequest(w, name, {
          [`${name}.txt`]: i === culprit ? 'calls: nowhere\n' : 'calls: foo\n',
        });
        ids.push(mr.id);
        if (i === culprit) bad = mr.id;
      }
      await queueAll(w, ids);
      const runs = w.ci.runs;
      await w.sweeps.run('merge_queue');
      await rounds(w, 30);
      expect(w.active()).toBe(0);
      for (const id of ids) expect(await stateOf(w, id)).toBe(id === bad ? 'opened' : 'merged');
      expect(await botNotes(w, bad)).toHaveLength(1);
      expect(w.ci.runs - runs).toBeLessThanOrEqual(5);
      expect((await masterLine(w)).every((x) => x.passes)).toBe(true);
    });
});
