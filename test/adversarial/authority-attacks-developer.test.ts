/**
 * Adversarial, issue 36's class ("whose authority?"), continued (authority-attacks.test.ts plays the
 * outsiders): a DEVELOPER (mallory, a developer of the project's group) tries to land code on
 * protected `master` without what her rule requires (a master's command, a trusted CI's statuses, a
 * target branch), and to make the merge train push, delete or stall where she could not, against the
 * bot's parts wired as in production (queue-world.ts) and the sandbox, with `rules.status_authors`
 * naming the CI's account. She acts with her own token and her own pushes (the files API as her,
 * which pushes as she could over git), comments, labels and merge request edits.
 *
 * An attack the bot resists is asserted as resisted; one that works is asserted with the SAFE
 * outcome, so it fails until the hole is closed (the comment above each says where).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.ts';
import { createClient, type Client } from '../../src/api/client.ts';
import { addUser } from '../../src/sandbox/factories.ts';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { gitUser } from '../helpers/git-user.ts';
import { makeQueueWorld, type QueueWorld } from '../helpers/queue-world.ts';
import { waitFor } from '../helpers/wait-for.ts';

interface Person {
  id: number;
  username: string;
  client: Client;
}

interface Developers {
  w: QueueWorld;
  master: Person;
  mallory: Person;
  /** A signed-in user with no membership (the project is public: she may read and comment). */
  stranger: Person;
  /** The CI's account (trusted by `rules.status_authors`). */
  ci: Client;
  /** Branches whose builds post `pending` and never finish (a build still running). */
  held: Set<string>;
  /** A commit by `who` on `branch` (created off master when new); its sha, the server's work after it done. */
  commit(who: Person, branch: string, file: string, content: string): Promise<string>;
  /** `who` opens a merge request from a new branch with one file into `target`. */
  open(
    who: Person,
    branch: string,
    content: string,
    options?: { target?: string; labels?: string[] },
  ): Promise<{ id: number; iid: number; head: string }>;
  comment(who: Person, mrId: number, body: string): Promise<number>;
  on(branch: string, sha: string): Promise<boolean>;
  mr(mrId: number): Promise<{ state: string; merge_when_build_succeeds: boolean; target_branch: string }>;
  ciStatus(sha: string, state: string): Promise<void>;
  trainBranches(): Promise<Map<string, string>>;
}

describe(
  "adversarial: a developer against the bot's authority (sandbox over HTTP and git)",
  { timeout: 180_000 },
  () => {
    let sb: Sandbox;
    let workDir = '';
    const cleanups: (() => Promise<void>)[] = [];
    beforeAll(async () => {
      sb = await startSandbox({ adminToken: 'aad-root-token', hookTimeoutMs: 2_000 });
      workDir = await mkdtemp(path.join(tmpdir(), 'hookbot-authority-dev-'));
    });
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });
    afterAll(async () => {
      await sb?.close();
      await rm(workDir, { recursive: true, force: true });
    });

    let n = 0;
    async function developers(rules: string, warnings?: string[]): Promise<Developers> {
      n += 1;
      const prefix = `aad${n}`;
      const held = new Set<string>();
      const w = await makeQueueWorld(sb, {
        prefix,
        rules,
        workDir,
        statusAuthors: ['ci'],
        modeOf: (branch) =>
          [...held].some(
            (one) => branch === one || (one.endsWith('*') && branch.startsWith(one.slice(0, -1))),
          )
            ? 'pending-forever'
            : 'normal',
        ...(warnings
          ? {
              log: {
                info: () => undefined,
                warn: (_fields: object, message: string) => void warnings.push(message),
                error: (_fields: object, message: string) => void warnings.push(message),
              },
            }
          : {}),
      });
      cleanups.push(() => w.close());
      const db = sb.ctx.db;
      w.project.visibility_level = 20;
      const person = (name: string, level?: number): Person => {
        const username = `${prefix}-${name}`;
        const token = `${username}-token-0123456789`;
        const user = addUser(db, { username, private_token: token, password: `${username}-password` });
        if (level !== undefined)
          db.data.groupMembers.push({ group_id: w.groupId, user_id: user.id, access_level: level });
        return {
          id: user.id,
          username,
          client: createClient({ baseUrl: sb.url, token, retry: { limit: 0 } }),
        };
      };
      const master = person('master', 40);
      const mallory = person('mallory', 30);
      const stranger = person('stranger');
      db.changed();
      await w.admin.branches.protect(w.project.id, 'master');
      const ciUser = db.data.users.find((u) => u.username === `${prefix}-ci`)!;
      const ci = createClient({ baseUrl: sb.url, token: ciUser.private_token, retry: { limit: 0 } });
      const projectId = w.project.id;
      async function commit(who: Person, branch: string, file: string, content: string): Promise<string> {
        const branchExists = await w.admin.branches.get(projectId, branch).then(
          () => true,
          () => false,
        );
        if (!branchExists)
          await who.client.branches.create(projectId, { branch_name: branch, ref: 'master' });
        const fileExists = await w.admin.files.get(projectId, file, branch).then(
          () => true,
          () => false,
        );
        const change = {
          file_path: file,
          branch_name: branch,
          content,
          commit_message: `${branch}: ${file}`,
        };
        if (fileExists) await who.client.files.update(projectId, change);
        else await who.client.files.create(projectId, change);
        await pushWorkIdle(sb.ctx);
        return (await w.admin.branches.get(projectId, branch)).commit.id;
      }
      return {
        w,
        master,
        mallory,
        stranger,
        ci,
        held,
        commit,
        async open(who, branch, content, options = {}) {
          const head = await commit(who, branch, `${branch}.txt`, content);
          const mr = await who.client.mergeRequests.create(projectId, {
            source_branch: branch,
            target_branch: options.target ?? 'master',
            title: `Change ${branch}`,
            ...(options.labels ? { labels: options.labels } : {}),
          });
          await w.ci.idle();
          return { id: mr.id, iid: mr.iid, head };
        },
        async comment(who, mrId, body) {
          return (await who.client.notes.createMergeRequestNote(projectId, mrId, body)).id;
        },
        async on(branch, sha) {
          const commits = await sb.ctx.git.log(projectId, branch, { limit: 1000 });
          return commits.some((one) => one.id === sha);
        },
        mr: (mrId) => w.admin.mergeRequests.get(projectId, mrId),
        async ciStatus(sha, state) {
          await waitFor(
            async () => {
              for await (const s of w.admin.statuses.list(projectId, sha))
                if (s.name === 'ci/test' && s.status === state) return true;
              return undefined;
            },
            30_000,
            `ci/test ${state} on ${sha.slice(0, 8)}`,
          );
        },
        async trainBranches() {
          const found = new Map<string, string>();
          for await (const b of w.admin.branches.list(projectId))
            if (b.name.startsWith('hookbot/train/')) found.set(b.name, b.commit.id);
          return found;
        },
      };
    }

    /** Her own merge into protected master is refused: what the bot must not lend her. */
    async function cannotMergeHerself(d: Developers, mrId: number): Promise<void> {
      const refused = await d.mallory.client.mergeRequests.merge(d.w.project.id, mrId, {}).then(
        (outcome) => outcome,
        (error: unknown) => error,
      );
      expect(refused instanceof ApiError || (refused as { outcome?: string }).outcome !== 'merged').toBe(
        true,
      );
      expect((await d.mr(mrId)).state).not.toBe('merged');
    }

    // The operator asks for a master's word before anything lands on master (docs/security.md:
    // "Where the branch's own rights must hold, require them in the rule (actor_access: master on a
    // command rule)").
    const MASTER_COMMAND = (queue: string) => `
rules:
  - name: land on a master's command
    on: [note.created]
    for: merge_requests
    if:
      - note: { matches: '^/hookbot merge\\b' }
      - actor_access: master
      - state: opened
    do:
      - queue: ${queue}
`;

    /**
     * Was a HOLE, closed by the fixes of issue 36 (high): a comment's approval is bound to the head it approved only for forks. Mallory's
     * merge request waits behind another in the queue, queued on a master's `/hookbot merge` about
     * head H1. She pushes H2 (her own branch: she may). Her push is a `merge_request.update`, which the
     * command rule does not hear, so it stays queued (src/rules/item/process-item.ts `leaveQueue`); the
     * serial queue pins whatever head it finds when her turn comes (src/scheduler/sweeps/merge-queue.ts
     * `step`: the approval's sha is compared for forks only); the fresh check before the merge replays
     * the master's comment: the note is there, its author a master (`actor_access: master` holds), and
     * the gate passes on HER developer access although a push came after the comment
     * (src/rules/actions/merge-safety.ts `mergeAuthority`: (a) before the push check matters). H2,
     * which no master saw, is merged into protected master by the bot.
     */
    it("serial queue: a push after a master's command, while she waits her turn: the unreviewed head must not land", async () => {
      const d = await developers(MASTER_COMMAND('{ statuses: [ci/test] }'));
      const { w } = d;
      // Another merge request ahead of hers, its build still running.
      d.held.add('ahead');
      const ahead = await d.open(d.master, 'ahead', 'ahead\n');
      await w.processNote(ahead.id, await d.comment(d.master, ahead.id, '/hookbot merge'));
      await w.sweeps.run('merge_queue');

      const mine = await d.open(d.mallory, 'mine', 'calls: foo\n');
      await cannotMergeHerself(d, mine.id);
      await w.processNote(mine.id, await d.comment(d.master, mine.id, '/hookbot merge'));
      expect(w.store.queued().find((e) => e.mrId === mine.id)).toMatchObject({
        approval: { sha: mine.head },
      });
      // Mallory's push, heard by the bot as her merge request's update.
      const unreviewed = await d.commit(d.mallory, 'mine', 'backdoor.txt', 'unreviewed\n');
      await w.processItem(mine.id);
      await w.ci.idle();
      // The one ahead is closed; her turn comes.
      await w.admin.mergeRequests.close(w.project.id, ahead.id);
      await w.drive(
        () => !w.store.queued().some((e) => e.mrId === mine.id && !e.left),
        'her merge request to leave the queue',
      );
      expect(await d.on('master', unreviewed)).toBe(false);
    });

    /**
     * Was a HOLE, closed by the fixes of issue 36 (high): the same in a merge train: a merge request not yet in a car is read at its current
     * head when its car is built (src/scheduler/sweeps/merge-train.ts `stillRides`: the approval's
     * sha is compared for forks only), and the landing replays the master's comment, which still
     * holds for a developer's merge request.
     */
    it("merge train: a push after a master's command, before her car is built: the unreviewed head must not land", async () => {
      const d = await developers(MASTER_COMMAND('{ statuses: [ci/test], depth: 2 }'));
      const { w } = d;
      // The two cars ahead are being built (their CI still runs).
      d.held.add('hookbot/train/*');
      const aheads = [];
      for (const name of ['ahead-1', 'ahead-2']) {
        const one = await d.open(d.master, name, `${name}\n`);
        await w.processNote(one.id, await d.comment(d.master, one.id, '/hookbot merge'));
        aheads.push(one);
      }
      await w.sweeps.run('merge_queue');
      await w.ci.idle();
      expect((await d.trainBranches()).size).toBe(2);

      const mine = await d.open(d.mallory, 'mine', 'calls: foo\n');
      await w.processNote(mine.id, await d.comment(d.master, mine.id, '/hookbot merge'));
      await w.sweeps.run('merge_queue');
      expect(w.store.queued().find((e) => e.mrId === mine.id)?.car).toBeUndefined();
      const unreviewed = await d.commit(d.mallory, 'mine', 'backdoor.txt', 'unreviewed\n');
      await w.processItem(mine.id);
      for (const one of aheads) await w.admin.mergeRequests.close(w.project.id, one.id);
      d.held.clear();
      await w.drive(
        () => !w.store.queued().some((e) => e.mrId === mine.id && !e.left),
        'her merge request to leave the queue',
      );
      expect(await d.on('master', unreviewed)).toBe(false);
    });

    /**
     * Was a HOLE, closed by the fixes of issue 36 (high): the operator's rule arms merges for `staging` only. Mallory labels her own merge
     * request into staging (a developer may), the bot arms merge-when-build-succeeds (as a master),
     * and she edits the target branch to protected master: the server does not disarm it, and merges
     * into master as the bot when the build succeeds. She could not merge into master herself.
     * Nothing of the bot cancels the server's merge (src/scheduler/sweeps/merge-watch.ts).
     */
    it('merge-when-build-succeeds armed for staging, then retargeted to protected master: nothing of hers may land on master', async () => {
      const d = await developers(`
rules:
  - name: arm for staging
    on: [merge_request.open, merge_request.update, status.changed]
    for: merge_requests
    if:
      - labels: { any: [automerge] }
      - target_branch: staging
      - state: opened
      - statuses: { required: [ci/test], state: pending }
    do: [ merge_when_build_succeeds ]
`);
      const { w } = d;
      await w.admin.branches.create(w.project.id, { branch_name: 'staging', ref: 'master' });
      d.held.add('to-staging');
      const mine = await d.open(d.mallory, 'to-staging', 'calls: foo\n', {
        target: 'staging',
        labels: ['automerge'],
      });
      await d.ciStatus(mine.head, 'pending');
      await w.processItem(mine.id);
      // The bot's own merge when the build succeeds: watched, nothing armed on the server.
      expect((await d.mr(mine.id)).merge_when_build_succeeds).toBe(false);
      expect(w.store.watched()).toMatchObject([{ mrId: mine.id }]);

      await d.mallory.client.mergeRequests.update(w.project.id, mine.id, { target_branch: 'master' });
      await cannotMergeHerself(d, mine.id);
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');
      await d.ci.statuses.create(w.project.id, mine.head, {
        state: 'success',
        name: 'ci/test',
        ref: 'to-staging',
      });
      await pushWorkIdle(sb.ctx);
      await w.sweeps.run('merge_watch');
      expect(await d.on('master', mine.head)).toBe(false);
    });

    /**
     * Was a HOLE, closed by the fixes of issue 36 (high): merge-when-build-succeeds armed on a master's command survives her close, push,
     * reopen (the server disarms it on a push only while the merge request is open), and the server
     * merges her unreviewed head into master as the bot.
     */
    it("merge-when-build-succeeds armed on a master's command: close, push, reopen: the unreviewed head must not land", async () => {
      const d = await developers(`
rules:
  - name: arm on a master's command
    on: [note.created]
    for: merge_requests
    if:
      - note: { matches: '^/hookbot merge\\b' }
      - actor_access: master
      - state: opened
      - statuses: { required: [ci/test], state: pending }
    do: [ merge_when_build_succeeds ]
`);
      const { w } = d;
      d.held.add('mine');
      const mine = await d.open(d.mallory, 'mine', 'calls: foo\n');
      await d.ciStatus(mine.head, 'pending');
      await w.processNote(mine.id, await d.comment(d.master, mine.id, '/hookbot merge'));
      // The bot's own merge when the build succeeds: watched, nothing armed on the server.
      expect((await d.mr(mine.id)).merge_when_build_succeeds).toBe(false);
      expect(w.store.watched()).toMatchObject([{ mrId: mine.id }]);

      await d.mallory.client.mergeRequests.close(w.project.id, mine.id);
      const unreviewed = await d.commit(d.mallory, 'mine', 'backdoor.txt', 'unreviewed\n');
      await d.mallory.client.mergeRequests.reopen(w.project.id, mine.id);
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');
      await d.ciStatus(unreviewed, 'pending');
      await d.ci.statuses.create(w.project.id, unreviewed, {
        state: 'success',
        name: 'ci/test',
        ref: 'mine',
      });
      await pushWorkIdle(sb.ctx);
      await w.sweeps.run('merge_watch');
      expect(await d.on('master', unreviewed)).toBe(false);
    });

    /**
     * Was a hole (medium; the docs' advice): docs/merge-queue.md said a review that a train's
     * statuses cannot carry belongs in "a condition of its rule ..., such as a label or `upvotes`".
     * An upvote is anyone's act (whoever may comment on a public project adds one with `:+1:`), and
     * a label on her own merge request is Mallory's own act (a developer labels). The docs now advise
     * a member's command as the review (`actor_access: master`), and the `upvotes` condition says what
     * it counts. Resisted, the way the docs advise: a stranger's `:+1:` and command, and Mallory's own
     * command, are no review; a master's is.
     */
    it("merge train with the review as a master's command, as docs/merge-queue.md advises: a non-member's +1 or command, and her own, are no review", async () => {
      const d = await developers(MASTER_COMMAND('{ statuses: [ci/test], depth: 2 }'));
      const { w } = d;
      const mine = await d.open(d.mallory, 'mine', 'calls: foo\n', { labels: ['automerge'] });
      for (const [who, body] of [
        [d.stranger, ':+1:'],
        [d.stranger, '/hookbot merge'],
        [d.mallory, '/hookbot merge'],
      ] as const)
        await w.processNote(mine.id, await d.comment(who, mine.id, body));
      expect((await w.admin.mergeRequests.get(w.project.id, mine.id)).upvotes).toBeGreaterThan(0);
      expect(w.active()).toBe(0);
      await w.drive(() => true, 'one run');
      expect(await d.on('master', mine.head)).toBe(false);
      await w.processNote(mine.id, await d.comment(d.master, mine.id, '/hookbot merge'));
      await w.drive(() => w.active() === 0, 'the reviewed merge request lands');
      expect(await d.on('master', mine.head)).toBe(true);
    });

    const TRAIN = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], depth: 2 }
`;

    /**
     * Was a HOLE, closed by the fixes of issue 36 (sandbox, medium): the sandbox's `POST /projects/:id/statuses/:sha` updates an unfinished
     * status of the same sha, ref and name in place whoever posts, keeping its author
     * (src/sandbox/routes/statuses.ts: "An in-place update keeps the original author, as 8.x does").
     * 8.x looks the open status up WITH the caller (`GenericCommitStatus.running_or_pending
     * .find_or_initialize_by(project:, pipeline:, user: current_user, name:, ref:)`), so a developer's
     * post is a row of her own. In the sandbox, Mallory turns the CI's running `ci/test` on her car
     * into `success` under the CI's name, and `rules.status_authors` counts it: the car lands on her
     * word. Against 8.x the bot would leave her status out (the attack fails there); in the sandbox,
     * which the authority table's tests trust, every status_authors guarantee is void.
     */
    it("merge train: her own ci/test on the car's commit does not count (status_authors); the CI's does", async () => {
      const d = await developers(TRAIN);
      const { w } = d;
      d.held.add('hookbot/train/*');
      const mine = await d.open(d.mallory, 'mine', 'calls: foo\n', { labels: ['automerge'] });
      await w.processItem(mine.id);
      await w.sweeps.run('merge_queue');
      const car = [...(await d.trainBranches()).values()][0]!;
      await d.ciStatus(car, 'pending');
      await d.mallory.client.statuses.create(w.project.id, car, { state: 'success', name: 'ci/test' });
      await w.sweeps.run('merge_queue');
      await w.sweeps.run('merge_queue');
      expect(await d.on('master', car)).toBe(false);
      expect((await d.mr(mine.id)).state).toBe('opened');
      await d.ci.statuses.create(w.project.id, car, { state: 'success', name: 'ci/test' });
      await w.drive(() => w.active() === 0, 'the car lands on the CI word');
      expect(await d.on('master', car)).toBe(true);
    });

    /** Resisted: the landing pushes the commit that was tested; her branch is not deleted (D8). */
    it("merge train: her push onto a car's branch between its build and its landing: master gets the tested car only, her branch is left", async () => {
      const warnings: string[] = [];
      const d = await developers(TRAIN, warnings);
      const { w } = d;
      d.held.add('hookbot/train/*');
      const mine = await d.open(d.mallory, 'mine', 'calls: foo\n', { labels: ['automerge'] });
      await w.processItem(mine.id);
      await w.sweeps.run('merge_queue');
      const [[branch, car]] = [...(await d.trainBranches()).entries()] as [[string, string]];
      // Each build's pending first (the CI's), then its result: a result before it would be hidden.
      await d.ciStatus(car, 'pending');
      await d.ci.statuses.create(w.project.id, car, { state: 'success', name: 'ci/test' });
      // Hers, on the car's branch, after the car was built and found green.
      const planted = await d.commit(d.mallory, branch, 'backdoor.txt', 'unreviewed\n');
      await d.ciStatus(planted, 'pending');
      await d.ci.statuses.create(w.project.id, planted, { state: 'success', name: 'ci/test' });
      await w.drive(() => w.active() === 0, 'the car lands');
      expect((await w.admin.branches.get(w.project.id, 'master')).commit.id).toBe(car);
      expect(await d.on('master', planted)).toBe(false);
      expect((await d.trainBranches()).get(branch)).toBe(planted);
      expect(warnings.some((line) => line.includes(`left the branch ${branch} where it is`))).toBe(true);
    });

    /**
     * Resisted (a developer may stall the train, as documented, but not make it spin): no car is
     * built by the CI while her branch blocks the names, the trouble names her branch, and a tag
     * named like a car's branch is never what the train fetches or lands.
     */
    it("merge train: her branch `hookbot/train/master` stalls the train without a spin, named as the trouble; a tag named like a car's branch changes nothing", async () => {
      const d = await developers(TRAIN);
      const { w } = d;
      // A tag named like the car's branch to come, on a commit of hers no branch holds.
      const side = await d.commit(d.mallory, 'side', 'tagged.txt', 'tagged\n');
      const blocker = await d.commit(d.mallory, 'hookbot/train/master', 'block.txt', 'block\n');
      const mine = await d.open(d.mallory, 'mine', 'calls: foo\n', { labels: ['automerge'] });
      const url = (await w.admin.projects.get(w.project.id)).http_url_to_repo as string;
      const desk = await gitUser(
        workDir,
        { username: d.mallory.username, password: `${d.mallory.username}-password` },
        url,
      );
      await desk.git(
        'push',
        '--quiet',
        'origin',
        `${side}:refs/tags/hookbot/train/master/default/${mine.iid}`,
      );
      await pushWorkIdle(sb.ctx);
      await w.processItem(mine.id);
      const runs = w.ci.runs;
      const details: string[] = [];
      for (let i = 0; i < 4; i++) {
        const report = await w.sweeps.run('merge_queue');
        details.push(...(report as { items: { detail: string }[] }).items.map((item) => item.detail));
      }
      await w.ci.idle();
      expect(w.ci.runs).toBe(runs);
      expect(details.at(-1)).toContain('the branch `hookbot/train/master`');
      expect((await w.admin.branches.get(w.project.id, 'hookbot/train/master')).commit.id).toBe(blocker);
      // She deletes her branch: the train goes on, and lands the tested car, never her tag's commit.
      const removed = await fetch(
        `${sb.apiUrl}/projects/${w.project.id}/repository/branches/${encodeURIComponent('hookbot/train/master')}`,
        { method: 'DELETE', headers: { 'private-token': `${d.mallory.username}-token-0123456789` } },
      );
      expect(removed.ok).toBe(true);
      await w.drive(() => w.active() === 0, 'the train lands once the branch is gone');
      expect((await d.mr(mine.id)).state).toBe('merged');
      expect(await d.on('master', side)).toBe(false);
    });
  },
);
