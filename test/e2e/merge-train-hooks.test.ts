/**
 * A merge train (`depth: 3`) driven the way it runs in production, as test/e2e/merge-queue-hooks.test.ts
 * drives the serial queue: the sandbox delivers its project hooks over HTTP to a running bot
 * (`startRuntime`), the sweep's timer is at 1 h, and the sandbox's simulated CI builds every pushed
 * commit, the train's cars included. What moves the train: a label (the Merge Request Hook queues
 * the merge requests and wakes the sweep; in the first test the queue is paused while three are
 * labelled, and the resume's wake builds three cars at once); the CI's statuses on the
 * cars (Build Hooks on a `hookbot/train/` branch wake the sweep: green at the front lands, a failure
 * leaves with a comment and the cars behind are built again). No test code calls a sweep.
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
import type { PushEvent } from '../../src/sandbox/context.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'merge-train-hooks-secret';
const BOT = { username: 'mth-bot', token: 'mth-bot-token-0123456789', password: 'mth-bot-password' };
const CI = { username: 'mth-ci', token: 'mth-ci-token-0123456789', password: 'mth-ci-password' };
/** A maintainer of the project's group, who takes a label off. */
const MAINTAINER = { username: 'mth-maintainer', token: 'mth-maintainer-token-0123456789' };
/** Generous: a busy 2-core machine runs git, the sandbox, the bot and the CI at once. */
const LONG = 120_000;
const TEST_TIMEOUT = 300_000;

const rulesWith = (statusTimeout: string) => `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: ${statusTimeout}, depth: 3 }
`;

describe('a merge train driven by hook deliveries to a running bot (over HTTP, the bot as it runs)', () => {
  let sb: Sandbox;
  let ci: SimulatedCi;
  let admin: Client;
  let dir = '';
  let groupId = 0;
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'mth-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-mt-hooks-'));
    const bot = addUser(sb.ctx.db, {
      username: BOT.username,
      private_token: BOT.token,
      password: BOT.password,
    });
    const ciUser = addUser(sb.ctx.db, {
      username: CI.username,
      private_token: CI.token,
      password: CI.password,
    });
    const maintainerUser = addUser(sb.ctx.db, {
      username: MAINTAINER.username,
      private_token: MAINTAINER.token,
      password: 'mth-maintainer-password',
    });
    // The bot is a master of the group (it merges into protected master and pushes source
    // branches); the CI a developer (it posts statuses).
    groupId = addGroup(sb.ctx.db, {
      name: 'mth',
      owner_id: 1,
      members: [
        { user_id: bot.id, access_level: 40 },
        { user_id: ciUser.id, access_level: 30 },
        { user_id: maintainerUser.id, access_level: 40 },
      ],
    }).id;
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    // Builds on branches named `stuck-*` post `pending` and never report.
    ci = startSimulatedCi(sb, {
      token: CI.token,
      git: { username: CI.username, password: CI.password },
      modeOf: (branch) => (branch.startsWith('stuck-') ? 'pending-forever' : 'normal'),
    });
  });

  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await ci?.stop();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A running bot as `hookbot serve` composes it, with its own state file and rules, the merge_queue
   * sweep every `queueEvery` and the other sweeps off (nothing but hooks and that timer acts).
   */
  async function startQueueBot(
    name: string,
    statusTimeout: string,
    queueEvery: string,
    git: { password?: boolean; defaultCacheDir?: boolean } = {},
  ): Promise<Runtime> {
    const home = path.join(dir, name);
    mkdirSync(path.join(home, 'rules'), { recursive: true });
    writeFileSync(path.join(home, 'rules', 'default.yml'), rulesWith(statusTimeout));
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(home, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(home, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
        ...(git.password === false ? {} : { HOOKBOT_GIT_PASSWORD: BOT.password }),
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    // The default (`data/git-cache`, relative) is left alone when asked: it is what users run.
    if (!git.defaultCacheDir) config.git.cache_dir = path.join(home, 'git');
    for (const sweep of ['rules', 'merge_watch', 'reconcile', 'hook_check'] as const)
      config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
    config.scheduler.sweeps.merge_queue = { enabled: true, every: queueEvery };
    const runtime = await startRuntime(
      config,
      {
        log: createLogger({ level: (process.env.MTH_LOG as 'info' | undefined) ?? 'silent', format: 'json' }),
        metrics: createMetrics(),
      },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET },
    );
    runtimes.push(runtime);
    return runtime;
  }

  /** A project with a protected master and the bot's project hook (secret token, build events on). */
  async function project(name: string, runtime: Runtime) {
    const rec = await addProject(sb.ctx, {
      name,
      namespace_id: groupId,
      creator_id: 1,
      initialFiles: INITIAL_FILES,
    });
    await admin.branches.protect(rec.id, 'master');
    expect((await admin.branches.get(rec.id, 'master')).protected).toBe(true);
    await admin.hooks.create(rec.id, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });
    return { id: rec.id, path: `mth/${rec.path}` };
  }

  async function commitFile(projectId: number, branch: string, file: string, content: string) {
    const exists = Object.hasOwn(INITIAL_FILES, file);
    const response = await fetch(`${sb.apiUrl}/projects/${projectId}/repository/files`, {
      method: exists ? 'PUT' : 'POST',
      headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
      body: JSON.stringify({
        file_path: file,
        branch_name: branch,
        content,
        commit_message: `${branch}: ${file}`,
      }),
    });
    if (!response.ok) throw new Error(`could not commit ${file} on ${branch}: ${response.status}`);
  }

  /** A merge request from a new branch with `files`, not labelled yet, green (or pending) on its head. */
  async function openMergeRequest(projectId: number, branch: string, files: Record<string, string>) {
    await admin.branches.create(projectId, { branch_name: branch, ref: 'master' });
    for (const [file, content] of Object.entries(files)) await commitFile(projectId, branch, file, content);
    return admin.mergeRequests.create(projectId, {
      source_branch: branch,
      target_branch: 'master',
      title: `Change ${branch}`,
    });
  }

  const label = (projectId: number, mr: MergeRequest, labels: string[]) =>
    admin.mergeRequests.update(projectId, mr.id, { labels });

  async function stateOf(projectId: number, mr: MergeRequest): Promise<string> {
    return (await admin.mergeRequests.get(projectId, mr.id)).state;
  }

  async function botNotes(projectId: number, mr: MergeRequest): Promise<string[]> {
    const bodies: string[] = [];
    for await (const note of admin.notes.listMergeRequestNotes(projectId, mr.id))
      if (!note.system && note.author.username === BOT.username) bodies.push(note.body);
    return bodies;
  }

  /** Master's first-parent line through the API, oldest first. */
  async function masterLine(projectId: number) {
    const line = [];
    for (let commit = await admin.commits.get(projectId, 'master'); ;) {
      line.unshift(commit);
      const parent = commit.parent_ids[0];
      if (!parent) break;
      commit = await admin.commits.get(projectId, parent);
    }
    return line;
  }

  /**
   * waitFor, and when it times out, the sandbox's deliveries that got no 2xx answer: a delivery the
   * server dropped (refused, reset, timed out: real servers drop them too) is the first suspect.
   */
  async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> {
    try {
      return await waitFor(probe, LONG, what);
    } catch (error) {
      const failed = sb.ctx.hooks
        .recent()
        .filter((d) => d.status === undefined || d.status >= 300)
        .map((d) => `${d.at} ${d.event} ${d.url}: ${d.status ?? d.error}`);
      throw new Error(`${(error as Error).message}; deliveries not accepted: ${JSON.stringify(failed)}`);
    }
  }

  /** The ops port's queue controls, as `hookbot queue` calls them (a loopback bot takes them). */
  const control = (runtime: Runtime, p: { path: string }, action: 'pause' | 'resume', body: object) =>
    fetch(`${runtime.bot.url}/queues/${action}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project: p.path, target_branch: 'master', ...body }),
    });

  const active = (runtime: Runtime, projectId: number) =>
    runtime.store.queued().filter((entry) => entry.projectId === projectId && !entry.left);

  it(
    'three merge requests labelled in a row are tested at once as a train; the broken one leaves with one comment, the others land as tested; master is never broken; no train branch is left',
    async () => {
      const bot = await startQueueBot('train', '10m', '1h');
      const p = await project('train', bot);
      const a = await openMergeRequest(p.id, 'a', { 'a.txt': 'calls: foo\n' });
      const bad = await openMergeRequest(p.id, 'bad', { 'bad.txt': 'calls: nowhere\n' });
      const c = await openMergeRequest(p.id, 'c', { 'c.txt': 'calls: foo\n' });
      const all = [a, bad, c];
      await ci.idle();
      const before = (await masterLine(p.id)).map((commit) => commit.id);
      const runs = ci.runs;
      // What the server took, in its order: the cars are seen in the pushes (a car lives a build of
      // 20 ms, too short to be caught in the store between two polls).
      const pushes: PushEvent[] = [];
      sb.ctx.on.push.unshift((event) => {
        if (event.project.id === p.id) pushes.push(event);
      });
      // The queue is paused while the three are labelled (as an operator would with `hookbot queue
      // pause`), so the first run finds all three queued: otherwise a's car may be built, and even
      // land, before c's label is read, and "three at once" would be a race with the CI. Labelled
      // one right after the other, each once the one before is queued: the queue's order is the
      // order they were queued in, which the assertions below (a ahead of bad ahead of c) rely on.
      expect((await control(bot, p, 'pause', { reason: 'three labels in a row', by: 'test' })).status).toBe(
        200,
      );
      for (const mr of all) {
        await label(p.id, mr, ['automerge']);
        await until(
          () => (active(bot, p.id).some((entry) => entry.mrId === mr.id) ? true : undefined),
          `!${mr.iid} queued`,
        );
      }
      expect(pushes.filter((push) => push.ref.startsWith('refs/heads/hookbot/'))).toEqual([]);
      expect((await control(bot, p, 'resume', { by: 'test' })).status).toBe(200);
      await until(async () => {
        const states = await Promise.all(all.map((mr) => stateOf(p.id, mr)));
        return states.filter((s) => s === 'merged').length === 2 && active(bot, p.id).length === 0
          ? true
          : undefined;
      }, 'two landed and the train empty');
      await ci.idle();
      // Cars were built at once: the first three car commits came in one git push (one moment at
      // the server), each on the one ahead, the first on master as it was.
      const cars = pushes.filter(
        (push) => push.ref.startsWith('refs/heads/hookbot/train/') && !/^0+$/.test(push.after),
      );
      const built = cars.slice(0, 3);
      expect(built).toHaveLength(3);
      expect(new Set(built.map((push) => push.receivedAt)).size).toBe(1);
      expect(new Set(built.map((push) => push.ref)).size).toBe(3);
      const onTopOf = new Map<string, string>();
      for (const push of built)
        onTopOf.set((await admin.commits.get(p.id, push.after)).parent_ids[0]!, push.after);
      const chain = [before.at(-1)!];
      while (onTopOf.has(chain.at(-1)!)) chain.push(onTopOf.get(chain.at(-1)!)!);
      expect(chain.slice(1)).toHaveLength(3);
      const carOne = chain[1]!;
      expect(await stateOf(p.id, a)).toBe('merged');
      expect(await stateOf(p.id, c)).toBe('merged');
      expect(await stateOf(p.id, bad)).toBe('opened');
      // The comment is the executor's call, made as the car leaves: it may come after the train is
      // seen empty.
      const notes = await until(async () => {
        const found = await botNotes(p.id, bad);
        return found.length > 0 ? found : undefined;
      }, 'the removal comment');
      expect(notes).toHaveLength(1);
      expect(notes[0]).toMatch(/^Removed from the default merge queue for `master`: ci\/test failed on/);
      // Master: the commits before, then exactly two car commits (a's as first built, c's rebuilt on it).
      const line = await masterLine(p.id);
      const added = line.slice(before.length);
      expect(line.slice(0, before.length).map((commit) => commit.id)).toEqual(before);
      expect(added).toHaveLength(2);
      expect(added[0]!.id).toBe(carOne);
      for (const commit of line) expect(await ci.passes(p.id, commit.id)).toBe(true);
      // Builds: three cars, then c's car again on a's; never a's again (it landed as first built,
      // asserted above).
      expect(cars).toHaveLength(4);
      expect(ci.runs - runs).toBe(4);
      // The last landing's run deletes its branch right after the merge requests leave the queue.
      await until(async () => {
        const branches = [];
        for await (const branch of admin.branches.list(p.id)) branches.push(branch.name);
        return branches.some((name) => name.startsWith('hookbot/train/')) ? undefined : true;
      }, 'no train branch left');
      const status = (await (await fetch(`${bot.bot.url}/status.json`)).json()) as Record<string, unknown>;
      expect(JSON.stringify(status)).toContain('mth/train');
    },
    TEST_TIMEOUT,
  );
});
