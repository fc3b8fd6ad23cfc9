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
});
