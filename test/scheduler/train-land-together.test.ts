/**
 * A landing and the next cars in one push (src/scheduler/sweeps/train-land.ts `pushLandingWithCars`,
 * issue 38 "no lag between rounds"): when the green cars at the front land and nothing else is judged
 * in the run, the target's fast-forward, the next cars' branches and the landed cars' branch deletions
 * go in one atomic push, so the next cars start building the moment the target lands. When that push
 * cannot go (a car's branch not as the driver knows it; the target moved), the landing is pushed alone
 * and what follows from it is as before. Against the sandbox over HTTP with real git and its CI.
 */
import { describe, expect, it } from 'vitest';
import type { PushEvent } from '../../src/sandbox/context.ts';
import {
  commitFile,
  masterLine,
  openMergeRequest,
  recordingLandings,
  type QueueWorld,
  type QueueWorldOptions,
} from '../helpers/queue-world.ts';
import { carsOf as cars, trainBranches, trainRules, trainSuite } from '../helpers/train-suite.ts';

describe('a landing and the next cars in one push', { timeout: 240_000 }, () => {
  const suite = trainSuite('tlt');
  const world = (extra: Partial<QueueWorldOptions> = {}) => suite.world(trainRules('depth: 2'), extra);
  /** Three good merge requests queued (depth 2: a and b ride, c waits), their first cars pushed. */
  async function twoCarsAndOneWaiting(w: QueueWorld) {
    const mrs = [];
    for (const name of ['a', 'b', 'c'])
      mrs.push(await openMergeRequest(w, name, { [`${name}.txt`]: 'calls: foo\n' }));
    await w.ci.idle();
    for (const mr of mrs) await w.processItem(mr.id);
    await w.sweeps.run('merge_queue');
    const first = cars(w);
    expect(first.map((car) => car.iids)).toEqual([[mrs[0]!.iid], [mrs[1]!.iid]]);
    return { mrs, first };
  }
  /** The project's pushes, in order, each with the git push it came in (the sandbox's push log). */
  function recordPushes(w: QueueWorld): PushEvent[] {
    const seen: PushEvent[] = [];
    w.sb.ctx.on.push.unshift((event) => {
      if (event.project.id === w.project.id) seen.push(event);
    });
    return seen;
  }

  it('two green cars land with the next car pushed and their branches deleted, all in one push', async () => {
    const lands: string[] = [];
    let together = 0;
    let alone = 0;
    const w = await world({
      trainGit: (base) => {
        const recording = recordingLandings(base, lands);
        return {
          ...recording,
          landWithCars: async (request) => {
            together++;
            return recording.landWithCars(request);
          },
          land: async (request) => {
            alone++;
            return recording.land(request);
          },
        };
      },
    });
    const { mrs, first } = await twoCarsAndOneWaiting(w);
    await w.ci.idle();
    const pushes = recordPushes(w);
    await w.sweeps.run('merge_queue');
    // One landing, to car 2's commit, made with the next car: no landing alone.
    expect(lands).toEqual([first[1]!.sha]);
    expect([together, alone]).toEqual([1, 0]);
    const master = (await w.admin.branches.get(w.project.id, 'master')).commit.id;
    expect(master).toBe(first[1]!.sha);
    // c rides car 1 now, on the landed commit, pushed (its branch holds it) and marked pushed.
    const [next] = cars(w);
    expect(next!.iids).toEqual([mrs[2]!.iid]);
    expect(next!.base).toBe(master);
    expect(next!.pushedAt).toBeDefined();
    expect([...(await trainBranches(w))]).toEqual([[next!.branch, next!.sha]]);
    // The server took it as one push: the target, the next car and the deletions, one after another
    // with nothing of the bot's between them.
    const refs = pushes.map((p) => p.ref.replace('refs/heads/', ''));
    expect(refs.slice(0, 4).sort()).toEqual(
      ['master', next!.branch, first[0]!.branch, first[1]!.branch].sort(),
    );
    for (const mr of mrs.slice(0, 2))
      expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('merged');
    await w.drive(() => w.active() === 0, 'the train empties');
    expect((await w.admin.mergeRequests.get(w.project.id, mrs[2]!.id)).state).toBe('merged');
    expect((await masterLine(w)).every((x) => x.passes)).toBe(true);
    expect(await trainBranches(w)).toEqual(new Map());
  });

  it("a branch in the next car's name that someone made: the one push is refused, the landing goes alone and the car after it", async () => {
    const lands: string[] = [];
    const together: boolean[] = [];
    const w = await world({
      trainGit: (base) => {
        const recording = recordingLandings(base, lands);
        return {
          ...recording,
          landWithCars: async (request) => {
            together.push(await recording.landWithCars(request));
            return together.at(-1)!;
          },
        };
      },
    });
    const { mrs, first } = await twoCarsAndOneWaiting(w);
    // Someone makes the branch c's car will take (the train's prefix is not theirs, but git lets them).
    const name = first[0]!.branch.replace(/\d+$/, String(mrs[2]!.iid));
    await w.admin.branches.create(w.project.id, { branch_name: name, ref: 'master' });
    await w.ci.idle();
    await w.sweeps.run('merge_queue');
    // The one push was refused (its lease: no such branch); landed all the same, alone, then c's car
    // pushed over the branch (with a lease on what it held, read just before).
    expect(together).toEqual([false]);
    expect(lands).toEqual([first[1]!.sha]);
    expect((await w.admin.branches.get(w.project.id, 'master')).commit.id).toBe(first[1]!.sha);
    const [next] = cars(w);
    expect(next!.iids).toEqual([mrs[2]!.iid]);
    expect(next!.pushedAt).toBeDefined();
    expect((await trainBranches(w)).get(name)).toBe(next!.sha);
    await w.drive(() => w.active() === 0, 'the train empties');
    for (const mr of mrs) expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('merged');
    expect(await trainBranches(w)).toEqual(new Map());
  });

  it('the target pushed by someone else just before the one push: nothing lands, the car built on the landing is never pushed, every car is built again on the new target', async () => {
    const lands: string[] = [];
    let moved: string | undefined;
    const w: QueueWorld = await world({
      trainGit: (base) => {
        const recording = recordingLandings(base, lands);
        return {
          ...recording,
          landWithCars: async (request) => {
            if (moved === undefined) {
              const res = await commitFile(w, 'master', 'other.txt', 'calls: foo\n', {
                message: 'Someone pushes master',
              });
              expect(res.ok).toBe(true);
              moved = (await w.admin.branches.get(w.project.id, 'master')).commit.id;
            }
            return recording.landWithCars(request);
          },
        };
      },
    });
    const { mrs, first } = await twoCarsAndOneWaiting(w);
    await w.ci.idle();
    await w.sweeps.run('merge_queue');
    expect(lands).toEqual([]);
    expect((await w.admin.branches.get(w.project.id, 'master')).commit.id).toBe(moved);
    // c's car was built on car 2's commit, and never pushed: no branch of c's, no car recorded on c.
    const c = w.store.queued().find((e) => e.mrId === mrs[2]!.id && !e.left)!;
    expect(c.car).toBeUndefined();
    const branches = await trainBranches(w);
    expect([...branches.keys()].some((b) => b.endsWith(`/${mrs[2]!.iid}`))).toBe(false);
    expect([...branches.values()]).not.toContain(first[0]!.sha);
    await w.drive(() => w.active() === 0, 'the train empties');
    for (const mr of mrs) expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('merged');
    const line = await masterLine(w);
    expect(line.map((x) => x.sha)).toContain(moved);
    expect(line.every((x) => x.passes)).toBe(true);
    expect(await trainBranches(w)).toEqual(new Map());
  });
});
