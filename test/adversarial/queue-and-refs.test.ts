/**
 * Adversarial: a developer against the merge queue and the refs it reads, over real HTTP and git,
 * against a running bot (`startRuntime`, what `hookbot serve` runs) to which the sandbox delivers its
 * project hooks. The developer (mallory) is a developer of the project's group, not the bot: she pushes
 * over git with her own password and acts through the API with her own token. The bot is a master
 * (it may push to protected master); the queue must never lend her that power.
 *
 * - She opens a merge request from `master` (protected, the default branch) into her own branch and
 *   adds the queue label: nothing is pushed to master; the merge request is refused with exactly one
 *   comment, and stays out at that head (a later event of it adds nothing).
 * - She pushes a tag named `master` on a commit of her own: the queue brings branches up to the
 *   master branch and merges into it, never the tag's commit.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import type { MergeRequest } from '../../src/api/merge-requests.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { gitUser, type GitUser } from '../helpers/git-user.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'adv-queue-secret';
const BOT = { username: 'advq-bot', token: 'advq-bot-token-0123456789', password: 'advq-bot-password' };
const CI = { username: 'advq-ci', token: 'advq-ci-token-0123456789', password: 'advq-ci-password' };
const MALLORY = { username: 'mallory', token: 'mallory-token-0123456789', password: 'mallory-password' };
/** Generous: a busy 2-core machine runs git, the sandbox, the bot and the CI at once. */
const LONG = 120_000;
const TEST_TIMEOUT = 300_000;

const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, max_updates: 3 }
`;

describe('adversarial: a developer against the merge queue and refs (running bot, real HTTP and git)', () => {
  let sb: Sandbox;
  let ci: SimulatedCi;
  let bot: Runtime;
  let admin: Client;
  let mallory: Client;
  let dir = '';
  let groupId = 0;

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'advq-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-adv-queue-'));
    const botUser = addUser(sb.ctx.db, {
      username: BOT.username,
      private_token: BOT.token,
      password: BOT.password,
    });
    const ciUser = addUser(sb.ctx.db, {
      username: CI.username,
      private_token: CI.token,
      password: CI.password,
    });
    const malloryUser = addUser(sb.ctx.db, {
      username: MALLORY.username,
      private_token: MALLORY.token,
      password: MALLORY.password,
    });
    groupId = addGroup(sb.ctx.db, {
      name: 'advq',
      owner_id: 1,
      members: [
        { user_id: botUser.id, access_level: 40 },
        { user_id: ciUser.id, access_level: 30 },
        { user_id: malloryUser.id, access_level: 30 },
      ],
    }).id;
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    mallory = createClient({ baseUrl: sb.url, token: MALLORY.token, retry: { limit: 0 } });
    ci = startSimulatedCi(sb, { token: CI.token, git: { username: CI.username, password: CI.password } });

    const home = path.join(dir, 'bot');
    mkdirSync(path.join(home, 'rules'), { recursive: true });
    writeFileSync(path.join(home, 'rules', 'default.yml'), RULES);
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(home, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(home, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
        HOOKBOT_GIT_PASSWORD: BOT.password,
      },
      cwd: home,
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    // Nothing but hooks moves the queue (the timer at 1 h), and no other sweep acts.
    for (const sweep of ['rules', 'merge_watch', 'reconcile', 'hook_check'] as const)
      config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
    config.scheduler.sweeps.merge_queue = { enabled: true, every: '1h' };
    bot = await startRuntime(
      config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET },
    );
  });

  afterAll(async () => {
    await bot?.close();
    await ci?.stop();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A project of the group with a protected master and the bot's hook (build events on). */
  async function project(name: string) {
    const rec = await addProject(sb.ctx, {
      name,
      namespace_id: groupId,
      creator_id: 1,
      initialFiles: INITIAL_FILES,
    });
    await admin.branches.protect(rec.id, 'master');
    await admin.hooks.create(rec.id, {
      url: bot.bot.hookUrl,
      token: SECRET,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });
    const url = `${sb.url}/advq/${rec.path}.git`;
    return { id: rec.id, path: `advq/${rec.path}`, url };
  }

  const until = <T>(probe: () => T | undefined | Promise<T | undefined>, what: string) =>
    waitFor(probe, LONG, what);

  async function botNotes(projectId: number, mr: MergeRequest): Promise<string[]> {
    const bodies: string[] = [];
    for await (const note of admin.notes.listMergeRequestNotes(projectId, mr.id))
      if (!note.system && note.author.username === BOT.username) bodies.push(note.body);
    return bodies;
  }

  const branchHead = async (projectId: number, branch: string) =>
    (await admin.branches.get(projectId, branch)).commit.id;

  /** Whether `ancestor` is in `of`'s history, as git sees it in mallory's clone after a fetch. */
  async function inHistory(clone: GitUser, ancestor: string, of: string): Promise<boolean> {
    await clone.git('fetch', '--quiet', 'origin');
    return clone.git('merge-base', '--is-ancestor', ancestor, of).then(
      () => true,
      () => false,
    );
  }

  it(
    "an MR from protected master into the developer's own branch, with the queue label: nothing is pushed to master; one comment; it stays out",
    async () => {
      const p = await project('take-master');
      const masterBefore = await branchHead(p.id, 'master');
      // Her own branch with her file, pushed over git with her password.
      const clone = await gitUser(dir, MALLORY, p.url);
      await clone.git('checkout', '--quiet', '-b', 'evil');
      const planted = await clone.commit('evil.txt', 'planted by mallory\n', 'evil');
      await clone.git('push', '--quiet', 'origin', 'evil');
      // Her push to master itself is refused: it is protected.
      await expect(clone.git('push', '--quiet', 'origin', 'evil:master')).rejects.toThrow(/protected/);
      const mr = await mallory.mergeRequests.create(p.id, {
        source_branch: 'master',
        target_branch: 'evil',
        title: 'Merge evil into master, please',
        labels: ['automerge'],
      });
      const notes = await until(async () => {
        const found = await botNotes(p.id, mr);
        return found.length > 0 ? found : undefined;
      }, 'the refusal');
      expect(notes).toHaveLength(1);
      expect(notes[0]).toMatch(
        /^Removed from the default merge queue for `evil`: its source branch `master` is the project's default branch: the queue never pushes to it/,
      );
      expect(await branchHead(p.id, 'master')).toBe(masterBefore);
      expect(await inHistory(clone, planted, 'origin/master')).toBe(false);
      const explained = await (
        await fetch(`${bot.bot.url}/explain/${encodeURIComponent(p.path)}/mr/${mr.iid}`)
      ).text();
      expect(explained).toMatch(
        /^merge queue: left the default queue for evil at [0-9a-f]{7}: its source branch `master` is the project's default branch/,
      );

      // Another event of the same merge request at the same head (she edits its title): evaluated
      // again, it stays out, and no second comment comes.
      const itemKey = `merge_request:${p.id}:${mr.id}`;
      const decidedAt = () => bot.store.latestDecisions().find((d) => d.itemKey === itemKey)?.at ?? 0;
      const before = decidedAt();
      await mallory.mergeRequests.update(p.id, mr.id, { title: 'Merge evil into master, really' });
      await until(() => (decidedAt() > before ? true : undefined), 'the new evaluation');
      await until(
        () => (bot.store.queued().some((e) => e.mrId === mr.id && !e.left) ? undefined : true),
        'it to stay out of the queue',
      );
      expect(await botNotes(p.id, mr)).toHaveLength(1);
      expect(await branchHead(p.id, 'master')).toBe(masterBefore);
    },
    TEST_TIMEOUT,
  );

  it(
    'a tag named master on her own commit: the queue merges the master branch into her branch and merges into the master branch, never the tag',
    async () => {
      const p = await project('tag-master');
      const clone = await gitUser(dir, MALLORY, p.url);
      // Her tag `master`, on a commit no branch holds (it breaks the CI's check, and plants a file).
      await clone.git('checkout', '--quiet', '-b', 'for-the-tag');
      await clone.commit('.hookbot.yml', 'rules: []\n', 'planted rules');
      const tagged = await clone.commit('lib.txt', 'def nothing\n', 'the tag');
      await clone.git('push', '--quiet', 'origin', `${tagged}:refs/tags/master`);
      await clone.git('checkout', '--quiet', 'master');
      // Her honest work, behind master once master moves.
      await clone.git('checkout', '--quiet', '-b', 'feature');
      await clone.commit('feature.txt', 'calls: foo\n', 'feature');
      await clone.git('push', '--quiet', 'origin', 'feature');
      const mr = await mallory.mergeRequests.create(p.id, {
        source_branch: 'feature',
        target_branch: 'master',
        title: 'Feature',
      });
      const response = await fetch(`${sb.apiUrl}/projects/${p.id}/repository/files`, {
        method: 'POST',
        headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
        body: JSON.stringify({
          file_path: 'moved.txt',
          branch_name: 'master',
          content: 'm\n',
          commit_message: 'moved',
        }),
      });
      expect(response.ok).toBe(true);
      const masterBranch = await branchHead(p.id, 'master');
      await ci.idle();
      await mallory.mergeRequests.update(p.id, mr.id, { labels: ['automerge'] });
      await until(
        async () => ((await admin.mergeRequests.get(p.id, mr.id)).state === 'merged' ? true : undefined),
        'the merge',
      );
      // Master's new head merged the tested head, which had merged the master *branch*.
      const merged = await admin.commits.get(p.id, await branchHead(p.id, 'master'));
      const [before, tested] = merged.parent_ids as [string, string];
      expect(before).toBe(masterBranch);
      const testedCommit = await admin.commits.get(p.id, tested);
      expect(testedCommit.parent_ids[1]).toBe(masterBranch);
      expect(await inHistory(clone, tagged, 'origin/master')).toBe(false);
      expect(await ci.passes(p.id, merged.id)).toBe(true);
      // Her tag is where she put it.
      expect(await clone.git('ls-remote', 'origin', 'refs/tags/master')).toContain(tagged);
    },
    TEST_TIMEOUT,
  );
});
