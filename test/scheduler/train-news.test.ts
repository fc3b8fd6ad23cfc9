/**
 * News during a merge train's run (a wake that came while it ran: SweepRunOptions.news), against the
 * sandbox over HTTP with real git and the simulated CI (test/helpers/queue-world.ts):
 *   - the run's tail (train-tail.ts) leaves what is left of it to the next run, which finishes it,
 *     even when the queue it belongs to is empty by then;
 *   - a car whose statuses completed after the run read them joins the landing, in the same push
 *     (train-judge.ts `landLate`).
 * The news is given as the scheduler gives it: an aborted signal.
 */
import { describe, expect, it } from 'vitest';
import { commitFile, openMergeRequest, recordingLandings, type QueueWorld } from '../helpers/queue-world.ts';
import {
  carsOf,
  queueAll,
  shownMerged,
  stateOf,
  trainBranches,
  trainRules,
  trainSuite,
} from '../helpers/train-suite.ts';

interface Report {
  items: { itemKey: string; outcome: string; detail: string }[];
}

describe('news during a merge train run', { timeout: 240_000 }, () => {
  const suite = trainSuite('tn');
  const world = (lands: string[], after?: () => void) =>
    suite.world(trainRules('depth: 2'), {
      trainGit: (base) => recordingLandings(base, lands, after ? { after } : {}),
    });
  /** Two merge requests queued, their cars built and green. */
  async function twoGreenCars(w: QueueWorld) {
    const a = await openMergeRequest(w, 'a', { 'a.txt': 'calls: foo\n' });
    const b = await openMergeRequest(w, 'b', { 'b.txt': 'calls: foo\n' });
    await queueAll(w, [a.id, b.id]);
    await w.sweeps.run('merge_queue');
    const tested = carsOf(w).map((car) => car.sha!);
    expect(tested).toHaveLength(2);
    await w.ci.idle();
    return { a, b, tested };
  }
  const news = () => {
    const heard = new AbortController();
    heard.abort();
    return heard.signal;
  };
  /**
   * The run's first read of `sha`'s statuses finds none (its build had not reported yet); `heard`, if
   * given, is aborted then (the status hook arriving during the run). True once it happened.
   */
  function hideFirstRead(w: QueueWorld, sha: string, heard?: AbortController): () => boolean {
    const list = w.client.statuses.list.bind(w.client.statuses);
    let hidden = false;
    w.client.statuses.list = (projectId, at, options) => {
      if (at === sha && !hidden) {
        hidden = true;
        heard?.abort();
        return (async function* () {})();
      }
      return list(projectId, at, options);
    };
    return () => hidden;
  }

  it("leaves the tail to the next run: landed merge requests not shown merged yet are read again there, not waited for, and the folder's listing goes there too, even once the queue is empty", async () => {
    let landed = false;
    const lands: string[] = [];
    const w = await world(lands, () => (landed = true));
    const { a, b, tested } = await twoGreenCars(w);
    // A branch in the train's folder that no car holds, at a commit the train made (a car whose
    // member left the queue elsewhere): the folder's listing deletes it.
    const stray = 'hookbot/train/master/default/77';
    await w.admin.branches.create(w.project.id, { branch_name: stray, ref: tested[0]! });
    // The server is slow to show the landed merge requests merged (8.x does it in a background job).
    let showMerged = false;
    const readsAfterLanding = new Map<number, number>();
    const get = w.client.mergeRequests.get.bind(w.client.mergeRequests);
    w.client.mergeRequests.get = async (projectId, id) => {
      const mr = await get(projectId, id);
      if (landed) readsAfterLanding.set(id, (readsAfterLanding.get(id) ?? 0) + 1);
      return mr.state === 'merged' && !showMerged ? { ...mr, state: 'opened' } : mr;
    };

    const withNews = (await w.sweeps.run('merge_queue', { news: news() })) as Report;
    // Both landed in one push, and left the queue.
    expect(lands).toEqual([tested[1]]);
    expect(w.active()).toBe(0);
    for (const id of [a.id, b.id]) await shownMerged(w, id);
    // Read once at the landing and once more in the tail, never waited for: left to the next run.
    expect(readsAfterLanding.get(a.id)).toBe(2);
    expect(readsAfterLanding.get(b.id)).toBe(2);
    expect(withNews.items.filter((item) => item.outcome === 'merged')).toEqual([]);
    // The listing of the folder is the next run's too.
    expect([...(await trainBranches(w)).keys()]).toEqual([stray]);

    showMerged = true;
    // The queue is empty now: the next run drives no train, and finishes the tail all the same.
    const next = (await w.sweeps.run('merge_queue')) as Report;
    const merged = next.items.filter((item) => item.outcome === 'merged');
    expect(merged.map((item) => item.itemKey).sort()).toEqual(
      [a.id, b.id].map((id) => `merge_request:${w.project.id}:${id}`).sort(),
    );
    for (const item of merged) expect(item.detail).toContain('the server marked it merged');
    expect((await trainBranches(w)).size).toBe(0);
    // Once finished, nothing is left for a run after it.
    const after = (await w.sweeps.run('merge_queue')) as Report;
    expect(after.items).toEqual([]);
  });

  it('a tail left for a queue the next run does not drive, which cannot be finished (the target unreadable), is dropped, not tried at every run', async () => {
    const lands: string[] = [];
    const w = await world(lands);
    const { tested } = await twoGreenCars(w);
    const get = w.client.mergeRequests.get.bind(w.client.mergeRequests);
    w.client.mergeRequests.get = async (projectId, id) => {
      const mr = await get(projectId, id);
      return mr.state === 'merged' ? { ...mr, state: 'opened' } : mr;
    };
    await w.sweeps.run('merge_queue', { news: news() });
    expect(lands).toEqual([tested[1]]);
    expect(w.active()).toBe(0);
    // The queue is empty: the next run finishes the tail on its own, and the target cannot be read.
    const branches = w.client.branches.get.bind(w.client.branches);
    let refused = 0;
    w.client.branches.get = async (projectId, branch) => {
      if (branch === 'master') {
        refused++;
        throw new Error('the server failed (500)');
      }
      return branches(projectId, branch);
    };
    expect(((await w.sweeps.run('merge_queue')) as Report).items).toEqual([]);
    expect(refused).toBe(1);
    // Dropped: the run after it does not try again.
    expect(((await w.sweeps.run('merge_queue')) as Report).items).toEqual([]);
    expect(refused).toBe(1);
  });

  it('a car whose statuses completed after the run read them lands in the same push as the car ahead', async () => {
    const lands: string[] = [];
    const w = await world(lands);
    const { a, b, tested } = await twoGreenCars(w);
    // The first read of car 2's statuses in this run is from before its build finished (nothing
    // posted yet); its status hook arrives meanwhile: the news.
    const heard = new AbortController();
    const hidden = hideFirstRead(w, tested[1]!, heard);
    const report = (await w.sweeps.run('merge_queue', { news: heard.signal })) as Report;
    expect(hidden()).toBe(true);
    // One landing push, to car 2's commit: both landed.
    expect(lands).toEqual([tested[1]]);
    for (const id of [a.id, b.id]) await shownMerged(w, id);
    expect(w.active()).toBe(0);
    // What the run said of car 2 before the news (waiting) is not in its report.
    expect(report.items.filter((item) => item.outcome === 'waiting')).toEqual([]);
  });

  it('a late-joined landing that does not go (the target moved just before the push): nothing lands, and the run still says the joined car waits', async () => {
    const lands: string[] = [];
    const w = await world(lands);
    const { a, b, tested } = await twoGreenCars(w);
    const heard = new AbortController();
    const hidden = hideFirstRead(w, tested[1]!, heard);
    // Someone pushes master after the run judged the cars, before its push.
    const judge = w.client.mergeRequests.get.bind(w.client.mergeRequests);
    let moved = false;
    w.client.mergeRequests.get = async (projectId, id) => {
      if (hidden() && !moved && id === b.id) {
        moved = true;
        const res = await commitFile(w, 'master', 'elsewhere.txt', 'calls: foo\n', { message: 'elsewhere' });
        expect(res.ok).toBe(true);
      }
      return judge(projectId, id);
    };
    const report = (await w.sweeps.run('merge_queue', { news: heard.signal })) as Report;
    expect(moved).toBe(true);
    expect(lands).toEqual([]);
    for (const id of [a.id, b.id]) expect(await stateOf(w, id)).toBe('opened');
    expect(w.active()).toBe(2);
    const key = `merge_request:${w.project.id}:${b.id}`;
    expect(report.items.filter((item) => item.itemKey === key).map((item) => item.outcome)).toContain(
      'waiting',
    );
    // The next runs build both again on the moved target and land them.
    await w.drive(() => w.active() === 0, 'the train empties');
    for (const id of [a.id, b.id]) await shownMerged(w, id);
  });

  it('without news, that car waits for the next run (the run judged it on what it read)', async () => {
    const lands: string[] = [];
    const w = await world(lands);
    const { a, b, tested } = await twoGreenCars(w);
    const hidden = hideFirstRead(w, tested[1]!);
    await w.sweeps.run('merge_queue');
    expect(hidden()).toBe(true);
    expect(lands).toEqual([tested[0]]);
    await shownMerged(w, a.id);
    expect(await stateOf(w, b.id)).toBe('opened');
    expect(w.active()).toBe(1);
    await w.sweeps.run('merge_queue');
    expect(lands).toEqual([tested[0], tested[1]]);
    await shownMerged(w, b.id);
  });
});
