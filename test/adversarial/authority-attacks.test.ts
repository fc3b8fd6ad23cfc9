/**
 * Adversarial, issue 36's class ("whose authority?"): a fork owner (a non-member who forked the public
 * project), a reporter and a non-member try to make the bot do for them what they could not do
 * themselves, against the bot's parts wired as in production (queue-world.ts: its API client over
 * HTTP, executor with its fresh check, item processor, sweeps, git over HTTP) and the sandbox, with
 * `rules.status_authors` naming the CI's account. Each attacker acts only with her own account: her
 * token, her fork, her pushes, her comments, her merge request's state and target branch, and, for
 * a project whose hook has no secret, deliveries she forges (`processNote`/`processItem` are what the
 * pipeline makes of a delivery: its item and note id, nothing else of it is believed).
 *
 * Target project: public, `master` protected (masters push and merge), the bot a master.
 *
 * An attack the bot resists is asserted as resisted (nothing of the attacker's lands). An attack
 * that worked was asserted with the SAFE outcome, so it failed until the hole was closed: every one
 * found by issue 36's red team is closed, and each test's comment says what it found and where the
 * defence now stands (rules/item/disarm.ts, rules/item/pushed-since-note.ts, merge-train.ts
 * FORK_APPROVAL_SETTLE_MS, the merge_when_build_succeeds action's refusal of forks).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { addUser } from '../../src/sandbox/factories.ts';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { FORK_APPROVAL_SETTLE_MS } from '../../src/scheduler/sweeps/merge-train.ts';
import { gitUser } from '../helpers/git-user.ts';
import { makeQueueWorld, type QueueWorld } from '../helpers/queue-world.ts';
import { waitFor } from '../helpers/wait-for.ts';

interface Person {
  id: number;
  username: string;
  token: string;
  client: Client;
}

interface Outsiders {
  w: QueueWorld;
  master: Person;
  dev: Person;
  reporter: Person;
  outsider: Person;
  /** The CI's account (trusted by `rules.status_authors`). */
  ci: Client;
  forkId: number;
  /** While on, the CI posts `pending` for every new commit and never finishes (a build still running). */
  hold: { on: boolean };
  /** A commit by the fork's owner on a branch of her fork (a push); its sha, the server's work after it done. */
  commitFork(branch: string, file: string, content: string): Promise<string>;
  /** The fork's owner opens a merge request from a new branch of her fork into `target`. */
  fromFork(
    branch: string,
    content: string,
    target?: string,
  ): Promise<{ id: number; iid: number; head: string }>;
  comment(who: Person, mrId: number, body: string): Promise<number>;
  /** Whether the target branch's history holds the commit. */
  on(branch: string, sha: string): Promise<boolean>;
  mr(mrId: number): Promise<{ state: string; merge_when_build_succeeds: boolean; target_branch: string }>;
  /** Waits for the CI's `ci/test` on a commit of the fork to be `state`. */
  ciStatus(sha: string, state: string): Promise<void>;
  explain(mrId: number): string;
}

describe(
  "adversarial: outsiders against the bot's authority (sandbox over HTTP and git)",
  { timeout: 180_000 },
  () => {
    let sb: Sandbox;
    let workDir = '';
    const cleanups: (() => Promise<void>)[] = [];
    beforeAll(async () => {
      sb = await startSandbox({ adminToken: 'aa-root-token', hookTimeoutMs: 2_000 });
      workDir = await mkdtemp(path.join(tmpdir(), 'hookbot-authority-attacks-'));
    });
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });
    afterAll(async () => {
      await sb?.close();
      await rm(workDir, { recursive: true, force: true });
    });

    let n = 0;
    async function outsiders(rules: string): Promise<Outsiders> {
      n += 1;
      const prefix = `aa${n}`;
      const hold = { on: false };
      const w = await makeQueueWorld(sb, {
        prefix,
        rules,
        workDir,
        statusAuthors: ['ci'],
        modeOf: () => (hold.on ? 'pending-forever' : 'normal'),
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
          token,
          client: createClient({ baseUrl: sb.url, token, retry: { limit: 0 } }),
        };
      };
      const master = person('master', 40);
      const dev = person('dev', 30);
      const reporter = person('reporter', 20);
      const outsider = person('outsider');
      db.changed();
      await w.admin.branches.protect(w.project.id, 'master');
      const fork = await fetch(`${sb.apiUrl}/projects/fork/${w.project.id}`, {
        method: 'POST',
        headers: { 'private-token': outsider.token },
      });
      expect(fork.status).toBe(201);
      const forkId = ((await fork.json()) as { id: number }).id;
      // The CI builds the fork's commits too (as 8.x's shared runners do), posting in the fork.
      const ciUser = db.data.users.find((u) => u.username === `${prefix}-ci`)!;
      db.data.members.push({
        project_id: forkId,
        user_id: ciUser.id,
        access_level: 30,
        created_at: db.now(),
      });
      db.changed();
      const ci = createClient({ baseUrl: sb.url, token: ciUser.private_token, retry: { limit: 0 } });
      const exists = async (branch: string, file: string) =>
        w.admin.files.get(forkId, file, branch).then(
          () => true,
          () => false,
        );
      const commitFork = async (branch: string, file: string, content: string) => {
        const response = await fetch(`${sb.apiUrl}/projects/${forkId}/repository/files`, {
          method: (await exists(branch, file)) ? 'PUT' : 'POST',
          headers: { 'private-token': outsider.token, 'content-type': 'application/json' },
          body: JSON.stringify({ file_path: file, branch_name: branch, content, commit_message: file }),
        });
        expect(response.ok).toBe(true);
        await pushWorkIdle(sb.ctx);
        return (await w.admin.branches.get(forkId, branch)).commit.id;
      };
      return {
        w,
        master,
        dev,
        reporter,
        outsider,
        ci,
        forkId,
        hold,
        commitFork,
        async fromFork(branch, content, target = 'master') {
          await outsider.client.branches.create(forkId, { branch_name: branch, ref: 'master' });
          const head = await commitFork(branch, `${branch}.txt`, content);
          const mr = await outsider.client.mergeRequests.create(forkId, {
            source_branch: branch,
            target_branch: target,
            target_project_id: w.project.id,
            title: `From the fork: ${branch}`,
          });
          await w.ci.idle();
          return { id: mr.id, iid: mr.iid, head };
        },
        async comment(who, mrId, body) {
          return (await who.client.notes.createMergeRequestNote(w.project.id, mrId, body)).id;
        },
        async on(branch, sha) {
          const commits = await sb.ctx.git.log(w.project.id, branch, { limit: 1000 });
          return commits.some((commit) => commit.id === sha);
        },
        async mr(mrId) {
          return w.admin.mergeRequests.get(w.project.id, mrId);
        },
        async ciStatus(sha, state) {
          await waitFor(
            async () => {
              for await (const s of w.admin.statuses.list(forkId, sha))
                if (s.name === 'ci/test' && s.status === state) return true;
              return undefined;
            },
            30_000,
            `ci/test ${state} on ${sha.slice(0, 8)}`,
          );
        },
        explain(mrId) {
          const record = w.store.latestDecision(`merge_request:${w.project.id}:${mrId}`);
          return (record?.decision as { text?: string } | undefined)?.text ?? '';
        },
      };
    }

    // The operator arms merge-when-build-succeeds on a developer's command while the build runs
    // (docs/rules.md#members-commands: "`merge_when_build_succeeds` on a comment arms the server's own
    // merge, which a push to the source branch cancels (8.3 on)").
    const ARM_ON_COMMAND = `
rules:
  - name: arm on command
    on: [note.created]
    for: merge_requests
    if:
      - note: { matches: '^/hookbot merge\\b' }
      - actor_access: developer
      - state: opened
      - work_in_progress: false
      - statuses: { required: [ci/test], state: pending }
    do: [ merge_when_build_succeeds ]
`;

    /**
     * Was a HOLE, closed by the fixes of issue 36 (high): the server disarms merge-when-build-succeeds on a push to the source branch only
     * while the merge request is open (8.x `RefreshService` works on open merge requests; the sandbox
     * follows it), and closing or reopening does not disarm it. The fork's owner closes her merge
     * request, pushes an unreviewed head, reopens it: the merge the bot armed (as a master, on a
     * developer's comment about the reviewed head) stays armed, and when the new head's build
     * succeeds the server merges it into protected master, as the bot. The bot hears the close, the
     * reopen and its merge watch sees the head move, and cancels nothing
     * (src/scheduler/sweeps/merge-watch.ts `headMoved` only stops watching; nothing cancels the
     * server's merge), and no "Added N commits" note came after the comment
     * (src/rules/item/pushed-since-note.ts).
     */
    it("fork owner: close, push, reopen after a developer's command armed merge-when-build-succeeds: her unreviewed head must not land on master", async () => {
      const o = await outsiders(ARM_ON_COMMAND);
      const { w } = o;
      o.hold.on = true;
      const mr = await o.fromFork('feature', 'calls: foo\n');
      await o.ciStatus(mr.head, 'pending');
      // A developer reviewed this head; its build is still running; she comments the command. The bot
      // never arms the server's merge for a fork (the server would judge the fork's own build, whose
      // statuses its owner posts): the attack has nothing to ride. (With a member's merge request,
      // the same close, push, reopen is met by the disarm: authority-attacks-developer.test.ts.)
      await w.processNote(mr.id, await o.comment(o.dev, mr.id, '/hookbot merge'));
      expect((await o.mr(mr.id)).merge_when_build_succeeds).toBe(false);

      // The fork's owner, with her own account only.
      await o.outsider.client.mergeRequests.close(w.project.id, mr.id);
      const planted = await o.commitFork('feature', 'planted.txt', 'unreviewed: exfiltrate secrets\n');
      await o.outsider.client.mergeRequests.reopen(w.project.id, mr.id);
      // The bot hears it all: the merge request's hooks and its merge watch.
      await w.processItem(mr.id);
      await w.sweeps.run('merge_watch');
      await w.sweeps.run('merge_queue');
      // Before its build ends: nothing landed, and nothing is armed.
      expect(await o.on('master', planted)).toBe(false);
      expect((await o.mr(mr.id)).merge_when_build_succeeds).toBe(false);
      // The new head's build finishes green (the CI's own account: trusted).
      await o.ciStatus(planted, 'pending');
      await o.ci.statuses.create(o.forkId, planted, { state: 'success', name: 'ci/test', ref: 'feature' });
      await pushWorkIdle(sb.ctx);
      await w.sweeps.run('merge_watch');

      expect(await o.on('master', planted)).toBe(false);
      expect((await o.mr(mr.id)).state).not.toBe('merged');
    });

    /**
     * Was a HOLE, closed by the fixes of issue 36 (high): same mechanism, the target branch instead of the head. The operator's command rule
     * arms merges into `staging` only (`target_branch: staging`); after the bot armed it, the author
     * edits her merge request's target branch to protected `master` (8.x lets the author edit it, and
     * does not disarm merge-when-build-succeeds). When the build succeeds the server merges into
     * master as the bot. The merge watch's own merge would be withdrawn (the rule no longer holds), but
     * nothing cancels the server's (src/scheduler/sweeps/merge-watch.ts).
     */
    it('fork owner: retargets to protected master a merge request the bot armed for staging: nothing of hers may land on master', async () => {
      const o = await outsiders(
        ARM_ON_COMMAND.replace('- state: opened', '- state: opened\n      - target_branch: staging'),
      );
      const { w } = o;
      await w.admin.branches.create(w.project.id, { branch_name: 'staging', ref: 'master' });
      o.hold.on = true;
      const mr = await o.fromFork('for-staging', 'calls: foo\n', 'staging');
      await o.ciStatus(mr.head, 'pending');
      await w.processNote(mr.id, await o.comment(o.dev, mr.id, '/hookbot merge'));
      // Never armed for a fork (the server would judge the fork's own build); a member's merge
      // request retargeted after the arming is disarmed: authority-attacks-developer.test.ts.
      expect((await o.mr(mr.id)).merge_when_build_succeeds).toBe(false);

      await o.outsider.client.mergeRequests.update(w.project.id, mr.id, { target_branch: 'master' });
      expect((await o.mr(mr.id)).target_branch).toBe('master');
      await w.processItem(mr.id);
      await w.sweeps.run('merge_watch');
      await o.ci.statuses.create(o.forkId, mr.head, {
        state: 'success',
        name: 'ci/test',
        ref: 'for-staging',
      });
      await pushWorkIdle(sb.ctx);
      await w.sweeps.run('merge_watch');

      expect(await o.on('master', mr.head)).toBe(false);
      expect((await o.mr(mr.id)).state).not.toBe('merged');
    });

    /**
     * Was a HOLE, closed by the fixes of issue 36 (high, where the project's hook has no secret): "no push after the comment" is read from
     * the server's `Added N commits` notes, which 8.x writes only for open merge requests. A
     * developer's `/hookbot merge` about the reviewed head did nothing (its build was still running).
     * The fork's owner closes, pushes an unreviewed head, reopens, lets its build pass, and forges a
     * Note Hook delivery naming the developer's note: the bot reads the note (on this merge request, by
     * a developer, no push note after it) and merges the unreviewed head into protected master
     * (src/rules/actions/merge-safety.ts `commentApproval`, src/rules/item/pushed-since-note.ts). A
     * note is evaluated as a command again at every delivery naming it.
     */
    it('fork owner: a forged delivery replays a stale developer command after close, push, reopen: her unreviewed head must not be merged', async () => {
      const o = await outsiders(`
rules:
  - name: merge on command
    on: [note.created]
    for: merge_requests
    if:
      - note: { matches: '^/hookbot merge\\b' }
      - actor_access: developer
      - state: opened
      - work_in_progress: false
      - statuses: { required: [ci/test], state: success }
    do: [ merge ]
`);
      const { w } = o;
      o.hold.on = true;
      const mr = await o.fromFork('replay', 'calls: foo\n');
      await o.ciStatus(mr.head, 'pending');
      const byDev = await o.comment(o.dev, mr.id, '/hookbot merge');
      await w.processNote(mr.id, byDev);
      expect((await o.mr(mr.id)).state).toBe('opened');

      await o.outsider.client.mergeRequests.close(w.project.id, mr.id);
      o.hold.on = false;
      const planted = await o.commitFork('replay', 'planted.txt', 'unreviewed\n');
      await w.ci.idle();
      await o.ciStatus(planted, 'success');
      await o.outsider.client.mergeRequests.reopen(w.project.id, mr.id);
      await w.processItem(mr.id);
      // Her forged Note Hook: the item and the developer's note id.
      await w.processNote(mr.id, byDev);

      expect(await o.on('master', planted)).toBe(false);
      expect((await o.mr(mr.id)).state).not.toBe('merged');
    });

    /**
     * Was a HOLE, closed by the fixes of issue 36 (medium, a timing race): "a fork's merge request rides a car only at the head a member
     * approved", and the approved head is the head the evaluation of the comment read. 8.x moves the
     * merge request's head (its `refs/merge-requests/<iid>/head` and diff) in its post-receive job
     * BEFORE it writes the `Added N commits` note (`RefreshService`: `reload_merge_requests`, then
     * `comment_mr_with_commits`). The fork's owner watches the merge request (public) and pushes the
     * moment a developer comments: a comment evaluated in that gap records the unreviewed head as
     * approved (src/rules/item/read-snapshot.ts reads no push note yet), and the train builds it into a
     * car pushed to the target project, whose CI runs it (src/scheduler/sweeps/merge-train.ts
     * `stillRides` compares the recorded sha only, and reads no note before the car push). The
     * landing, later, refuses it: the damage (the target's CI running the fork's code) is done.
     */
    it("fork owner: a push in the instant after a developer's command: no car carrying her unreviewed head is pushed to the project", async () => {
      const o = await outsiders(`
rules:
  - name: queue on command
    on: [note.created]
    for: merge_requests
    if: [ { state: opened }, { note: { matches: '^/hookbot merge\\b' } } ]
    do:
      - queue: { statuses: [ci/test], depth: 2 }
`);
      const { w } = o;
      const mr = await o.fromFork('race', 'calls: foo\n');
      const byDev = await o.comment(o.dev, mr.id, '/hookbot merge');
      // The server's post-receive work held: the branch moved, but no version or note of it yet (in
      // 8.x the work comes a moment after the push, and its note after the merge request's head moved).
      const listeners = sb.ctx.on.push as ((event: { project: { id: number } }) => Promise<void>)[];
      const noting = 0;
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let reached = false;
      // Never held past a minute, whatever happens to the test (the suite's other tests need the sandbox).
      const fallback = setTimeout(() => open(), 60_000);
      listeners.splice(noting, 0, async (event) => {
        if (event.project.id !== o.forkId) return;
        reached = true;
        await gate;
      });
      try {
        const url = (await w.admin.projects.get(o.forkId)).http_url_to_repo as string;
        const desk = await gitUser(
          workDir,
          { username: o.outsider.username, password: `${o.outsider.username}-password` },
          url,
        );
        await desk.git('checkout', '--quiet', 'race');
        const unreviewed = await desk.commit('planted.txt', 'unreviewed\n');
        await desk.git('push', '--quiet', 'origin', 'race');
        await waitFor(() => (reached ? true : undefined), 30_000, "the push's ref moved");
        // The bot evaluates the developer's comment (its delivery came at once), then drives the train.
        await w.processNote(mr.id, byDev);
        await w.sweeps.run('merge_queue');
        const cars: string[] = [];
        for await (const b of w.admin.branches.list(w.project.id))
          if (b.name.startsWith('hookbot/train/'))
            cars.push(...(await w.admin.commits.get(w.project.id, b.commit.id)).parent_ids);
        expect(cars).not.toContain(unreviewed);
        expect(await o.on('master', unreviewed)).toBe(false);
        // The comment was written on the version before her push: it approves nothing of the head now.
        expect(w.active()).toBe(0);
        // The server's work comes; the approval that never was settles nothing.
        open();
        await pushWorkIdle(sb.ctx);
        w.clock.offset += FORK_APPROVAL_SETTLE_MS;
        const report = (await w.sweeps.run('merge_queue')) as {
          items: { outcome: string; detail: string }[];
        };
        expect(report.items).toEqual([]);
        for await (const b of w.admin.branches.list(w.project.id))
          if (b.name.startsWith('hookbot/train/'))
            expect((await w.admin.commits.get(w.project.id, b.commit.id)).parent_ids).not.toContain(
              unreviewed,
            );
        expect(await o.on('master', unreviewed)).toBe(false);
      } finally {
        clearTimeout(fallback);
        open();
        listeners.splice(noting, 1);
        await pushWorkIdle(sb.ctx);
      }
    });

    it("fork owner: a forged delivery naming a developer's command on another merge request approves nothing of hers", async () => {
      const o = await outsiders(`
rules:
  - name: queue on command
    on: [note.created]
    for: merge_requests
    if: [ { state: opened }, { note: { matches: '^/hookbot merge\\b' } } ]
    do:
      - queue: { statuses: [ci/test] }
`);
      const { w } = o;
      // A developer's own merge request, and her command on it.
      await w.admin.branches.create(w.project.id, { branch_name: 'dev-work', ref: 'master' });
      const devMr = await o.dev.client.mergeRequests.create(w.project.id, {
        source_branch: 'dev-work',
        target_branch: 'master',
        title: 'Developer work',
      });
      const devNote = await o.comment(o.dev, devMr.id, '/hookbot merge');
      const mine = await o.fromFork('forged', 'calls: foo\n');
      await w.processNote(mine.id, devNote);
      expect(w.store.queued().filter((e) => e.mrId === mine.id)).toEqual([]);
      await w.drive(() => true, 'one run');
      expect(await o.on('master', mine.head)).toBe(false);
    });

    it("fork owner and reporter: a label the bot's own rule sets, and the reporter's command, queue nothing", async () => {
      const o = await outsiders(`
rules:
  - name: label docs
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { title: { contains: 'fork' } } ]
    do:
      - label: { add: [automerge] }
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test] }
  - name: queue on command
    on: [note.created]
    for: merge_requests
    if: [ { state: opened }, { note: { matches: '^/hookbot merge\\b' } } ]
    do:
      - queue: { statuses: [ci/test] }
`);
      const { w } = o;
      const mr = await o.fromFork('labelled', 'calls: foo\n');
      await w.processItem(mr.id);
      expect((await o.mr(mr.id)) as unknown as { labels: string[] }).toMatchObject({ labels: ['automerge'] });
      await w.processItem(mr.id);
      expect(w.active()).toBe(0);
      await w.processNote(mr.id, await o.comment(o.reporter, mr.id, '/hookbot merge'));
      // The fork owner's own command too.
      await w.processNote(mr.id, await o.comment(o.outsider, mr.id, '/hookbot merge'));
      expect(w.active()).toBe(0);
      await w.drive(() => true, 'one run');
      expect(await o.on('master', mr.head)).toBe(false);
    });
  },
);
