/**
 * Where the merge queue pushes, and what it says when it cannot work, against the sandbox over real
 * HTTP and git (the bot's parts wired as in production, test/helpers/queue-world.ts): the queue
 * pushes only to a merge request's own source branch, in the target project, where the author could
 * push (never the default branch, never a protected branch, never a fork's branch, never for an author
 * without developer access), asked again right before the push; and a queue whose steps keep failing
 * says so in explain/the status page at once and in one comment after a while.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import type { MergeQueueReport } from '../../src/scheduler/sweeps/merge-queue.ts';
import { addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { queuePosition } from '../../src/state/queue-order.ts';
import { commitFile, makeQueueWorld, openMergeRequest, type QueueWorld } from '../helpers/queue-world.ts';

const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, max_updates: 3 }
  # A label queues only members' merge requests (docs/rules.md#members-commands); a developer's
  # comment queues anyone's.
  - name: queue on command
    on: [note.created]
    for: merge_requests
    if: [ { state: opened }, { note: { matches: '^/hookbot merge' } }, { actor_access: developer } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, max_updates: 3 }
`;

// Generous: git, the sandbox and the CI share a busy 2-core machine (each wait is on a condition).
describe('merge queue: where it pushes, and saying when it cannot', { timeout: 180_000 }, () => {
  let sb: Sandbox;
  let workDir = '';
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'mqp-root-token', hookTimeoutMs: 2_000 });
    workDir = await mkdtemp(path.join(tmpdir(), 'hookbot-mq-push-'));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  afterAll(async () => {
    await sb?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  let n = 0;
  async function world(extra: Partial<Parameters<typeof makeQueueWorld>[1]> = {}): Promise<QueueWorld> {
    n += 1;
    const w = await makeQueueWorld(sb, { prefix: `mqp${n}`, rules: RULES, workDir, ...extra });
    cleanups.push(() => w.close());
    return w;
  }

  /** A user of the sandbox with an API client; `level` in the project's group, if given. */
  function person(
    w: QueueWorld,
    name: string,
    level?: number,
  ): { id: number; client: Client; token: string } {
    const token = `${name}-token-0123456789`;
    const user = addUser(sb.ctx.db, { username: name, private_token: token, password: `${name}-password` });
    if (level !== undefined)
      sb.ctx.db.data.groupMembers.push({ group_id: w.groupId, user_id: user.id, access_level: level });
    sb.ctx.db.changed();
    return { id: user.id, token, client: createClient({ baseUrl: sb.url, token, retry: { limit: 0 } }) };
  }

  async function commitAs(token: string, projectId: number, branch: string, file: string, content: string) {
    const response = await fetch(`${sb.apiUrl}/projects/${projectId}/repository/files`, {
      method: 'POST',
      headers: { 'private-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({
        file_path: file,
        branch_name: branch,
        content,
        commit_message: `${branch}: ${file}`,
      }),
    });
    if (!response.ok) throw new Error(`could not commit ${file} on ${branch}: ${response.status}`);
  }

  async function botNotes(w: QueueWorld, mrId: number): Promise<string[]> {
    const bodies: string[] = [];
    for await (const note of w.admin.notes.listMergeRequestNotes(w.project.id, mrId))
      if (!note.system && note.author.username === w.bot.username) bodies.push(note.body);
    return bodies;
  }

  const head = async (w: QueueWorld, branch: string, projectId = w.project.id) =>
    (await w.admin.branches.get(projectId, branch)).commit.id;

  it('refuses a merge request whose source is the default branch, or a protected one, with one comment; it pushes nothing and does not loop', async () => {
    const w = await world();
    const dev = person(w, `mqp${n}-dev`, 30);
    // The developer's own branch, ahead of master: the queue would push `Merge branch 'evil' into master`.
    await dev.client.branches.create(w.project.id, { branch_name: 'evil', ref: 'master' });
    await commitAs(dev.token, w.project.id, 'evil', 'evil.txt', 'planted\n');
    await w.admin.branches.create(w.project.id, { branch_name: 'release', ref: 'master' });
    await w.admin.branches.protect(w.project.id, 'release');
    const master = await head(w, 'master');
    const release = await head(w, 'release');
    const fromMaster = await dev.client.mergeRequests.create(w.project.id, {
      source_branch: 'master',
      target_branch: 'evil',
      title: 'Take master',
      labels: ['automerge'],
    });
    const fromRelease = await dev.client.mergeRequests.create(w.project.id, {
      source_branch: 'release',
      target_branch: 'evil',
      title: 'Take release',
      labels: ['automerge'],
    });
    await w.ci.idle();
    await w.processItem(fromMaster.id);
    await w.processItem(fromRelease.id);
    expect(w.active()).toBe(2);
    const reports = await w.drive(() => w.active() === 0, 'both to be refused');
    expect(reports.flatMap((r) => r.items).map((i) => i.outcome)).toEqual(['removed', 'removed']);
    expect(w.pushes()).toBe(0);
    expect(await head(w, 'master')).toBe(master);
    expect(await head(w, 'release')).toBe(release);
    const masterNotes = await botNotes(w, fromMaster.id);
    expect(masterNotes).toHaveLength(1);
    expect(masterNotes[0]).toMatch(
      /^Removed from the default merge queue for `evil`: its source branch `master` is the project's default branch: the queue never pushes to it/,
    );
    const releaseNotes = await botNotes(w, fromRelease.id);
    expect(releaseNotes).toHaveLength(1);
    expect(releaseNotes[0]).toContain('its source branch `release` is protected');
    // Evaluated again on the same heads (a hook, a sweep): remembered, no loop, no second comment.
    await w.processItem(fromMaster.id);
    await w.processItem(fromRelease.id);
    await w.sweeps.run('merge_queue');
    expect(w.active()).toBe(0);
    expect(await botNotes(w, fromMaster.id)).toHaveLength(1);
    expect(await botNotes(w, fromRelease.id)).toHaveLength(1);
    expect(await head(w, 'master')).toBe(master);
  });

  it('pushes for an author with developer access to the project, and not for one without it', async () => {
    const w = await world();
    // A developer of the project itself (not of its group), and a former developer now a reporter.
    const dev = person(w, `mqp${n}-member`);
    sb.ctx.db.data.members.push({
      project_id: w.project.id,
      user_id: dev.id,
      access_level: 30,
      created_at: sb.ctx.db.now(),
    });
    const former = person(w, `mqp${n}-former`, 30);
    for (const [who, branch] of [
      [dev, 'by-member'],
      [former, 'by-former'],
    ] as const) {
      await who.client.branches.create(w.project.id, { branch_name: branch, ref: 'master' });
      await commitAs(who.token, w.project.id, branch, `${branch}.txt`, 'calls: foo\n');
    }
    const byMember = await dev.client.mergeRequests.create(w.project.id, {
      source_branch: 'by-member',
      target_branch: 'master',
      title: 'Member',
      labels: ['automerge'],
    });
    const byFormer = await former.client.mergeRequests.create(w.project.id, {
      source_branch: 'by-former',
      target_branch: 'master',
      title: 'Former',
      labels: ['automerge'],
    });
    sb.ctx.db.data.groupMembers.find((m) => m.user_id === former.id)!.access_level = 20;
    // Master moves: both branches are behind and need a push.
    expect((await commitFile(w, 'master', 'moved.txt', 'x\n', { message: 'moved' })).ok).toBe(true);
    const formerHead = await head(w, 'by-former');
    await w.ci.idle();
    await w.processItem(byMember.id);
    await w.processItem(byFormer.id);
    // A reporter's merge request: its label does not queue it; a developer's comment does, and then
    // the queue still pushes nothing for its author.
    expect(w.store.queued().map((entry) => entry.mrId)).toEqual([byMember.id]);
    const reviewer = person(w, `mqp${n}-reviewer`, 30);
    const command = await reviewer.client.notes.createMergeRequestNote(
      w.project.id,
      byFormer.id,
      '/hookbot merge',
    );
    await w.processNote(byFormer.id, command.id);
    expect(w.active()).toBe(2);
    await w.drive(() => w.active() === 0, 'the queue to empty');
    expect((await w.admin.mergeRequests.get(w.project.id, byMember.id)).state).toBe('merged');
    expect(w.pushes()).toBe(1);
    expect((await w.admin.mergeRequests.get(w.project.id, byFormer.id)).state).toBe('opened');
    expect(await head(w, 'by-former')).toBe(formerHead);
    const notes = await botNotes(w, byFormer.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain(`its author mqp${n}-former cannot push to \`by-former\``);
  });

  it('asks again right before the push: a source branch protected meanwhile is not pushed', async () => {
    const meanwhile: { protect?: () => Promise<unknown> } = {};
    const w = await world({
      // After the queue's first look (unprotected), before the updater fetches, merges and pushes.
      beforeUpdate: async () => {
        await meanwhile.protect?.();
      },
    });
    const mr = await openMergeRequest(w, 'late-protect', { 'l.txt': 'calls: foo\n' });
    meanwhile.protect = () => w.admin.branches.protect(w.project.id, 'late-protect');
    expect((await commitFile(w, 'master', 'moved.txt', 'x\n', { message: 'moved' })).ok).toBe(true);
    const before = await head(w, 'late-protect');
    await w.ci.idle();
    await w.processItem(mr.id);
    await w.drive(() => w.active() === 0, 'the merge request to be refused');
    // The bot is a master: the server would have taken its push. The queue did not make it.
    expect(w.pushes()).toBe(0);
    expect(await head(w, 'late-protect')).toBe(before);
    const notes = await botNotes(w, mr.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('its source branch `late-protect` is protected');
  });

  it("never pushes to a fork: a fork's merge request up to date is tested and merged, one behind is refused with one comment", async () => {
    const w = await world();
    // Public, so an outsider may fork it.
    w.project.visibility_level = 20;
    sb.ctx.db.changed();
    const outsider = person(w, `mqp${n}-outsider`);
    const forked = (await (
      await fetch(`${sb.apiUrl}/projects/fork/${w.project.id}`, {
        method: 'POST',
        headers: { 'private-token': outsider.token },
      })
    ).json()) as { id: number };
    // The CI builds the fork's heads too (it posts its statuses there). The bot could write to the
    // fork (as an administrator's account could, or a member of it): only the queue's rule stops it.
    const ci = sb.ctx.db.data.users.find((u) => u.username === `mqp${n}-ci`)!;
    for (const [user, level] of [
      [ci.id, 30],
      [w.bot.id, 40],
    ] as const)
      sb.ctx.db.data.members.push({
        project_id: forked.id,
        user_id: user,
        access_level: level,
        created_at: sb.ctx.db.now(),
      });
    const fromFork = async (branch: string) => {
      await outsider.client.branches.create(forked.id, { branch_name: branch, ref: 'master' });
      await commitAs(outsider.token, forked.id, branch, `${branch}.txt`, 'calls: foo\n');
      const mr = await outsider.client.mergeRequests.create(forked.id, {
        source_branch: branch,
        target_branch: 'master',
        target_project_id: w.project.id,
        title: `From the fork: ${branch}`,
      });
      await w.admin.mergeRequests.update(w.project.id, mr.id, { labels: ['automerge'] });
      return mr;
    };
    // An outsider's merge request enters the queue on a developer's comment, not on its label.
    const reviewer = person(w, `mqp${n}-reviewer`, 30);
    const approve = async (mrId: number) => {
      await w.processItem(mrId);
      expect(w.active()).toBe(0);
      const note = await reviewer.client.notes.createMergeRequestNote(w.project.id, mrId, '/hookbot merge');
      await w.processNote(mrId, note.id);
      expect(w.active()).toBe(1);
    };
    const upToDate = await fromFork('fork-current');
    await w.ci.idle();
    await approve(upToDate.id);
    await w.drive(() => w.active() === 0, "the up-to-date fork's merge request to be merged");
    expect((await w.admin.mergeRequests.get(w.project.id, upToDate.id)).state).toBe('merged');
    expect(w.pushes()).toBe(0);

    const behind = await fromFork('fork-behind');
    expect((await commitFile(w, 'master', 'moved.txt', 'x\n', { message: 'moved' })).ok).toBe(true);
    const forkHead = await head(w, 'fork-behind', forked.id);
    await w.ci.idle();
    await approve(behind.id);
    await w.drive(() => w.active() === 0, "the fork's merge request to be refused");
    expect(w.pushes()).toBe(0);
    expect(await head(w, 'fork-behind', forked.id)).toBe(forkHead);
    await expect(w.admin.branches.get(w.project.id, 'fork-behind')).rejects.toMatchObject({ status: 404 });
    const notes = await botNotes(w, behind.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('is in another project (a fork) and does not hold master');
    expect(notes[0]).toContain('merge master into it and push');
  });

  it('a queue that cannot work says so: on the status page and explain at once, in one comment after 3 failed steps and 5 minutes', async () => {
    // No git credentials: every step of the head fails.
    const w = await world({ withoutGit: true });
    const mr = await openMergeRequest(w, 'no-git', { 'g.txt': 'calls: foo\n' });
    await w.ci.idle();
    await w.processItem(mr.id);
    const itemKey = `merge_request:${w.project.id}:${mr.id}`;
    const step = async () => ((await w.sweeps.run('merge_queue')) as MergeQueueReport).items[0];
    expect(await step()).toMatchObject({
      outcome: 'error',
      detail: expect.stringContaining('no git credentials'),
    });
    const shown = queuePosition(w.store.queued(), itemKey, Date.now() + w.clock.offset);
    expect(shown).toMatch(
      /^position 1 of 1 in the default queue for master; the queue cannot move: 1 step failed in a row for \d+ s, the last with: no git credentials are configured/,
    );
    await step();
    // Two failures within seconds: a blip, no comment yet.
    expect(await botNotes(w, mr.id)).toEqual([]);
    w.clock.offset += 6 * 60_000;
    await step();
    const notes = await botNotes(w, mr.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(
      /^The merge queue cannot move this merge request: its last 3 steps failed, for 6 minutes, the last with: no git credentials are configured/,
    );
    for (let i = 0; i < 3; i++) {
      w.clock.offset += 6 * 60_000;
      await step();
    }
    expect(await botNotes(w, mr.id)).toHaveLength(1);
    expect(w.store.queued().find((e) => e.itemKey === itemKey)?.trouble).toMatchObject({ count: 6 });
    expect(w.active()).toBe(1);
  });
});
