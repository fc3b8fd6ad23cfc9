/**
 * Adversarial, issue 36's class ("whose authority?"), second pass: the red team attacks the FIXES of
 * the first pass (authority-attacks.test.ts, authority-attacks-developer.test.ts). This file: the
 * server's merge-when-build-succeeds, which the bot arms as a master and then must take back
 * (rules/item/disarm.ts, process-item.ts, merge-watch.ts; the action's refusal of forks). The
 * approvals, the notes and the statuses: authority-attacks-second-approvals.test.ts.
 *
 * The bot's parts are wired as in production (attack-world.ts over queue-world.ts), with
 * `rules.status_authors` naming the CI's account. Mallory is a developer of the project's group; she
 * acts with her own token only (her merge request's state, title and target, her pushes through the
 * files API, her statuses: 8.x lets a developer post a commit status). No hook reaches the bot by
 * itself: each test says when the bot hears what, which is where a real delivery's latency (and the
 * pipeline's `debounce_ms`, 250 ms by default) puts it.
 *
 * An attack the bot resists is asserted as resisted; one that WORKS is asserted with the SAFE outcome,
 * so it fails until the hole is closed (the comment above each says what, and where in src/).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { makeAttackWorld, type AttackWorld } from '../helpers/attack-world.ts';

// The operator lets a master's word arm the server's merge while the build runs (docs/security.md:
// "Where the branch's own rights must hold, require them in the rule (`actor_access: master` on a
// command rule)").
const ARM_ON_MASTERS_COMMAND = `
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
`;

describe(
  'adversarial, second pass: merge-when-build-succeeds against a developer (sandbox over HTTP and git)',
  { timeout: 180_000 },
  () => {
    let sb: Sandbox;
    let workDir = '';
    const cleanups: (() => Promise<void>)[] = [];
    beforeAll(async () => {
      sb = await startSandbox({ adminToken: 'ab-root-token', hookTimeoutMs: 2_000 });
      workDir = await mkdtemp(path.join(tmpdir(), 'hookbot-authority-second-'));
    });
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });
    afterAll(async () => {
      await sb?.close();
      await rm(workDir, { recursive: true, force: true });
    });

    let n = 0;
    async function world(rules: string): Promise<AttackWorld> {
      n += 1;
      const a = await makeAttackWorld(sb, { prefix: `ab${n}`, rules, workDir });
      cleanups.push(() => a.w.close());
      return a;
    }

    /** Mallory's merge request, armed by the bot at its head on a master's command while its build runs. */
    async function armedOnMastersWord(a: AttackWorld) {
      const { w } = a;
      a.held.add('mine');
      const mine = await a.open(a.mallory, 'mine', 'calls: foo\n');
      await a.ciStatus(mine.head, 'pending');
      await w.processNote(mine.id, await a.comment(a.master, mine.id, '/hookbot merge'));
      // Since this pass: the bot's own merge, watched at this head; nothing armed on the server.
      expect(await a.mr(mine.id)).toMatchObject({ merge_when_build_succeeds: false });
      expect(w.store.watched()).toMatchObject([{ mrId: mine.id, headSha: mine.head }]);
      // She could not merge it herself: master is protected (masters merge).
      const refused = await a.mallory.client.mergeRequests.merge(w.project.id, mine.id, {}).then(
        (outcome) => outcome,
        (error: unknown) => error,
      );
      expect(refused instanceof Error || (refused as { outcome?: string }).outcome !== 'merged').toBe(true);
      expect((await a.mr(mine.id)).state).toBe('opened');
      return mine;
    }

    /**
     * Was a HOLE, closed (the bot arms no server merge by default; `on_server` is refused on a
     * comment): the disarm is a reaction, and the attacker picks the moment the server merges. The
     * server merges an armed merge request at a STATUS EVENT on its head (8.x
     * `MergeWhenBuildSucceedsService#trigger` runs when the head's pipeline turns to success; the
     * sandbox at every status posted), not when it is reopened. Mallory closes her armed merge
     * request, pushes an unreviewed head while it is closed (the server disarms nothing then) and
     * lets the CI build it green; then she reopens it and, at once, posts a status of her own on the
     * new head (pending, then success, under a name no rule reads: a developer may). The server
     * merges her unreviewed head into protected master as the bot in that instant; the bot's run for
     * the reopen comes a delivery and a debounce later (`pipeline.debounce_ms`, 250 ms) and finds it
     * merged. Her two calls take a few milliseconds. Nothing of `rules.status_authors` helps: her
     * status is only the trigger, the CI's own `ci/test` passed.
     * Where: src/rules/item/disarm.ts and process-item.ts cancel after the fact; nothing stops the
     * server's merge between the reopen (or a retarget) and the bot's run. Fix: never arm the
     * server's merge (the merge watch already merges on trusted statuses, pinned to the head it
     * judged, src/scheduler/sweeps/merge-watch.ts), or only where nobody but members who could merge
     * can close, push and reopen (nowhere: the author always can).
     */
    it("close, push, reopen, and a status of her own at once: the server must not merge her unreviewed head before the bot's run", async () => {
      const a = await world(ARM_ON_MASTERS_COMMAND);
      const { w } = a;
      const mine = await armedOnMastersWord(a);
      await a.mallory.client.mergeRequests.close(w.project.id, mine.id);
      a.held.clear();
      const unreviewed = await a.commit(a.mallory, 'mine', 'backdoor.txt', 'unreviewed\n');
      await w.ci.idle();
      await a.ciStatus(unreviewed, 'success');
      // The bot hears the close and the push, and its watch runs: closed, nothing armed on the server,
      // so it stops watching (a member comments again once it is reopened).
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');
      expect(w.store.watched()).toEqual([]);
      expect(await a.mr(mine.id)).toMatchObject({ state: 'closed', merge_when_build_succeeds: false });

      // Her three calls, back to back.
      await a.mallory.client.mergeRequests.reopen(w.project.id, mine.id);
      for (const state of ['pending', 'success'] as const)
        await a.mallory.client.statuses.create(w.project.id, unreviewed, {
          state,
          name: 'notes',
          ref: 'mine',
        });
      await pushWorkIdle(sb.ctx);
      // The bot's run for the reopen, then its watch.
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');

      expect(await a.on('master', unreviewed)).toBe(false);
      expect((await a.mr(mine.id)).state).not.toBe('merged');
    });

    /**
     * Was a HOLE, closed (no server merge armed by default; with on_server, the watch cancels before it
     * lets go): the watch: the watch stops watching a merge request the server still has armed.
     * The merge watch tries its own merge once the required statuses passed; when the fresh check
     * withdraws it (the rule no longer holds, or the merge request is work in progress), the watch
     * unwatches it and nothing cancels the server's arming (src/scheduler/sweeps/merge-watch.ts
     * `merge`: `call.status === 'withdrawn'` -> `store.unwatch`, and `skipped` likewise). Mallory
     * marks her armed merge request `WIP:` (the author may edit her title): the server will not
     * merge it when its build passes, and the watch's merge is withdrawn (work in progress), so it
     * stops watching, still armed. Now unwatched, she closes it, pushes an unreviewed head, reopens
     * it and takes `WIP:` off: the bot sees nothing to disarm (rules/item/disarm.ts needs a watch
     * entry), and the server merges her unreviewed head into protected master as the bot when its
     * build passes. Fix: whatever makes the bot stop watching a merge request it armed while the
     * server still has it armed must cancel the server's merge first (or keep watching it).
     */
    it('work in progress while armed: the watch gives up, and a close, push, reopen must still not land her unreviewed head', async () => {
      const a = await world(ARM_ON_MASTERS_COMMAND);
      const { w } = a;
      const mine = await armedOnMastersWord(a);
      await a.mallory.client.mergeRequests.update(w.project.id, mine.id, { title: 'WIP: Change mine' });
      await w.processItem(mine.id);
      // The reviewed head's build passes (the CI's own status): work in progress, the server waits.
      await a.ci.statuses.create(w.project.id, mine.head, { state: 'success', name: 'ci/test', ref: 'mine' });
      await pushWorkIdle(sb.ctx);
      expect(await a.mr(mine.id)).toMatchObject({ state: 'opened', merge_when_build_succeeds: false });
      const report = (await w.sweeps.run('merge_watch')) as { items: { outcome: string; detail: string }[] };
      // The watch's own merge is withdrawn and it stops watching; nothing was armed on the server.
      expect(report.items).toMatchObject([{ outcome: 'dropped' }]);
      expect(w.store.watched()).toEqual([]);
      expect(await a.mr(mine.id)).toMatchObject({ merge_when_build_succeeds: false });

      await a.mallory.client.mergeRequests.close(w.project.id, mine.id);
      await w.processItem(mine.id);
      const unreviewed = await a.commit(a.mallory, 'mine', 'backdoor.txt', 'unreviewed\n');
      await w.processItem(mine.id);
      await a.mallory.client.mergeRequests.reopen(w.project.id, mine.id);
      await w.processItem(mine.id);
      await a.mallory.client.mergeRequests.update(w.project.id, mine.id, { title: 'Change mine' });
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');
      // The unreviewed head's build passes (the CI's own status).
      await a.ciStatus(unreviewed, 'pending');
      await a.ci.statuses.create(w.project.id, unreviewed, {
        state: 'success',
        name: 'ci/test',
        ref: 'mine',
      });
      await pushWorkIdle(sb.ctx);
      await w.sweeps.run('merge_watch');

      expect(await a.on('master', unreviewed)).toBe(false);
      expect((await a.mr(mine.id)).state).not.toBe('merged');
    });

    /**
     * Was a HOLE, closed (no server merge armed by default; with on_server, a cancel keeps the watch
     * unless the server's merge can no longer happen): a race of one API call: the cancel unwatches before it knows it cancelled.
     * rules/executor/merge-calls.ts `cancelMergeWhenBuildSucceeds` calls `store.unwatch` first, then
     * reads the merge request and, finding it closed, answers `skipped` (the server keeps the arming
     * of a closed merge request, and answers 405 to a cancel). So a close that lands between the
     * bot's read of the reopened merge request (rules/item/process-item.ts, or the merge watch's
     * `check`) and the cancel's own read leaves it armed and unwatched, although
     * rules/item/disarm.ts says "a closed one ... stays watched". Mallory reopens and closes at once;
     * an attempt that comes too early costs her nothing (the bot reads it closed and keeps watching),
     * so she tries again, a little later each time. Once one lands in the gap, she reopens: nothing
     * watches it, and the server merges her unreviewed head when its build passes. (Here her close is
     * placed in the gap by the store's write of the cancel, which comes right between the two reads.)
     * Fix: the cancel keeps the watch unless it cancelled, or found the merge request merged or no
     * longer armed.
     */
    it('a close in the instant between the bot reading the reopened merge request and cancelling: it must stay watched, and her head must not land', async () => {
      const a = await world(ARM_ON_MASTERS_COMMAND);
      const { w } = a;
      const mine = await armedOnMastersWord(a);
      await a.mallory.client.mergeRequests.close(w.project.id, mine.id);
      const unreviewed = await a.commit(a.mallory, 'mine', 'backdoor.txt', 'unreviewed\n');
      await w.processItem(mine.id);
      await a.mallory.client.mergeRequests.reopen(w.project.id, mine.id);
      // Her close at once: there is no gap left to land in, for the server's merge was never armed
      // (the bot's own merge: nothing to cancel, and a closed one is no longer watched).
      await a.mallory.client.mergeRequests.close(w.project.id, mine.id);
      await w.processItem(mine.id);
      expect(await a.mr(mine.id)).toMatchObject({ state: 'closed', merge_when_build_succeeds: false });
      expect(w.store.watched().filter((entry) => entry.mrId === mine.id && entry.onServer)).toEqual([]);

      await a.mallory.client.mergeRequests.reopen(w.project.id, mine.id);
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');
      await a.ci.statuses.create(w.project.id, unreviewed, {
        state: 'success',
        name: 'ci/test',
        ref: 'mine',
      });
      await pushWorkIdle(sb.ctx);
      await w.sweeps.run('merge_watch');
      expect(await a.on('master', unreviewed)).toBe(false);
    });

    /**
     * Was a HOLE, closed (no server merge armed by default: the bot merges on the statuses it trusts;
     * documented only in docs/repository-rules.md "Statuses": "a merge request armed for
     * merge-when-build-succeeds is merged by the server when its builds succeed, as the server judges
     * them"): `rules.status_authors` is the bot's trust, not the server's. The action refuses forks
     * because "the fork's owner posts her project's statuses as she likes"; a developer posts her own
     * project's statuses as she likes too (8.x: developers may post a commit status). The master
     * reviewed her head and the bot armed the merge; the CI's build of it FAILS; she posts
     * `ci/test: success` herself, and the server (the pipeline is the latest status of each name,
     * whoever posted it) merges a head whose build failed into protected master, as the bot. The
     * bot's watch, reading only the CI's statuses, saw `ci/test failed` and kept waiting, still armed
     * (src/scheduler/sweeps/merge-watch.ts cancels nothing on a failure). docs/security.md's row says
     * "as merge" (statuses "from trusted authors"). Fix: with `rules.status_authors` set, never arm
     * the server's merge (the watch merges on trusted statuses), and cancel it when a required status
     * fails.
     */
    it('status_authors: a build the CI failed, and her own ci/test success: the server must not merge it as the bot', async () => {
      const a = await world(ARM_ON_MASTERS_COMMAND);
      const { w } = a;
      const mine = await armedOnMastersWord(a);
      await a.ci.statuses.create(w.project.id, mine.head, { state: 'failed', name: 'ci/test', ref: 'mine' });
      await pushWorkIdle(sb.ctx);
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');
      await a.mallory.client.statuses.create(w.project.id, mine.head, {
        state: 'success',
        name: 'ci/test',
        ref: 'mine',
      });
      await pushWorkIdle(sb.ctx);
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');
      expect(await a.on('master', mine.head)).toBe(false);
      expect((await a.mr(mine.id)).state).not.toBe('merged');
    });

    /**
     * Resisted: a head that goes away and comes back. While it is closed, Mallory pushes an
     * unreviewed head, then puts the branch back at the reviewed one (deleted and created again at
     * it); reopened, the merge request is at the head the bot armed for, so nothing is cancelled, and
     * what the server merges is the reviewed head, nothing of the other.
     */
    it('a head that returns to the armed one after other content: only the reviewed head lands', async () => {
      const a = await world(ARM_ON_MASTERS_COMMAND);
      const { w } = a;
      const mine = await armedOnMastersWord(a);
      await a.mallory.client.mergeRequests.close(w.project.id, mine.id);
      const unreviewed = await a.commit(a.mallory, 'mine', 'backdoor.txt', 'unreviewed\n');
      await w.processItem(mine.id);
      await a.deleteBranch(a.mallory, w.project.id, 'mine');
      await a.createBranch(a.mallory, w.project.id, 'mine', mine.head);
      await a.mallory.client.mergeRequests.reopen(w.project.id, mine.id);
      await w.processItem(mine.id);
      await w.sweeps.run('merge_watch');
      await a.ci.statuses.create(w.project.id, mine.head, { state: 'success', name: 'ci/test', ref: 'mine' });
      await pushWorkIdle(sb.ctx);
      await w.sweeps.run('merge_watch');
      // The bot's own merge, at the reviewed head it was set for (the version current at the
      // master's comment), nothing of the other.
      expect(await a.on('master', unreviewed)).toBe(false);
      expect(await a.on('master', mine.head)).toBe(true);
    });
  },
);
