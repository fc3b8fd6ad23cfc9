/**
 * Adversarial: news during a merge train's run (docs/merge-queue.md "A run's tail, and news during a
 * run"): the cars at the front judged again on fresh reads and joining the landing before the run
 * pushes (src/scheduler/sweeps/train-judge.ts `landLate`, train-land.ts `landCars(..., together)`),
 * the run's tail handed to the next run of its queue (train-tail.ts), and the push of cars with the
 * leases the driver knows (src/git/train-git.ts `pushCars({ known })`).
 *
 * The attackers act with their own accounts only (test/helpers/attack-world.ts): a developer
 * (mallory), a reporter, a signed-in stranger (a non-member) and the fork owner. News is given as the
 * scheduler gives it, an aborted signal (any hook about a queued merge request makes one: a comment of
 * a non-member on a public project's merge request is enough, so every attacker can cause it at will).
 * "During the run" is placed with the train git's wrapper: `midRun` runs at the run's first fetch of
 * heads (building the next cars: after the front was judged, before the late judging), which is where
 * an attacker's push lands when it wins the race.
 *
 * Every attack is asserted with the SAFE outcome. One found a hole in the first version (a robustness
 * hole, not an authority one: no attacker gets a write she could not make herself): "a run that took
 * a tail over and failed: the landing it was to tell is still told by a later run" failed then and
 * passes since the fix its comment names.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.ts';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import type { TrainCar } from '../../src/state/store.ts';
import { FORK_APPROVAL_SETTLE_MS } from '../../src/scheduler/sweeps/merge-train.ts';
import type { AttackWorld } from '../helpers/attack-world.ts';
import { masterLine } from '../helpers/queue-world.ts';
import {
  QUEUE_ON_COMMAND,
  attackCars,
  carCommits,
  newSpy,
  recordPushes,
  trainAttackSuite,
  type Spy,
} from '../helpers/train-attack-suite.ts';
import { trainRules } from '../helpers/train-suite.ts';
import { waitFor } from '../helpers/wait-for.ts';

const TRAIN = (depth = 2) => trainRules(`depth: ${depth}`);

interface Report {
  items: { itemKey: string; outcome: string; detail: string }[];
}

describe(
  'adversarial: news during a merge train run (sandbox over HTTP and git)',
  { timeout: 120_000 },
  () => {
    const suite = trainAttackSuite('tna');
    const world = suite.world;
    const cars = attackCars;
    const entryOf = (a: AttackWorld, mrId: number) =>
      a.w.store.queued().find((e) => e.mrId === mrId && !e.left);
    const master = async (a: AttackWorld) =>
      (await a.w.admin.branches.get(a.w.project.id, 'master')).commit.id;
    const news = () => {
      const heard = new AbortController();
      heard.abort();
      return heard.signal;
    };
    const itemKey = (a: AttackWorld, mrId: number) => `merge_request:${a.w.project.id}:${mrId}`;

    /**
     * The first listing of `sha`'s statuses in the target is empty (the run reads the car as still
     * building: the first wave of a round's statuses), and `then` runs meanwhile; later listings are
     * the server's.
     */
    function hideFirstRead(a: AttackWorld, sha: string, then?: () => void): { hidden: boolean } {
      const seen = { hidden: false };
      const list = a.w.client.statuses.list.bind(a.w.client.statuses);
      a.w.client.statuses.list = (projectId, asked, filter, options) => {
        if (asked === sha && !seen.hidden) {
          seen.hidden = true;
          then?.();
          return (async function* () {})();
        }
        return list(projectId, asked, filter, options);
      };
      return seen;
    }

    /** `count` merge requests of the master queued, their cars pushed and every one green. */
    async function greenTrain(count: number) {
      const spy = newSpy();
      const a = await world(TRAIN(), spy);
      const mrs = await queued(
        a,
        Array.from({ length: count }, () => a.master),
      );
      const first = cars(a);
      for (const car of first) await a.ciStatus(car.sha!, 'success');
      return { spy, a, w: a.w, mrs, first };
    }

    /**
     * Three queued, every car green; `hide` keeps the first status reads from the run (calling
     * `heard` when the news comes), so cars join the landing late. The bot is killed right after that
     * landing's one push: the run lands car 2's commit, and both landed records hold one landing time,
     * written before the push.
     */
    async function crashAfterJoinedPush(
      hide: (a: AttackWorld, first: TrainCar[], heard: () => void) => void,
    ) {
      const { spy, a, w, mrs, first } = await greenTrain(3);
      const heard = new AbortController();
      hide(a, first, () => heard.abort());
      const pushes = recordPushes(a);
      let records: (number | undefined)[] = [];
      spy.onePushOnce = async (request, real) => {
        records = mrs.slice(0, 2).map((mr) => entryOf(a, mr.id)?.car?.landing);
        expect(await real(request)).toBe(true);
        throw new Error('killed right after the one push');
      };
      await w.sweeps.run('merge_queue', { news: heard.signal });
      expect(spy.lands).toEqual([first[1]!.sha]);
      expect(records[0]).toBeDefined();
      expect(records[1]).toBe(records[0]);
      return { spy, a, w, mrs, first, pushes };
    }

    /** The CI's own `ci/test` passed on `sha` for a train branch (the commit was tested as a car). */
    async function testedAsCar(a: AttackWorld, sha: string): Promise<boolean> {
      const ci = `${a.w.path.split('/')[0]}-ci`;
      for await (const s of a.w.admin.statuses.list(a.w.project.id, sha, { all: true }))
        if (
          s.name === 'ci/test' &&
          s.status === 'success' &&
          s.ref?.startsWith('hookbot/train/') &&
          s.author?.username === ci
        )
          return true;
      return false;
    }

    /** Every landing went to a commit the CI passed as a car, once each, and master's line passes. */
    async function onlyTestedLanded(a: AttackWorld, spy: Spy): Promise<void> {
      for (const sha of spy.lands) expect(await testedAsCar(a, sha)).toBe(true);
      expect(new Set(spy.lands).size).toBe(spy.lands.length);
      expect((await masterLine(a.w)).every((x) => x.passes)).toBe(true);
    }

    /**
     * One merge request per author (with `contents`, else a call of `foo`), labelled and evaluated;
     * a run then pushes the first cars.
     */
    async function queued(a: AttackWorld, authors: AttackPerson[], contents?: string[]) {
      const mrs = [];
      for (const [i, who] of authors.entries())
        mrs.push(
          await a.open(who, `${'abcdefgh'[i]}-${suite.count()}`, contents?.[i] ?? 'calls: foo\n', {
            labels: ['automerge'],
          }),
        );
      for (const mr of mrs) await a.w.processItem(mr.id);
      await a.w.sweeps.run('merge_queue');
      return mrs;
    }
    type AttackPerson = AttackWorld['master'];

    /**
     * Resisted (developer). Her merge request is car 1, green, but the run's first read of its
     * statuses is from before its build finished (waiting). After the run read her merge request and
     * before the late judging, she pushes an unreviewed commit to her source branch, and news comes.
     * The late judging reads her merge request afresh: not at the head the car tested, so the car does
     * not join any landing (nothing lands in that run), and the report still says it waits. Her new
     * commit reaches master only inside a car the CI passed.
     */
    it('developer: her source branch pushed between the run reading it and the late judging: her car does not join, nothing untested lands', async () => {
      const spy = newSpy();
      const a = await world(TRAIN(), spy);
      const { w } = a;
      const [mine, other] = await queued(a, [a.mallory, a.master]);
      const first = cars(a);
      expect(first.map((car) => car.iids)).toEqual([[mine!.iid], [other!.iid]]);
      for (const car of first) await a.ciStatus(car.sha!, 'success');
      const before = await master(a);
      const heard = new AbortController();
      const seen = hideFirstRead(a, first[0]!.sha!);
      let unreviewed = '';
      spy.midRun = async () => {
        unreviewed = await a.commit(
          a.mallory,
          `a-${suite.count()}`,
          'backdoor.txt',
          'calls: foo\nunreviewed\n',
        );
        heard.abort();
      };
      const report = (await w.sweeps.run('merge_queue', { news: heard.signal })) as Report;
      expect(seen.hidden).toBe(true);
      expect(unreviewed).not.toBe('');
      expect(spy.lands).toEqual([]);
      expect(await master(a)).toBe(before);
      // What the run said of her car (waiting) is still said: the late judging did not take it.
      expect(
        report.items.some((item) => item.itemKey === itemKey(a, mine!.id) && item.outcome === 'waiting'),
      ).toBe(true);
      await w.drive(() => w.active() === 0, 'the train empties');
      await onlyTestedLanded(a, spy);
      expect(await a.on('master', first[0]!.sha!)).toBe(false);
    });

    /**
     * Resisted (developer). Her merge request is car 2, which joins car 1's landing late (news). Right
     * before the one push (after the late judging read her merge request and its statuses), she pushes
     * an unreviewed commit to her source branch. What lands is the tested car; the next car, built on
     * it, does not hold her new commit either.
     */
    it('developer: her source branch pushed after the late judging and before the one push: only the tested car lands', async () => {
      const spy = newSpy();
      const a = await world(TRAIN(), spy);
      const { w } = a;
      const [, mine, third] = await queued(a, [a.master, a.mallory, a.master]);
      const first = cars(a);
      expect(first.map((car) => car.iids)).toEqual([[first[0]!.iids[0]], [mine!.iid]]);
      for (const car of first) await a.ciStatus(car.sha!, 'success');
      const heard = new AbortController();
      hideFirstRead(a, first[1]!.sha!, () => heard.abort());
      let unreviewed = '';
      spy.beforeOnePush = async () => {
        unreviewed = await a.commit(
          a.mallory,
          `b-${suite.count()}`,
          'backdoor.txt',
          'calls: foo\nunreviewed\n',
        );
      };
      const report = (await w.sweeps.run('merge_queue', { news: heard.signal })) as Report;
      expect(unreviewed).not.toBe('');
      // One landing, to car 2's tested commit: car 2 joined car 1's landing.
      expect(spy.lands).toEqual([first[1]!.sha]);
      expect(await master(a)).toBe(first[1]!.sha);
      expect(await a.on('master', unreviewed)).toBe(false);
      const [next] = cars(a);
      expect(next!.iids).toEqual([third!.iid]);
      const parents = (await w.admin.commits.get(w.project.id, next!.sha!)).parent_ids;
      expect(parents).not.toContain(unreviewed);
      expect(parents).toContain(first[1]!.sha);
      // The report says it landed (in this run, or in the next, which reads it again), never that it waits.
      const next2 = (await w.sweeps.run('merge_queue')) as Report;
      const mineSaid = [...report.items, ...next2.items].filter(
        (item) => item.itemKey === itemKey(a, mine!.id),
      );
      expect(mineSaid.map((item) => item.outcome)).toEqual(['merged']);
      expect(mineSaid[0]!.detail).toContain(first[1]!.sha!.slice(0, 7));
      await onlyTestedLanded(a, spy);
    });

    /**
     * Resisted (a car behind one that failed). Depth 3: car 1 passed (its first read is from before its
     * build finished), car 2 failed (its merge request calls a name nobody defines), car 3 passed (its
     * merge request defines it). The late judging takes the consecutive green cars from the front only:
     * car 1 joins, car 2 stops it, and car 3, behind the failure, does not join. Nothing of car 2 lands in
     * that run.
     */
    it('a car behind one that failed never joins the late landing', async () => {
      const spy = newSpy();
      const a = await world(TRAIN(3), spy);
      const { w } = a;
      const mrs = await queued(a, [a.master, a.mallory, a.mallory], ['x\n', 'calls: bar\n', 'def bar\n']);
      const first = cars(a);
      expect(first.map((car) => car.iids)).toEqual(mrs.map((mr) => [mr.iid]));
      await a.ciStatus(first[0]!.sha!, 'success');
      await a.ciStatus(first[1]!.sha!, 'failed');
      await a.ciStatus(first[2]!.sha!, 'success');
      const heard = new AbortController();
      hideFirstRead(a, first[0]!.sha!, () => heard.abort());
      await w.sweeps.run('merge_queue', { news: heard.signal });
      expect(spy.lands).toEqual([first[0]!.sha]);
      expect(await master(a)).toBe(first[0]!.sha);
      expect(await a.on('master', mrs[1]!.head)).toBe(false);
      expect(entryOf(a, mrs[1]!.id)).toBeDefined();
      expect(entryOf(a, mrs[2]!.id)).toBeDefined();
    });

    /**
     * Resisted (developer, reporter, non-member, fork owner). The front car's build never reports
     * (its branch's builds hang). A status that would make it green comes only from people the rules do
     * not trust or from elsewhere: Mallory's own `ci/test: success` on the car's commit and branch (a
     * developer may post one), the CI's success on the same commit built on a branch of hers, and the
     * reporter's, the stranger's and the fork owner's attempts (refused by the server). Runs with news,
     * one after the other, judge the car late each time: it never lands, each run costs the same calls
     * (no growth from the wakes), and each says it waits.
     */
    it('statuses from the untrusted, from another branch, or refused: news never lands a car whose own build did not pass, and repeated wakes cost no more each time', async () => {
      const spy = newSpy();
      const a = await world(TRAIN(), spy);
      const { w } = a;
      a.held.add('hookbot/train/*');
      const mrs = await queued(a, [a.master, a.master]);
      const first = cars(a);
      expect(first).toHaveLength(2);
      const car = first[0]!;
      await a.ciStatus(car.sha!, 'pending');
      // Mallory's own status on the car's commit and branch: the server takes it, the bot does not.
      await a.mallory.client.statuses.create(w.project.id, car.sha!, {
        state: 'success',
        name: 'ci/test',
        ref: car.branch,
      });
      // The same commit on a branch of hers: the CI builds it there and passes it.
      await a.createBranch(a.mallory, w.project.id, `side-${suite.count()}`, car.sha!);
      await a.ciStatus(car.sha!, 'success');
      for (const who of [a.reporter, a.stranger, a.outsider]) {
        const posted = await who.client.statuses
          .create(w.project.id, car.sha!, { state: 'success', name: 'ci/test', ref: car.branch })
          .then(
            () => 'posted',
            (error: unknown) => error,
          );
        expect(posted).toBeInstanceOf(ApiError);
      }
      const calls: number[] = [];
      for (let i = 0; i < 3; i++) {
        const before = w.client.http.stats.calls;
        const report = (await w.sweeps.run('merge_queue', { news: news() })) as Report;
        calls.push(w.client.http.stats.calls - before);
        expect(
          report.items.some((item) => item.itemKey === itemKey(a, mrs[0]!.id) && item.outcome === 'waiting'),
        ).toBe(true);
      }
      expect(spy.lands).toEqual([]);
      expect(await a.on('master', car.sha!)).toBe(false);
      expect(calls[1]).toBe(calls[2]);
      expect(cars(a).map((c) => c.sha)).toEqual(first.map((c) => c.sha));
    });

    /**
     * Resisted (a failure that comes late). Car 1 passed, car 2's first read is from before its build
     * finished, and its build fails (car 3, behind it, passes). Car 1's landing is recorded; the late
     * judging reads car 2 again, red: nothing joins, and car 3 does not jump over it.
     */
    it('a car that turns red after the first read stops the late landing: only the car ahead lands', async () => {
      const spy = newSpy();
      const a = await world(TRAIN(3), spy);
      const { w } = a;
      const mrs = await queued(a, [a.master, a.mallory, a.mallory], ['x\n', 'calls: bar\n', 'def bar\n']);
      const first = cars(a);
      await a.ciStatus(first[0]!.sha!, 'success');
      await a.ciStatus(first[1]!.sha!, 'failed');
      await a.ciStatus(first[2]!.sha!, 'success');
      const heard = new AbortController();
      const seen = hideFirstRead(a, first[1]!.sha!, () => heard.abort());
      await w.sweeps.run('merge_queue', { news: heard.signal });
      expect(seen.hidden).toBe(true);
      expect(spy.lands).toEqual([first[0]!.sha]);
      expect(await a.on('master', mrs[1]!.head)).toBe(false);
      expect(await a.on('master', first[2]!.sha!)).toBe(false);
    });

    /**
     * Resisted (developer: a missing status). The rule requires `ci/test` and `ci/lint`; the CI posts
     * only `ci/test`. Mallory posts `ci/lint: success` herself on the car's commit and branch. With news
     * (the late judging), the car still never lands: `ci/lint` is missing as far as the bot trusts.
     */
    it('developer: a required status nobody trusted posted, posted by herself: news never lands the car', async () => {
      const spy = newSpy();
      const a = await world(
        `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test, ci/lint], status_timeout: 10m, depth: 2 }
`,
        spy,
      );
      const { w } = a;
      const mrs = await queued(a, [a.mallory, a.master]);
      const first = cars(a);
      expect(first).toHaveLength(2);
      for (const car of first) {
        await a.ciStatus(car.sha!, 'success');
        await a.mallory.client.statuses.create(w.project.id, car.sha!, {
          state: 'success',
          name: 'ci/lint',
          ref: car.branch,
        });
      }
      for (let i = 0; i < 2; i++) {
        const report = (await w.sweeps.run('merge_queue', { news: news() })) as Report;
        const said = report.items.find((item) => item.itemKey === itemKey(a, mrs[0]!.id));
        expect(said?.outcome).toBe('waiting');
        expect(said?.detail).toContain('ci/lint');
      }
      expect(spy.lands).toEqual([]);
      expect(await a.on('master', first[0]!.sha!)).toBe(false);
    });

    /**
     * Resisted (fork owner). A master approved her fork's merge request at H1 by a comment; it rides
     * car 1, green. After the run read it, and before the late judging, she pushes H2 to her fork (news
     * comes). The late judging reads her merge request afresh (H2, not the head the car tested): it does
     * not join; the next run takes her out. H2 never lands, nor rides a car.
     */
    it('fork owner: a push to her fork after the approval, during the run: the late judging does not land her car, H2 never lands', async () => {
      const spy = newSpy();
      const a = await world(QUEUE_ON_COMMAND, spy, { fork: true });
      const { w } = a;
      const mine = await a.fromFork('feat', 'calls: foo\n');
      await w.processNote(mine.id, await a.comment(a.master, mine.id, '/hookbot merge'));
      w.clock.offset += FORK_APPROVAL_SETTLE_MS;
      await w.sweeps.run('merge_queue');
      const [car] = cars(a);
      expect(car!.heads).toEqual([mine.head]);
      await a.ciStatus(car!.sha!, 'success');
      const heard = new AbortController();
      hideFirstRead(a, car!.sha!);
      let h2 = '';
      spy.midRun = async () => {
        h2 = await a.commit(a.outsider, 'feat', 'planted.txt', 'exfiltrate secrets\n', a.forkId);
        await waitFor(async () => ((await a.mr(mine.id)).sha === h2 ? true : undefined), 10_000, 'H2 seen');
        heard.abort();
      };
      await w.sweeps.run('merge_queue', { news: heard.signal });
      expect(h2).not.toBe('');
      expect(spy.lands).toEqual([]);
      await w.drive(() => w.active() === 0, 'the train stands still');
      expect((await a.mr(mine.id)).state).toBe('opened');
      expect(await a.on('master', h2)).toBe(false);
      expect(await a.on('master', car!.sha!)).toBe(false);
      for (const sha of (await a.trainBranches()).values()) {
        const parents = (await w.admin.commits.get(w.project.id, sha)).parent_ids;
        expect(parents).not.toContain(h2);
      }
    });

    /**
     * Resisted (fork owner). Mallory (a developer) approved the fork's merge request by her command; it
     * rides car 1, green. During the run (after its first read), Mallory loses her developer access (a
     * reporter now), and news comes. The late judging evaluates the rule again (her access read again):
     * it no longer holds, so the car does not join; the fork's code never lands on her word.
     */
    it("fork owner: the approver loses her access during the run: the late judging's fresh evaluation keeps the car out", async () => {
      const spy = newSpy();
      const a = await world(QUEUE_ON_COMMAND, spy, { fork: true });
      const { w } = a;
      const mine = await a.fromFork('feat2', 'calls: foo\n');
      await w.processNote(mine.id, await a.comment(a.mallory, mine.id, '/hookbot merge'));
      w.clock.offset += FORK_APPROVAL_SETTLE_MS;
      await w.sweeps.run('merge_queue');
      const [car] = cars(a);
      expect(car!.heads).toEqual([mine.head]);
      await a.ciStatus(car!.sha!, 'success');
      const heard = new AbortController();
      hideFirstRead(a, car!.sha!);
      let demoted = false;
      spy.midRun = async () => {
        demoted = true;
        const db = a.sb.ctx.db;
        const member = db.data.groupMembers.find(
          (m) => m.group_id === w.groupId && m.user_id === a.mallory.id,
        )!;
        member.access_level = 20;
        db.changed();
        heard.abort();
      };
      await w.sweeps.run('merge_queue', { news: heard.signal });
      expect(demoted).toBe(true);
      expect(spy.lands).toEqual([]);
      await w.drive(() => w.active() === 0, 'the train stands still');
      expect((await a.mr(mine.id)).state).toBe('opened');
      expect(await a.on('master', mine.head)).toBe(false);
    });

    /**
     * Resisted (developer, reporter). A run with news gives up car 2 (its merge request was closed) and
     * leaves its branch, and the listing of the train's folder, to the next run. Meanwhile Mallory
     * pushes a commit of hers onto that branch, and makes a branch of her own in the folder; the
     * reporter cannot push there at all. The next run takes the tail over: the branch is deleted only
     * with a lease on the car's own commit, so hers stays; the listing deletes only commits the train
     * made, so her own branch stays. Neither of her commits reaches master.
     */
    it("developer: her commits on a given-up car's branch and in the train's folder, while the cleanup is carried to the next run: both kept, never landed", async () => {
      const warnings: string[] = [];
      const spy = newSpy();
      const a = await world(TRAIN(), spy, { warnings });
      const { w } = a;
      const mrs = await queued(a, [a.master, a.master, a.master]);
      const first = cars(a);
      expect(first.map((car) => car.iids)).toEqual([[mrs[0]!.iid], [mrs[1]!.iid]]);
      for (const car of first) await a.ciStatus(car.sha!, 'success');
      await w.admin.mergeRequests.close(w.project.id, mrs[1]!.id);
      await w.sweeps.run('merge_queue', { news: news() });
      expect(spy.lands).toEqual([first[0]!.sha]);
      const given = first[1]!.branch;
      // Carried: the given-up car's branch is still there, at its commit.
      expect((await a.trainBranches()).get(given)).toBe(first[1]!.sha);
      const hers = await a.commit(a.mallory, given, 'hers.txt', 'calls: foo\nhers\n');
      const own = `hookbot/train/master/default/9${suite.count()}99`;
      const ownSha = await a.commit(a.mallory, own, 'own.txt', 'calls: foo\nown\n');
      const refused = await a.reporter.client.files
        .create(w.project.id, {
          file_path: 'rep.txt',
          branch_name: given,
          content: 'reporter\n',
          commit_message: 'reporter',
        })
        .then(
          () => 'pushed',
          (error: unknown) => error,
        );
      expect(refused).toBeInstanceOf(ApiError);
      await w.sweeps.run('merge_queue');
      const branches = await a.trainBranches();
      expect(branches.get(given)).toBe(hers);
      expect(branches.get(own)).toBe(ownSha);
      expect(warnings.some((line) => line.includes(`left the branch ${given} where it is`))).toBe(true);
      await w.drive(() => w.active() === 0, 'the train empties');
      expect((await a.mr(mrs[2]!.id)).state).toBe('merged');
      expect(await a.on('master', hers)).toBe(false);
      expect(await a.on('master', ownSha)).toBe(false);
      expect((await a.trainBranches()).get(given)).toBe(hers);
      await onlyTestedLanded(a, spy);
    });

    /**
     * Resisted (a carried cleanup against a live car). Car 2's merge request is pushed by its author: a
     * run with news gives car 2 up and leaves its branch (at the old car's commit) to the next run, and
     * the merge request enters the queue again, behind. The next run (news again) takes the tail over
     * and builds the merge request's new car on the SAME branch name: the carried deletion (a lease on
     * the old commit) and the listing never take the live car's branch. Every car holds its own recorded
     * commit on its branch after each run, and every merge request lands once.
     */
    it('a carried cleanup never deletes the branch of a live car built later under the same name', async () => {
      const spy = newSpy();
      const infos: { fields: object; message: string }[] = [];
      const a = await world(TRAIN(), spy, { infos });
      const { w } = a;
      const mrs = await queued(a, [a.master, a.master, a.master, a.master]);
      const first = cars(a);
      expect(first.map((car) => car.iids)).toEqual([[mrs[0]!.iid], [mrs[1]!.iid]]);
      for (const car of first) await a.ciStatus(car.sha!, 'success');
      await a.commit(a.master, `b-${suite.count()}`, 'more.txt', 'calls: foo\nmore\n');
      const carried = () =>
        infos.filter((x) => x.message.includes('its tail is left to the next run')).map((x) => x.fields) as {
          branches: number;
        }[];
      const everyCarOnItsBranch = async () => {
        const branches = await a.trainBranches();
        for (const car of cars(a))
          if (car.pushedAt !== undefined) expect(branches.get(car.branch)).toBe(car.sha);
      };
      await w.sweeps.run('merge_queue', { news: news() });
      // Car 2 given up, its branch left for the next run (still at the old car's commit).
      expect(carried().at(-1)?.branches).toBe(1);
      expect((await a.trainBranches()).get(first[1]!.branch)).toBe(first[1]!.sha);
      expect(cars(a).some((car) => car.iids.includes(mrs[1]!.iid))).toBe(false);
      await everyCarOnItsBranch();
      // Meanwhile Mallory pushes a commit of hers onto the carried branch.
      const hers = await a.commit(a.mallory, first[1]!.branch, 'hers.txt', 'calls: foo\nhers\n');
      await w.ci.idle();
      await w.sweeps.run('merge_queue', { news: news() });
      // The merge request rides again, on the same branch name, with another commit: kept. The train's
      // folder is the bot's (docs/merge-queue.md "The train's branches"): the car is pushed over her
      // commit with a lease on what the branch held, and holds nothing of hers.
      const again = cars(a).find((car) => car.iids.includes(mrs[1]!.iid))!;
      expect(again.branch).toBe(first[1]!.branch);
      expect(again.sha).not.toBe(first[1]!.sha);
      expect(again.pushedAt).toBeDefined();
      expect((await w.admin.commits.get(w.project.id, again.sha!)).parent_ids).not.toContain(hers);
      await everyCarOnItsBranch();
      for (let i = 0; i < 10 && w.active() > 0; i++) {
        await w.ci.idle();
        await w.sweeps.run('merge_queue', { news: news() });
        await everyCarOnItsBranch();
      }
      await w.drive(() => w.active() === 0, 'the train empties');
      for (const mr of mrs) expect((await a.mr(mr.id)).state).toBe('merged');
      expect(await a.on('master', hers)).toBe(false);
      await onlyTestedLanded(a, spy);
    });

    /**
     * Found (low: a landing never told). A run with news lands car 1 (the server has not shown its merge
     * request merged yet) and gives car 2 up (its merge request closed): the reads again and the branch
     * go to the next run (train-tail.ts). That run takes the tail over (`takeOverTail` removes it from
     * `tails` at once) and then throws (here a read of the server fails once, in train-watch.ts
     * `cutStaleRiders`; any throw of `driveTrain` after `takeOverTail` does): the tail lived only in that
     * run's memory and is gone. The landed merge request is never told landed (no `merged` step in any
     * report, `events.landed` never called: explain and the landing metrics never hear of it), and the
     * given-up branch waits for a landing run's listing. Without news the landing run would have told
     * it itself. Fixed: a run that throws after `takeOverTail` hands what it holds of a tail back to
     * `tails` (train-tail.ts `giveBackTail`: its `stale` minus the branches a car holds, `list`,
     * `unconfirmed`) before rethrowing, and the next run or `leftTail` finishes it.
     */
    it('a run that took a tail over and failed: the landing it was to tell is still told by a later run', async () => {
      const { spy, a, w, mrs, first } = await greenTrain(3);
      let hideMerged = true;
      let failOnce: number | undefined;
      const get = w.client.mergeRequests.get.bind(w.client.mergeRequests);
      w.client.mergeRequests.get = async (projectId, id) => {
        if (id === failOnce) {
          failOnce = undefined;
          throw new Error('the server failed once (500)');
        }
        const mr = await get(projectId, id);
        return mr.state === 'merged' && hideMerged ? { ...mr, state: 'opened' } : mr;
      };
      await w.admin.mergeRequests.close(w.project.id, mrs[1]!.id);
      const reports = [(await w.sweeps.run('merge_queue', { news: news() })) as Report];
      expect(spy.lands).toEqual([first[0]!.sha]);
      expect(reports[0]!.items.some((item) => item.outcome === 'merged')).toBe(false);
      // The next run fails once it took the tail over (reading the next car's merge request).
      failOnce = mrs[2]!.id;
      reports.push((await w.sweeps.run('merge_queue')) as Report);
      expect(failOnce).toBeUndefined();
      expect(reports[1]!.items.some((item) => item.outcome === 'error')).toBe(true);
      hideMerged = false;
      reports.push(...(await w.drive(() => w.active() === 0, 'the train empties')));
      const told = reports.flatMap((r) => r.items).filter((item) => item.itemKey === itemKey(a, mrs[0]!.id));
      expect(told.map((item) => item.outcome)).toContain('merged');
    });

    /**
     * Resisted (crash). Car 1 lands, car 2 joins its landing late (news), and the bot is killed right
     * after the one push went, before it wrote anything of it. Both records held the same landing time,
     * so the next run finds both landed (master at car 2's commit, car 1 below it in the same landing):
     * nothing is landed again, no car is pushed again, and each merge request is merged once.
     */
    it('crash right after the one push of a late-joined landing: the next run finds every joined car landed, lands nothing twice', async () => {
      const { spy, a, w, mrs, first, pushes } = await crashAfterJoinedPush((a, first, heard) =>
        hideFirstRead(a, first[1]!.sha!, heard),
      );
      expect(await master(a)).toBe(first[1]!.sha);
      const next = entryOf(a, mrs[2]!.id)!.car!;
      expect(next.pushedAt).toBeUndefined();
      await pushWorkIdle(a.sb.ctx);
      const before = pushes.length;
      await w.sweeps.run('merge_queue', { news: news() });
      await pushWorkIdle(a.sb.ctx);
      expect(pushes.slice(before).filter((p) => !/^0+$/.test(p.after))).toEqual([]);
      expect(spy.lands).toEqual([first[1]!.sha]);
      expect(entryOf(a, mrs[0]!.id)).toBeUndefined();
      expect(entryOf(a, mrs[1]!.id)).toBeUndefined();
      for (const mr of mrs.slice(0, 2))
        await waitFor(
          async () => ((await a.mr(mr.id)).state === 'merged' ? true : undefined),
          10_000,
          'merged',
        );
      await w.drive(() => w.active() === 0, 'the train empties');
      expect((await a.mr(mrs[2]!.id)).state).toBe('merged');
      for (const shas of carCommits(pushes).values()) expect(shas.size).toBe(1);
      const line = (await masterLine(w)).map((x) => x.sha);
      expect(line.filter((sha) => sha === first[1]!.sha)).toHaveLength(1);
      await onlyTestedLanded(a, spy);
    });

    /**
     * Resisted (crash). Neither car had finished when the run first read them; both are green when the
     * late judging reads them again, and land together, in a landing the late judging records itself
     * (no landing was recorded before it). The bot is killed right after the one push: the next run
     * finds both landed, and pushes nothing.
     */
    it('crash right after the one push of a landing the late judging made alone: both cars found landed, nothing pushed again', async () => {
      const { spy, a, w, mrs, first, pushes } = await crashAfterJoinedPush((a, first, heard) => {
        hideFirstRead(a, first[0]!.sha!, heard);
        hideFirstRead(a, first[1]!.sha!);
      });
      await pushWorkIdle(a.sb.ctx);
      const before = pushes.length;
      await w.sweeps.run('merge_queue');
      await pushWorkIdle(a.sb.ctx);
      // Master is not pushed again, and no joined car's branch is pushed again (the one car pushed is
      // the third merge request's first: there was no room for it in the run that crashed).
      const after = pushes.slice(before).filter((p) => !/^0+$/.test(p.after));
      expect(after.filter((p) => p.ref === 'refs/heads/master')).toEqual([]);
      expect(after.map((p) => p.ref)).toEqual([`refs/heads/hookbot/train/master/default/${mrs[2]!.iid}`]);
      expect(spy.lands).toEqual([first[1]!.sha]);
      expect(entryOf(a, mrs[0]!.id)).toBeUndefined();
      expect(entryOf(a, mrs[1]!.id)).toBeUndefined();
      await w.drive(() => w.active() === 0, 'the train empties');
      for (const mr of mrs) expect((await a.mr(mr.id)).state).toBe('merged');
      for (const shas of carCommits(pushes).values()) expect(shas.size).toBe(1);
      await onlyTestedLanded(a, spy);
    });

    /**
     * The cleanup a run took over waits for one run at most (docs/merge-queue.md), also when that run's
     * landing is refused. A run with news gives car 2 up (its merge request closed) and leaves its
     * branch to the next run; the next run takes the tail over, and the server refuses its landing (a
     * push rule): the given-up branch must still be deleted by it.
     */
    it('a run that took a cleanup over and whose landing is refused: the given-up branch is still deleted', async () => {
      const { spy, a, w, mrs, first } = await greenTrain(3);
      await w.admin.mergeRequests.close(w.project.id, mrs[1]!.id);
      await w.sweeps.run('merge_queue', { news: news() });
      expect(spy.lands).toEqual([first[0]!.sha]);
      const given = first[1]!.branch;
      expect((await a.trainBranches()).get(given)).toBe(first[1]!.sha);
      const [next] = cars(a);
      expect(next!.iids).toEqual([mrs[2]!.iid]);
      await a.ciStatus(next!.sha!, 'success');
      spy.refuse = true;
      const report = (await w.sweeps.run('merge_queue')) as Report;
      expect(report.items.some((item) => item.outcome === 'error' && item.detail.includes('refused'))).toBe(
        true,
      );
      expect((await a.trainBranches()).has(given)).toBe(false);
    });

    /**
     * Resisted (wakes for ever). Every run hears news (a non-member comments on a queued merge request
     * again and again), and the server never shows the landed merge requests merged. Each run reads them
     * once, across runs five times in all, then says so once; the tail is then empty, and the runs after
     * cost nothing.
     */
    it('news on every run and a server that never shows the landing merged: the reads stop at five, each landing is said once, then nothing', async () => {
      const { spy, a, w, mrs, first } = await greenTrain(2);
      const reads = new Map<number, number>();
      const get = w.client.mergeRequests.get.bind(w.client.mergeRequests);
      w.client.mergeRequests.get = async (projectId, id) => {
        const mr = await get(projectId, id);
        if (mr.state !== 'merged') return mr;
        reads.set(id, (reads.get(id) ?? 0) + 1);
        return { ...mr, state: 'opened' };
      };
      const said = new Map<string, number>();
      const calls: number[] = [];
      for (let i = 0; i < 9; i++) {
        const before = w.client.http.stats.calls;
        const report = (await w.sweeps.run('merge_queue', { news: news() })) as Report;
        calls.push(w.client.http.stats.calls - before);
        for (const item of report.items)
          if (item.outcome === 'merged') said.set(item.itemKey, (said.get(item.itemKey) ?? 0) + 1);
      }
      expect(spy.lands).toEqual([first[1]!.sha]);
      for (const mr of mrs) {
        await waitFor(async () => ((await get(w.project.id, mr.id)).state === 'merged' ? true : undefined));
        expect(said.get(itemKey(a, mr.id))).toBe(1);
        expect(reads.get(mr.id)).toBeLessThanOrEqual(5);
      }
      expect(calls.slice(-3)).toEqual([0, 0, 0]);
    });
  },
);
