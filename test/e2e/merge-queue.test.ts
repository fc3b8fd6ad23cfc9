/**
 * The merge queue end to end against the sandbox over real HTTP and real git: the bot's parts wired
 * as in production (client, memory store, rules from a folder, executor with its fresh check, item
 * processor, the merge_queue sweep with a branch updater pushing over git HTTP, and once over git
 * SSH with the bot's key), and a simulated CI
 * that builds every new head and fails a head where a semantic conflict is present.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findDecision } from '../../src/rules/item/find-decision.ts';
import type { MergeQueueReport } from '../../src/scheduler/sweeps/merge-queue.ts';
import { createQueueControls } from '../../src/scheduler/sweeps/queue-controls.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import type { CiMode } from '../helpers/simulated-ci.ts';
import {
  commitFile,
  makeQueueWorld,
  masterLine,
  openMergeRequest,
  type QueueWorld,
} from '../helpers/queue-world.ts';
import { knownHostsFile, sshKeyPair } from '../helpers/ssh-keys.ts';

const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], priority_labels: [urgent], status_timeout: 10m, max_updates: 3 }
`;

// Generous: git, the sandbox and the CI share a busy 2-core machine (each wait is on a condition).
describe('merge queue against the sandbox', { timeout: 180_000 }, () => {
  let sb: Sandbox;
  let cacheDir = '';
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'mq-root-token', hookTimeoutMs: 2_000, sshPort: 0 });
    cacheDir = await mkdtemp(path.join(tmpdir(), 'hookbot-mq-e2e-'));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  afterAll(async () => {
    await sb?.close();
    await rm(cacheDir, { recursive: true, force: true });
  });

  let n = 0;
  async function world(
    modeOf?: (branch: string) => CiMode,
    ssh?: Parameters<typeof makeQueueWorld>[1]['ssh'],
  ): Promise<QueueWorld> {
    n += 1;
    const w = await makeQueueWorld(sb, {
      prefix: `mq${n}`,
      rules: RULES,
      workDir: cacheDir,
      ...(modeOf ? { modeOf } : {}),
      ...(ssh ? { ssh } : {}),
    });
    cleanups.push(() => w.close());
    return w;
  }

  const mergeRequest = openMergeRequest;

  async function botNotes(w: QueueWorld, mrId: number): Promise<string[]> {
    const bodies: string[] = [];
    for await (const note of w.admin.notes.listMergeRequestNotes(w.project.id, mrId))
      if (!note.system && note.author.username.endsWith('-bot')) bodies.push(note.body);
    return bodies;
  }

  /**
   * Two merge requests queued in order, the first one's head tested (pinned) and waiting: its CI
   * never reports when `firstStuck`, nor the second's when `secondStuck`.
   */
  async function firstUnderTest(
    [firstBranch, firstFile]: [string, string],
    [secondBranch, secondFile]: [string, string],
    stuck: { secondStuck?: boolean; waitingFor?: string } = {},
  ) {
    const stuckBranches = stuck.secondStuck ? [firstBranch, secondBranch] : [firstBranch];
    const w = await world((branch) => (stuckBranches.includes(branch) ? 'pending-forever' : 'normal'));
    const first = await mergeRequest(w, firstBranch, { [firstFile]: 'calls: foo\n' });
    const second = await mergeRequest(w, secondBranch, { [secondFile]: 'calls: foo\n' });
    await w.ci.idle();
    await w.processItem(first.id);
    await w.processItem(second.id);
    await w.drive(
      () => w.store.queued().find((e) => e.mrId === first.id)?.pinnedSha !== undefined,
      stuck.waitingFor ?? 'the first merge request to be tested',
    );
    return { w, first, second, tested: w.store.queued().find((e) => e.mrId === first.id)?.pinnedSha };
  }

  it('merges merge requests that turned green together one at a time, each tested on the current target; the target is never broken', async () => {
    const w = await world();
    const a = await mergeRequest(w, 'feature-a', { 'a.txt': 'calls: foo\n' });
    const b = await mergeRequest(w, 'feature-b', { 'b.txt': 'calls: foo\n' });
    // Renames foo to bar: green alone, red on top of a and b (a semantic conflict git cannot see).
    const rename = await mergeRequest(w, 'rename', { 'lib.txt': 'def bar\n', 'r.txt': 'calls: bar\n' });
    const c = await mergeRequest(w, 'feature-c', { 'c.txt': 'calls: foo\n' });
    await w.ci.idle();
    // All four are green on their own heads.
    for (const mr of [a, b, rename, c]) {
      const head = (await w.admin.branches.get(w.project.id, mr.source_branch)).commit.id;
      expect(await w.ci.passes(w.project.id, head)).toBe(true);
    }
    for (const mr of [a, b, rename, c]) await w.processItem(mr.id);
    expect(w.store.queued()).toHaveLength(4);

    // Explain tells where each one stands.
    const explained = findDecision(
      w.store.latestDecisions(),
      { project: w.path, kind: 'merge_request', number: c.iid },
      { entries: w.store.queued(), now: Date.now() },
    );
    expect(explained.found && explained.note).toMatch(
      /^merge queue: position 4 of 4 in the default queue for master/,
    );

    const reports = await w.drive(() => w.active() === 0, 'the queue to empty');
    const merged = reports.flatMap((r) => r.items).filter((i) => i.outcome === 'merged');
    expect(merged.map((i) => i.itemKey)).toEqual(
      [a, b, c].map((mr) => `merge_request:${w.project.id}:${mr.id}`),
    );
    // One at a time: no run ever had two merge requests of the queue in flight.
    for (const report of reports)
      expect(
        report.items.filter((i) => ['updated', 'waiting', 'merged'].includes(i.outcome)).length,
      ).toBeLessThanOrEqual(report.items.filter((i) => i.outcome === 'merged').length + 1);
    for (const mr of [a, b, c])
      expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('merged');
    const renamed = await w.admin.mergeRequests.get(w.project.id, rename.id);
    expect(renamed.state).toBe('opened');
    const notes = await botNotes(w, rename.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(
      /^Removed from the default merge queue for `master`: ci\/test failed on [0-9a-f]{7}/,
    );
    expect(notes[0]).toContain('enters again');
    // Evaluated again on the same head (a hook, a sweep), it does not enter again: no loop of
    // test, fail, enter. Explain says why and how to come back.
    await w.processItem(rename.id);
    expect(w.active()).toBe(0);
    const gone = findDecision(
      w.store.latestDecisions(),
      { project: w.path, kind: 'merge_request', number: rename.iid },
      { entries: w.store.queued(), now: Date.now() },
    );
    expect(gone.found && gone.note).toMatch(
      /^merge queue: left the default queue for master at [0-9a-f]{7}: ci\/test failed on .*; it enters again after a push/,
    );
    // Every commit the target ever pointed at passes the check.
    const line = await masterLine(w);
    expect(line.length).toBe(4);
    expect(line.filter((commit) => !commit.passes)).toEqual([]);
    // Each merge brought in a head that already held the target it was merged into: what was tested
    // is what master became.
    for (const { sha } of line.slice(1)) {
      const merge = (await sb.ctx.git.commit(w.project.id, sha))!;
      const [before, tested] = merge.parent_ids as [string, string];
      const missing = await sb.ctx.git.compare(w.project.id, tested, w.project.id, before);
      expect(missing.commits).toEqual([]);
      expect(merge.tree).toBe((await sb.ctx.git.commit(w.project.id, tested))!.tree);
    }
  });

  it('takes a merge request that conflicts with the target out of the queue with one comment', async () => {
    const w = await world();
    const first = await mergeRequest(w, 'edit-one', { 'shared.txt': 'one\nTWO by first\nthree\n' });
    const second = await mergeRequest(w, 'edit-two', { 'shared.txt': 'one\nTWO by second\nthree\n' });
    await w.ci.idle();
    await w.processItem(first.id);
    await w.processItem(second.id);
    await w.drive(() => w.active() === 0, 'the queue to empty');
    expect((await w.admin.mergeRequests.get(w.project.id, first.id)).state).toBe('merged');
    expect((await w.admin.mergeRequests.get(w.project.id, second.id)).state).toBe('opened');
    const notes = await botNotes(w, second.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/edit-two conflicts with master at [0-9a-f]{7} in `shared\.txt`/);
    // A push (the conflict resolved) lets it in again, at the end, and it is merged.
    await commitFile(w, 'edit-two', 'shared.txt', 'one\nTWO by first\nthree\n', {
      message: 'resolve',
      update: true,
    });
    await w.ci.idle();
    await w.processItem(second.id);
    expect(w.active()).toBe(1);
    await w.drive(() => w.active() === 0, 'the queue to empty again');
    expect((await w.admin.mergeRequests.get(w.project.id, second.id)).state).toBe('merged');
    expect(await botNotes(w, second.id)).toHaveLength(1);
  });

  it('killed right after a merge request was marked as left: its removal comment is still posted, once', async () => {
    const w = await world();
    const first = await mergeRequest(w, 'k-one', { 'shared.txt': 'one\nTWO by first\nthree\n' });
    const second = await mergeRequest(w, 'k-two', { 'shared.txt': 'one\nTWO by second\nthree\n' });
    await w.ci.idle();
    await w.processItem(first.id);
    await w.processItem(second.id);
    // The process "dies" right after the store took the entry's `left` mark (the write is done, the
    // steps after it never run): the same store object is shared by every part of the world.
    const enqueue = w.store.enqueue.bind(w.store);
    let killed = false;
    w.store.enqueue = async (entry) => {
      await enqueue(entry);
      if (entry.left && entry.mrId === second.id && !killed) {
        killed = true;
        throw new Error('killed right after the left mark');
      }
    };
    await w.drive(() => w.active() === 0, 'the queue to empty');
    expect(killed).toBe(true);
    expect((await w.admin.mergeRequests.get(w.project.id, first.id)).state).toBe('merged');
    expect((await w.admin.mergeRequests.get(w.project.id, second.id)).state).toBe('opened');
    // What the dead process did not do, the retry sweep does once its lease on the call is over.
    w.clock.offset += 2 * 60_000;
    await w.sweeps.run('retries');
    const notes = await botNotes(w, second.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/k-two conflicts with master at [0-9a-f]{7} in `shared\.txt`/);
    await w.sweeps.run('retries');
    await w.sweeps.run('merge_queue');
    expect(await botNotes(w, second.id)).toHaveLength(1);
  });

  it('killed after the removal comment was put in the outbox, before the left mark: the retry withdraws it, the next run removes and comments once', async () => {
    const w = await world();
    const first = await mergeRequest(w, 'b-one', { 'shared.txt': 'one\nTWO by first\nthree\n' });
    const second = await mergeRequest(w, 'b-two', { 'shared.txt': 'one\nTWO by second\nthree\n' });
    await w.ci.idle();
    await w.processItem(first.id);
    await w.processItem(second.id);
    // The process "dies" right before the store takes the entry's `left` mark (the comment is in the
    // outbox already; neither that write nor the steps after it happen).
    const enqueue = w.store.enqueue.bind(w.store);
    let killed = false;
    w.store.enqueue = async (entry) => {
      if (entry.left && entry.mrId === second.id && !killed) {
        killed = true;
        throw new Error('killed right before the left mark');
      }
      await enqueue(entry);
    };
    await w.drive(() => killed || w.active() === 0, 'the kill');
    expect(killed).toBe(true);
    expect(w.store.queued().some((e) => e.mrId === second.id && !e.left)).toBe(true);
    // The retry sweep, once the lease on the call is over: the removal did not take effect, so its
    // comment is withdrawn, not sent.
    w.clock.offset += 2 * 60_000;
    const retried = (await w.sweeps.run('retries')) as { calls: { status: string; detail: string }[] };
    expect(retried.calls.map((call) => call.status)).toEqual(['withdrawn']);
    expect(await botNotes(w, second.id)).toHaveLength(0);
    // The next run judges it again: out, with one comment.
    await w.drive(() => w.active() === 0, 'the queue to empty');
    expect((await w.admin.mergeRequests.get(w.project.id, second.id)).state).toBe('opened');
    const notes = await botNotes(w, second.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/b-two conflicts with master at [0-9a-f]{7} in `shared\.txt`/);
    await w.sweeps.run('retries');
    expect(await botNotes(w, second.id)).toHaveLength(1);
  });

  it('a status that never reports holds the queue only until the timeout; then the next one goes', async () => {
    // The stuck head is tested and waits.
    const {
      w,
      first: stuck,
      second: next,
    } = await firstUnderTest(['stuck', 's.txt'], ['after', 'n.txt'], {
      waitingFor: 'the stuck merge request to be tested',
    });
    const report = (await w.sweeps.run('merge_queue')) as MergeQueueReport;
    expect(report.items).toEqual([
      expect.objectContaining({ outcome: 'waiting', detail: expect.stringContaining('ci/test') }),
    ]);
    // Time passes beyond status_timeout (10m): it is taken out, and the next one is merged.
    w.clock.offset += 11 * 60_000;
    await w.drive(() => w.active() === 0, 'the queue to empty');
    expect((await w.admin.mergeRequests.get(w.project.id, next.id)).state).toBe('merged');
    expect((await w.admin.mergeRequests.get(w.project.id, stuck.id)).state).toBe('opened');
    const notes = await botNotes(w, stuck.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/ci\/test \(running\) did not succeed on [0-9a-f]{7} within 600 s/);
  });

  it("a paused queue's head under test is not timed out however long the freeze; on resume its status_timeout starts again", async () => {
    const { w, first: stuck } = await firstUnderTest(['frozen', 'f.txt'], ['behind', 'b.txt'], {
      waitingFor: 'the frozen merge request to be tested',
    });
    const controls = createQueueControls({
      client: w.client,
      store: w.store,
      executor: w.executor,
      now: w.now,
      log: { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} } as never,
    });
    expect(await controls.pause({ project: w.path, targetBranch: 'master' }, 'ops', 'freeze')).toMatchObject({
      ok: true,
    });
    // The freeze lasts past status_timeout (10m): the head stays, waiting, and nobody leaves.
    w.clock.offset += 11 * 60_000;
    const frozen = (await w.sweeps.run('merge_queue')) as MergeQueueReport;
    expect(frozen.items).toEqual([
      expect.objectContaining({
        outcome: 'waiting',
        detail: expect.stringMatching(/^the queue is paused by ops/),
      }),
    ]);
    expect(w.active()).toBe(2);
    const resumedAt = w.now();
    expect(await controls.resume({ project: w.path, targetBranch: 'master' }, 'ops')).toMatchObject({
      ok: true,
    });
    const head = w.store.queued().find((e) => e.mrId === stuck.id)!;
    expect(head.testingSince).toBeGreaterThanOrEqual(resumedAt);
    // Resumed: its statuses are awaited again for a whole status_timeout.
    const after = (await w.sweeps.run('merge_queue')) as MergeQueueReport;
    expect(after.items).toEqual([
      expect.objectContaining({ outcome: 'waiting', detail: expect.stringContaining('ci/test') }),
    ]);
    expect(w.active()).toBe(2);
    expect(await botNotes(w, stuck.id)).toEqual([]);
  });

  it('a push by someone else (then back at the end), or a removed label, takes the merge request out at once without a comment', async () => {
    // Neither reports: each waits at the head (a green head already up to date is merged at once).
    const {
      w,
      first: pushed,
      second: relabelled,
    } = await firstUnderTest(['pushed', 'p.txt'], ['relabelled', 'q.txt'], { secondStuck: true });
    // Someone pushes to the tested branch.
    await commitFile(w, 'pushed', 'late.txt', 'late\n', { message: 'late' });
    const report = (await w.sweeps.run('merge_queue')) as MergeQueueReport;
    expect(report.items[0]).toMatchObject({
      outcome: 'dropped',
      detail: expect.stringContaining('pushed by someone else'),
    });
    // Out of its place at once, then evaluated again on its new head: its rule still matches, so
    // it enters again at the end, untested (whichever of its hooks and the sweep came first).
    expect(report.items[0]?.detail).toContain('it enters again at the end of the queue');
    expect(w.store.queued().map((entry) => entry.mrId)).toEqual([relabelled.id, pushed.id]);
    expect(w.store.queued().find((entry) => entry.mrId === pushed.id)?.pinnedSha).toBeUndefined();
    // The label goes: the next evaluation takes the other one out.
    await w.admin.mergeRequests.update(w.project.id, relabelled.id, { labels: [] });
    await w.processItem(relabelled.id);
    expect(w.store.queued().map((entry) => entry.mrId)).toEqual([pushed.id]);
    expect(await botNotes(w, pushed.id)).toEqual([]);
    expect(await botNotes(w, relabelled.id)).toEqual([]);
  });

  it('one pushed by someone else enters again at the end and, once the one before it is merged, is tested in the same run: no hook or tick is left to come for it', async () => {
    const {
      w,
      first: pushed,
      tested,
    } = await firstUnderTest(['pushed-first', 'p.txt'], ['green-second', 'g.txt']);
    await commitFile(w, 'pushed-first', 'late.txt', 'late\n', { message: 'late' });
    // One run: out (and back at the end), the next one merged (green and up to date), and then the
    // pushed one, now the head, brought up to the master that merge made.
    const report = (await w.sweeps.run('merge_queue')) as MergeQueueReport;
    expect(report.items.map((item) => [item.itemKey.endsWith(`:${pushed.id}`), item.outcome])).toEqual([
      [true, 'dropped'],
      [false, 'merged'],
      [true, 'updated'],
    ]);
    const entry = w.store.queued().find((e) => e.mrId === pushed.id);
    expect(entry?.pinnedSha).toBeDefined();
    expect(entry?.pinnedSha).not.toBe(tested);
    expect(entry?.targetSha).toBe((await w.admin.branches.get(w.project.id, 'master')).commit.id);
  });

  it('the merge is made only while the rule still holds on a fresh read: a label removed unseen takes it out', async () => {
    const w = await world();
    const mr = await mergeRequest(w, 'unseen', { 'u.txt': 'calls: foo\n' });
    // Master moves first: the queue pushes an update, whose statuses come after its run (a head
    // already up to date and green would be merged in the run that pins it).
    const moved = await commitFile(w, 'master', 'm.txt', 'm\n', { message: 'm' });
    expect(moved.ok).toBe(true);
    await w.ci.idle();
    await w.processItem(mr.id);
    // Tested and green, but before the merge the label goes, and no hook tells the bot.
    await w.drive(() => w.store.queued()[0]?.pinnedSha !== undefined, 'the head to be tested');
    expect(w.store.queued()[0]?.updates).toBe(1);
    await w.ci.idle();
    await w.admin.mergeRequests.update(w.project.id, mr.id, { labels: [] });
    const [report] = await w.drive(() => w.active() === 0, 'the queue to empty');
    expect(report?.items[0]).toMatchObject({
      outcome: 'dropped',
      detail: expect.stringContaining('queue automerge no longer matches'),
    });
    expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('opened');
  });

  it('a merge request with a priority label goes first', async () => {
    const w = await world();
    const early = await mergeRequest(w, 'early', { 'e.txt': 'calls: foo\n' });
    const urgent = await mergeRequest(w, 'urgent', { 'x.txt': 'calls: foo\n' }, ['automerge', 'urgent']);
    await w.ci.idle();
    await w.processItem(early.id);
    await w.processItem(urgent.id);
    const reports = await w.drive(() => w.active() === 0, 'the queue to empty');
    const merged = reports.flatMap((r) => r.items).filter((i) => i.outcome === 'merged');
    expect(merged.map((i) => i.itemKey)).toEqual(
      [urgent, early].map((m) => `merge_request:${w.project.id}:${m.id}`),
    );
  });

  it('a target that moves while the head is tested brings the branch up again, at most max_updates times', async () => {
    const w = await world();
    const mr = await mergeRequest(w, 'chased', { 'c.txt': 'calls: foo\n' });
    await w.ci.idle();
    await w.processItem(mr.id);
    const head = () => w.store.queued().find((e) => e.mrId === mr.id);
    let moves = 0;
    /** Someone lands a commit on master directly. */
    const moveMaster = async () => {
      moves += 1;
      const response = await commitFile(w, 'master', `direct-${moves}.txt`, 'x\n', {
        message: `direct ${moves}`,
      });
      expect(response.ok).toBe(true);
    };
    // Updated once when it became the head (master has moved since the branch was made)...
    await moveMaster();
    await w.drive(() => head()?.pinnedSha !== undefined, 'the head to be tested');
    expect(head()?.updates).toBe(1);
    // ... then each time master moves under its green head, again, up to max_updates (3) in all.
    for (const updates of [2, 3]) {
      const before = head()!.pinnedSha;
      await w.ci.idle();
      await moveMaster();
      await w.drive(() => head()?.pinnedSha !== before, `update ${updates}`);
      expect(head()?.updates).toBe(updates);
    }
    await w.ci.idle();
    await moveMaster();
    await w.drive(() => head()?.left !== undefined, 'the merge request to leave');
    expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('opened');
    const notes = await botNotes(w, mr.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('master moved again after 3 updates of the branch (max_updates)');
  });

  it("an operator's move to the front does not count against the displaced head's max_updates", async () => {
    const w = await world();
    const chased = await mergeRequest(w, 'chased-front', { 'c.txt': 'calls: foo\n' });
    await w.ci.idle();
    await w.processItem(chased.id);
    const head = () => w.store.queued().find((e) => e.mrId === chased.id);
    let moves = 0;
    const moveMaster = async () => {
      moves += 1;
      const response = await commitFile(w, 'master', `direct-${moves}.txt`, 'x\n', {
        message: `direct ${moves}`,
      });
      expect(response.ok).toBe(true);
    };
    // The head used every update max_updates (3) allows: master moved under it three times.
    await moveMaster();
    await w.drive(() => head()?.pinnedSha !== undefined, 'the head to be tested');
    for (const updates of [2, 3]) {
      const before = head()!.pinnedSha;
      await w.ci.idle();
      await moveMaster();
      await w.drive(() => head()?.pinnedSha !== before, `update ${updates}`);
    }
    expect(head()?.updates).toBe(3);
    // An operator moves another merge request in front of it: that one merges first, and master moves
    // under the displaced head once more, by the operator's choice, not by the target's traffic.
    const urgent = await mergeRequest(w, 'urgent-front', { 'u.txt': 'calls: foo\n' });
    await w.ci.idle();
    await w.processItem(urgent.id);
    const controls = createQueueControls({
      client: w.client,
      store: w.store,
      executor: w.executor,
      now: w.now,
      log: { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} } as never,
    });
    expect(await controls.front({ project: w.path, iid: urgent.iid }, 'ops')).toMatchObject({ ok: true });
    await w.drive(() => w.active() === 0, 'the queue to empty');
    expect((await w.admin.mergeRequests.get(w.project.id, urgent.id)).state).toBe('merged');
    expect((await w.admin.mergeRequests.get(w.project.id, chased.id)).state).toBe('merged');
    expect(await botNotes(w, chased.id)).toEqual([]);
  });

  // Real ssh processes on top of the queue's work: room for a busy machine (drive itself waits up to 60 s).
  it(
    'with an SSH key: a merge request whose branch is behind is brought up over ssh_url_to_repo and merged',
    { timeout: 90_000 },
    async () => {
      const key = await sshKeyPair(cacheDir, `id_mq${n + 1}`);
      const knownHosts = await knownHostsFile(cacheDir, `known_hosts_mq${n + 1}`, sb.ssh!.knownHostsLine);
      const w = await world(undefined, { ...key, knownHostsFile: knownHosts });
      const mr = await mergeRequest(w, 'behind', { 'b.txt': 'calls: foo\n' });
      // master moves after the branch was made: the branch is behind and must be updated before merging.
      const response = await commitFile(w, 'master', 'moved.txt', 'x\n', { message: 'moved' });
      expect(response.ok).toBe(true);
      const movedMaster = (await w.admin.branches.get(w.project.id, 'master')).commit.id;
      await w.ci.idle();
      await w.processItem(mr.id);
      expect(w.active()).toBe(1);

      const reports = await w.drive(() => w.active() === 0, 'the queue to empty');
      expect(reports.flatMap((r) => r.items).map((i) => i.outcome)).toEqual(
        expect.arrayContaining(['updated', 'merged']),
      );
      expect(w.pushes()).toBe(1);
      expect(w.gitUrls.length).toBeGreaterThan(0);
      for (const url of w.gitUrls) expect(url).toBe(`ssh://git@127.0.0.1:${sb.ssh!.port}/${w.path}.git`);
      expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('merged');
      // What master became holds the moved master and the branch, through the update pushed over SSH.
      const merge = (await sb.ctx.git.commit(w.project.id, 'master'))!;
      const [before, tested] = merge.parent_ids as [string, string];
      expect(before).toBe(movedMaster);
      const updated = (await sb.ctx.git.commit(w.project.id, tested))!;
      expect(updated.parent_ids[1]).toBe(movedMaster);
      expect(updated.author_name).toBe('hookbot');
    },
  );
});
