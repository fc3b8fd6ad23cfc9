/**
 * Outsiders' merge requests and members' commands (docs/rules.md#members-commands), against the
 * sandbox over real HTTP and git with the bot's parts wired as in production (queue-world.ts): a
 * non-member forks the public project and opens a merge request from her fork. A label does not put
 * it in the queue (the server may keep an author's own labels, and the bot cannot tell who set one);
 * a developer's comment `/hookbot merge` does, the approval kept with the entry, and the queue's
 * merge replays that comment; a push by the fork's owner after the comment, before the bot's
 * evaluation or after it, voids the approval; a reporter's comment does nothing; a merge request
 * taken out at a head comes back at that head only on a new comment.
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

// The label rule as every project had it, and a command rule that says nothing of who comments:
// the default gate alone decides for outsiders.
const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m }
  - name: queue on command
    on: [note.created]
    for: merge_requests
    if: [ { state: opened }, { note: { matches: '^/hookbot merge\\b' } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m }
`;

interface Person {
  id: number;
  username: string;
  token: string;
  client: Client;
}

interface Outsiders {
  w: QueueWorld;
  dev: Person;
  reporter: Person;
  outsider: Person;
  forkId: number;
  /** A merge request from a new branch of the fork with `content` in a file, labelled by the administrator. */
  fromFork(branch: string, content: string): Promise<{ id: number; head: string }>;
  /** A commit by the fork's owner on a branch of the fork (a push), its consequences done. */
  pushFork(branch: string, file: string): Promise<string>;
  /** A comment on the merge request; its note id. */
  comment(who: Person, mrId: number, body: string): Promise<number>;
  /** The text of the merge request's latest decision (explain). */
  explain(mrId: number): string;
  state(mrId: number): Promise<string>;
}

// Generous: git, the sandbox and the CI share a busy 2-core machine (each wait is on a condition).
describe("merge queue: outsiders' merge requests and members' commands", { timeout: 180_000 }, () => {
  let sb: Sandbox;
  let workDir = '';
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'mqo-root-token', hookTimeoutMs: 2_000 });
    workDir = await mkdtemp(path.join(tmpdir(), 'hookbot-mq-outsiders-'));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  afterAll(async () => {
    await sb?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  /** Whether master's history holds the commit. */
  async function onMaster(o: Outsiders, sha: string): Promise<boolean> {
    const commits = await sb.ctx.git.log(o.w.project.id, 'master', { limit: 1000 });
    return commits.some((commit) => commit.id === sha);
  }

  let n = 0;
  async function outsiders(rules = RULES): Promise<Outsiders> {
    n += 1;
    const prefix = `mqo${n}`;
    const w = await makeQueueWorld(sb, { prefix, rules, workDir });
    cleanups.push(() => w.close());
    const db = sb.ctx.db;
    // Public, so anyone may fork it and comment.
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
    const dev = person('dev', 30);
    const reporter = person('reporter', 20);
    const outsider = person('outsider');
    db.changed();
    const fork = await fetch(`${sb.apiUrl}/projects/fork/${w.project.id}`, {
      method: 'POST',
      headers: { 'private-token': outsider.token },
    });
    expect(fork.status).toBe(201);
    const forkId = ((await fork.json()) as { id: number }).id;
    // The CI builds the fork's heads and posts their statuses there, where the queue reads them.
    const ci = db.data.users.find((u) => u.username === `${prefix}-ci`)!;
    db.data.members.push({ project_id: forkId, user_id: ci.id, access_level: 30, created_at: db.now() });
    db.changed();
    const commit = async (branch: string, file: string, content: string) => {
      const response = await fetch(`${sb.apiUrl}/projects/${forkId}/repository/files`, {
        method: 'POST',
        headers: { 'private-token': outsider.token, 'content-type': 'application/json' },
        body: JSON.stringify({ file_path: file, branch_name: branch, content, commit_message: file }),
      });
      expect(response.status).toBe(201);
      // The server's work after a push (the system note `Added 1 commit`) is done.
      await pushWorkIdle(sb.ctx);
      return (await w.admin.branches.get(forkId, branch)).commit.id;
    };
    return {
      w,
      dev,
      reporter,
      outsider,
      forkId,
      async fromFork(branch, content) {
        await outsider.client.branches.create(forkId, { branch_name: branch, ref: 'master' });
        const head = await commit(branch, `${branch}.txt`, content);
        const mr = await outsider.client.mergeRequests.create(forkId, {
          source_branch: branch,
          target_branch: 'master',
          target_project_id: w.project.id,
          title: `From the fork: ${branch}`,
        });
        // Labelled by the administrator: whoever set it, the bot cannot tell.
        await w.admin.mergeRequests.update(w.project.id, mr.id, { labels: ['automerge'] });
        await w.ci.idle();
        return { id: mr.id, head };
      },
      pushFork: (branch, file) => commit(branch, file, 'calls: foo\n'),
      async comment(who, mrId, body) {
        return (await who.client.notes.createMergeRequestNote(w.project.id, mrId, body)).id;
      },
      explain(mrId) {
        const record = w.store.latestDecision(`merge_request:${w.project.id}:${mrId}`);
        return (record?.decision as { text?: string } | undefined)?.text ?? '';
      },
      async state(mrId) {
        return (await w.admin.mergeRequests.get(w.project.id, mrId)).state;
      },
    };
  }

  it("a label does not queue a non-member's fork merge request; a reporter's comment does nothing; a developer's comment queues it, and it is merged", async () => {
    const o = await outsiders();
    const { w } = o;
    const mr = await o.fromFork('fork-docs', 'calls: foo\n');
    const itemKey = `merge_request:${w.project.id}:${mr.id}`;

    await w.processItem(mr.id);
    expect(w.active()).toBe(0);
    expect(o.explain(mr.id)).toContain(
      `its author ${o.outsider.username} has no access to ${w.path}, less than developer: a label is no proof that a member decided`,
    );
    await w.sweeps.run('merge_queue');
    expect(await o.state(mr.id)).toBe('opened');

    const byReporter = await o.comment(o.reporter, mr.id, '/hookbot merge');
    await w.processNote(mr.id, byReporter);
    expect(w.active()).toBe(0);
    expect(o.explain(mr.id)).toContain(
      `@${o.reporter.username}, who commented, has reporter (20) access: a comment approves only from a member with developer access or more`,
    );

    const byDev = await o.comment(o.dev, mr.id, '/hookbot merge');
    await w.processNote(mr.id, byDev);
    expect(w.store.queued()).toMatchObject([
      {
        itemKey,
        approval: { by: o.dev.username, level: 30, noteId: byDev, sha: mr.head },
        trigger: { kind: 'note', noteId: byDev, byBot: false },
      },
    ]);
    expect(o.explain(mr.id)).toContain(`queue for master (default) on the comment of @${o.dev.username}`);
    // Another comment is no command: it says nothing about the one that queued it.
    await w.processNote(mr.id, await o.comment(o.reporter, mr.id, 'Thanks!'));
    expect(w.active()).toBe(1);
    // The queue's merge is judged under the comment (the command rule listens to nothing else).
    await w.drive(() => w.active() === 0, 'the approved merge request to be merged');
    expect(await o.state(mr.id)).toBe('merged');
    expect(w.pushes()).toBe(0);
    expect(await onMaster(o, mr.head)).toBe(true);
  });

  it("a push by the fork's owner after the comment voids the approval: before the bot's evaluation, and after it", async () => {
    const o = await outsiders();
    const { w } = o;
    const mr = await o.fromFork('fork-late', 'calls: foo\n');

    // Reviewed at its head, commented; the owner pushes before the bot evaluates the comment.
    const early = await o.comment(o.dev, mr.id, '/hookbot merge');
    const unreviewed = await o.pushFork('fork-late', 'unreviewed.txt');
    await w.ci.idle();
    await w.processNote(mr.id, early);
    expect(w.active()).toBe(0);
    expect(o.explain(mr.id)).toContain(
      `a push to its source branch came after the comment of @${o.dev.username}: the comment approves an older head, not this one`,
    );

    // A new comment approves the new head; a push after that evaluation voids it too.
    const late = await o.comment(o.dev, mr.id, '/hookbot merge');
    await w.processNote(mr.id, late);
    expect(w.store.queued()).toMatchObject([{ approval: { noteId: late, sha: unreviewed } }]);
    const pushedAgain = await o.pushFork('fork-late', 'pushed-again.txt');
    await w.ci.idle();
    const reports = await w.drive(() => w.active() === 0, 'the pushed merge request to leave the queue');
    expect(reports.flatMap((report) => report.items)).toMatchObject([
      { outcome: 'dropped', detail: expect.stringContaining(`pushed after @${o.dev.username} approved`) },
    ]);
    expect(await o.state(mr.id)).toBe('opened');
    expect(await onMaster(o, pushedAgain)).toBe(false);
    // The same comment evaluated again (a redelivery) approves nothing now.
    await w.processNote(mr.id, late);
    expect(w.active()).toBe(0);
    await w.drive(() => w.active() === 0, 'nothing to do');
    expect(await o.state(mr.id)).toBe('opened');
  });

  it('taken out at a head, it comes back at that head on a new comment, not on the comment it left with', async () => {
    const o = await outsiders();
    const { w } = o;
    // `calls: bar` names nothing the project defines: the CI fails it.
    const mr = await o.fromFork('fork-broken', 'calls: bar\n');
    const first = await o.comment(o.dev, mr.id, '/hookbot merge');
    await w.processNote(mr.id, first);
    expect(w.active()).toBe(1);
    await w.drive(() => w.active() === 0, 'the failing merge request to be taken out');
    const itemKey = `merge_request:${w.project.id}:${mr.id}`;
    expect(w.store.queued().find((entry) => entry.itemKey === itemKey)?.left).toMatchObject({
      sha: mr.head,
      noteId: first,
    });
    await w.processNote(mr.id, first);
    expect(w.active()).toBe(0);
    const second = await o.comment(o.dev, mr.id, '/hookbot merge');
    await w.processNote(mr.id, second);
    expect(w.store.queued()).toMatchObject([{ itemKey, approval: { noteId: second, sha: mr.head } }]);
    expect(w.store.queued()[0]).not.toHaveProperty('left');
  });

  // Issue 36, finding 3: a merge train pushes its cars into the target project, whose CI builds them
  // with its secret variables and runners. A fork's head rides only at the head a developer approved.
  const TRAIN_RULES = RULES.replaceAll('status_timeout: 10m }', 'status_timeout: 10m, depth: 2 }');

  async function trainBranches(w: QueueWorld): Promise<string[]> {
    const names: string[] = [];
    for await (const b of w.admin.branches.list(w.project.id))
      if (b.name.startsWith('hookbot/train/')) names.push(b.name);
    return names;
  }

  it("a merge train takes a fork's merge request queued by its label out, with one comment, its head never pushed into the project; a developer's comment lets it ride, and it lands", async () => {
    const o = await outsiders(TRAIN_RULES);
    const { w, dev } = o;
    // A developer's own fork: the gate lets her label queue it, the train still wants an approval.
    const fork = await fetch(`${sb.apiUrl}/projects/fork/${w.project.id}`, {
      method: 'POST',
      headers: { 'private-token': dev.token },
    });
    expect(fork.status).toBe(201);
    const devFork = ((await fork.json()) as { id: number }).id;
    await dev.client.branches.create(devFork, { branch_name: 'dev-fork', ref: 'master' });
    const committed = await fetch(`${sb.apiUrl}/projects/${devFork}/repository/files`, {
      method: 'POST',
      headers: { 'private-token': dev.token, 'content-type': 'application/json' },
      body: JSON.stringify({
        file_path: 'dev.txt',
        branch_name: 'dev-fork',
        content: 'calls: foo\n',
        commit_message: 'dev',
      }),
    });
    expect(committed.status).toBe(201);
    await pushWorkIdle(sb.ctx);
    const head = (await w.admin.branches.get(devFork, 'dev-fork')).commit.id;
    const mr = await dev.client.mergeRequests.create(devFork, {
      source_branch: 'dev-fork',
      target_branch: 'master',
      target_project_id: w.project.id,
      title: 'From a developer fork',
      labels: ['automerge'],
    });
    await w.processItem(mr.id);
    expect(w.active()).toBe(1);
    const runs = w.ci.runs;
    const report = await w.sweeps.run('merge_queue');
    expect((report as { items: { outcome: string; detail: string }[] }).items).toMatchObject([
      {
        outcome: 'removed',
        detail: expect.stringContaining("a fork's merge request rides only at a head a developer approved"),
      },
    ]);
    expect(await trainBranches(w)).toEqual([]);
    expect(w.ci.runs).toBe(runs);
    const notes: string[] = [];
    for await (const note of w.admin.notes.listMergeRequestNotes(w.project.id, mr.id))
      if (note.author.username === w.bot.username) notes.push(note.body);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('is in another project (a fork)');
    // Evaluated again at the same head (a status hook), it does not come back by its label.
    await w.processItem(mr.id);
    expect(w.active()).toBe(0);
    // Her own comment approves the head (she is a developer): it rides, and lands.
    await w.processNote(mr.id, await o.comment(dev, mr.id, '/hookbot merge'));
    expect(w.store.queued().find((e) => !e.left)).toMatchObject({
      approval: { by: dev.username, sha: head },
    });
    // A fork's approval settles before its head rides (the server's note of a push may lag it).
    const settling = (await w.sweeps.run('merge_queue')) as { items: { outcome: string; detail: string }[] };
    expect(settling.items).toMatchObject([
      { outcome: 'waiting', detail: expect.stringContaining('settles') },
    ]);
    expect(await trainBranches(w)).toEqual([]);
    w.clock.offset += FORK_APPROVAL_SETTLE_MS;
    await w.drive(() => w.active() === 0, 'the approved fork merge request lands');
    expect(await o.state(mr.id)).toBe('merged');
    expect(await onMaster(o, head)).toBe(true);
    expect(await trainBranches(w)).toEqual([]);
  });

  it("a merge train never carries a fork's head pushed after the approval: taken out at once, nothing of it pushed into the project", async () => {
    const o = await outsiders(TRAIN_RULES);
    const { w } = o;
    const mr = await o.fromFork('fork-train', 'calls: foo\n');
    await w.processNote(mr.id, await o.comment(o.dev, mr.id, '/hookbot merge'));
    expect(w.store.queued()).toMatchObject([{ approval: { sha: mr.head } }]);
    const unreviewed = await o.pushFork('fork-train', 'unreviewed.txt');
    await w.ci.idle();
    const report = await w.sweeps.run('merge_queue');
    expect((report as { items: { outcome: string; detail: string }[] }).items).toMatchObject([
      { outcome: 'dropped', detail: expect.stringContaining(`pushed after @${o.dev.username} approved`) },
    ]);
    expect(await trainBranches(w)).toEqual([]);
    await w.drive(() => w.active() === 0, 'nothing rides');
    expect(await o.state(mr.id)).toBe('opened');
    expect(await onMaster(o, unreviewed)).toBe(false);
    expect(await trainBranches(w)).toEqual([]);
  });

  it("a merge train's landing replays the comment that queued the merge request: its author demoted since, it does not land", async () => {
    const o = await outsiders(TRAIN_RULES);
    const { w } = o;
    const mr = await o.fromFork('fork-demoted', 'calls: foo\n');
    await w.processNote(mr.id, await o.comment(o.dev, mr.id, '/hookbot merge'));
    w.clock.offset += FORK_APPROVAL_SETTLE_MS;
    await w.sweeps.run('merge_queue');
    expect(await trainBranches(w)).toHaveLength(1);
    await w.ci.idle();
    // Between the car's build and its landing, the developer who approved is a reporter.
    sb.ctx.db.data.groupMembers.find(
      (m) => m.group_id === w.groupId && m.user_id === o.dev.id,
    )!.access_level = 20;
    sb.ctx.db.changed();
    await w.drive(() => w.active() === 0, 'the merge request leaves the queue');
    expect(await o.state(mr.id)).toBe('opened');
    expect(await onMaster(o, mr.head)).toBe(false);
    expect(o.explain(mr.id)).toContain('reporter (20)');
  });

  it("a reset of the fork's branch to an older commit after the comment voids the approval too (the version current at the comment holds another head)", async () => {
    const o = await outsiders();
    const { w, outsider } = o;
    const mr = await o.fromFork('fork-reset', 'calls: foo\n');
    const older = (await w.admin.commits.get(o.forkId, mr.head)).parent_ids[0]!;
    // The developer reviewed the head; its owner puts the branch back on the commit before it.
    const byDev = await o.comment(o.dev, mr.id, '/hookbot merge');
    const url = (await w.admin.projects.get(o.forkId)).http_url_to_repo as string;
    const me = await gitUser(
      workDir,
      { username: outsider.username, password: `${outsider.username}-password` },
      url,
    );
    await me.git('push', '--quiet', '--force', 'origin', `${older}:refs/heads/fork-reset`);
    await pushWorkIdle(sb.ctx);
    await w.ci.idle();
    await w.processNote(mr.id, byDev);
    expect(w.active()).toBe(0);
    expect(o.explain(mr.id)).toContain(
      `a push to its source branch came after the comment of @${o.dev.username}`,
    );
  });
});
