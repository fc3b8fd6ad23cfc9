/**
 * A crash between a landing's one push and the exits that wait for it (train-judge.ts: a failed car
 * behind a landing leaves once that landing went). The cars pushed with the landing were built as if
 * the failed car had left; after the crash the next run finds it still queued ahead of them, gives
 * them up (their base does not chain on it), takes it out, and builds them again on the same base:
 * the same commits (train-run.ts `givenUp`, train-build.ts `buildNewCars`), so no build runs twice.
 * Seen in the reliability run's train-replicas (a replica killed right after a landing push): the car
 * behind was built again with a new date, a second commit of the same car for the CI to build.
 */
import { describe, expect, it } from 'vitest';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import {
  attackCars,
  carCommits,
  newSpy,
  recordPushes,
  trainAttackSuite,
} from '../helpers/train-attack-suite.ts';
import { trainRules } from '../helpers/train-suite.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('a merge train after a crash right after a landing pushed with cars', { timeout: 120_000 }, () => {
  const suite = trainAttackSuite('tcr');

  it('the cars built past the failed car that had not left yet are built again as the same commits', async () => {
    const spy = newSpy();
    // `retries: 0`: the failed car is judged at once, as when its retries are spent.
    const a = await suite.world(trainRules('depth: 3, retries: 0'), spy);
    const { w } = a;
    const mrs: { id: number; iid: number }[] = [];
    for (const [name, content] of [
      ['a', 'calls: foo\n'],
      ['x', 'calls: nowhere\n'],
      ['y', 'calls: foo\n'],
      ['z', 'calls: foo\n'],
    ] as const)
      mrs.push(await a.open(a.master, `${name}-${suite.count()}`, content, { labels: ['automerge'] }));
    for (const mr of mrs) await w.processItem(mr.id);
    await w.sweeps.run('merge_queue');
    const first = attackCars(a);
    expect(first.map((car) => car.iids)).toEqual(mrs.slice(0, 3).map((mr) => [mr.iid]));
    // The CI: a's car passes; x's fails, and so does y's, built on it (each build over first).
    await pushWorkIdle(a.sb.ctx);
    await w.ci.idle();
    const verdicts = ['success', 'failed', 'failed'];
    await waitFor(
      async () => {
        for (const [i, car] of first.entries()) {
          let latest: string | undefined;
          for await (const status of w.admin.statuses.list(w.project.id, car.sha!))
            if (status.name === 'ci/test') latest ??= status.status;
          if (latest !== verdicts[i]) return undefined;
        }
        return true;
      },
      30_000,
      "the three cars' builds over",
    );
    const pushes = recordPushes(a);
    spy.onePushOnce = async (request, real) => {
      expect(await real(request)).toBe(true);
      throw new Error('killed right after the one push');
    };
    await w.sweeps.run('merge_queue');
    // The server tells a push's refs after it took it: all of them told before they are read.
    await pushWorkIdle(a.sb.ctx);
    expect(spy.lands).toEqual([first[0]!.sha]);
    // Pushed with the landing: y's car again, on a's (x was to leave once it landed), and z's on it.
    const y = first[2]!.branch;
    const crashed = carCommits(pushes);
    expect(crashed.get(y)?.size).toBe(1);
    const [ySha] = [...crashed.get(y)!];
    expect(ySha).not.toBe(first[2]!.sha);
    expect((await w.admin.commits.get(w.project.id, ySha!)).parent_ids[0]).toBe(first[0]!.sha);
    // The kill came before x left: it is still queued, in its failed car.
    const x = w.store.queued().find((e) => e.mrId === mrs[1]!.id && !e.left);
    expect(x?.car?.sha).toBe(first[1]!.sha);
    await pushWorkIdle(a.sb.ctx);
    await w.ci.idle();
    const ciRuns = w.ci.runs;

    // The restart takes seconds: a car made now has another date (commit dates are in seconds).
    w.clock.offset += 5_000;
    await w.sweeps.run('merge_queue');
    await pushWorkIdle(a.sb.ctx);
    // x left with its comment; y's and z's cars are the commits the crashed run pushed, not new ones.
    expect(w.store.queued().some((e) => e.mrId === mrs[1]!.id && !e.left)).toBe(false);
    const after = carCommits(pushes);
    expect(after.get(y)).toEqual(new Set([ySha]));
    for (const shas of after.values()) expect(shas.size).toBe(1);
    await pushWorkIdle(a.sb.ctx);
    await w.ci.idle();
    expect(w.ci.runs).toBe(ciRuns);
    await w.drive(() => w.active() === 0, 'the train empties');
    for (const i of [0, 2, 3])
      expect((await w.admin.mergeRequests.get(w.project.id, mrs[i]!.id)).state).toBe('merged');
    expect((await w.admin.mergeRequests.get(w.project.id, mrs[1]!.id)).state).toBe('opened');
    expect(after.get(y)).toEqual(new Set([ySha]));
  });

  it('a car given up twice (a merge request moved ahead of it, then gone) and built again on its first base is its first commit again', async () => {
    const spy = newSpy();
    const a = await suite.world(trainRules('depth: 2'), spy);
    const { w } = a;
    // No car gets a verdict: the train only rebuilds.
    a.held.add('hookbot/train/*');
    const y = await a.open(a.master, `y-${suite.count()}`, 'calls: foo\n', { labels: ['automerge'] });
    await w.processItem(y.id);
    await w.sweeps.run('merge_queue');
    const [first] = attackCars(a);
    expect(first!.iids).toEqual([y.iid]);
    // Seconds go by between the runs (commit dates are in seconds): a car made anew has another date.
    w.clock.offset += 5_000;
    const z = await a.open(a.master, `z-${suite.count()}`, 'calls: foo\n', { labels: ['automerge'] });
    await w.processItem(z.id);
    const entry = w.store.queued().find((e) => e.mrId === z.id && !e.left)!;
    // Moved to the front, as `hookbot queue front` does.
    await w.store.enqueue({ ...entry, front: { by: 'ops', at: Date.now() + w.clock.offset } });
    await w.sweeps.run('merge_queue');
    const middle = attackCars(a);
    expect(middle.map((car) => car.iids)).toEqual([[z.iid], [y.iid]]);
    expect(middle[1]!.sha).not.toBe(first!.sha);
    // z leaves (its label taken off): y is car 1 on master again, as at first.
    w.clock.offset += 5_000;
    await w.admin.mergeRequests.update(w.project.id, z.id, { labels: '' });
    await w.processItem(z.id);
    await pushWorkIdle(a.sb.ctx);
    await w.ci.idle();
    const ciRuns = w.ci.runs;
    await w.sweeps.run('merge_queue');
    const last = attackCars(a);
    expect(last.map((car) => car.iids)).toEqual([[y.iid]]);
    expect(last[0]!.sha).toBe(first!.sha);
    expect(last[0]!.pushedAt).toBeDefined();
    await pushWorkIdle(a.sb.ctx);
    await w.ci.idle();
    expect(w.ci.runs).toBe(ciRuns);
  });
});
