/**
 * An operator steering the merge queue, and members' comment commands (docs/merge-queue.md#steering-the-queue),
 * end to end: the sandbox delivers its hooks over HTTP to a running bot (`startRuntime`, as `hookbot
 * serve` runs it, with `server.status_auth`), a simulated CI builds every head, and the operator uses
 * `hookbot queue` (the CLI, through the bot's ops port) or the ops port itself.
 *
 * - Paused: two merge requests labelled enter the queue; a run of the merge queue sweep leaves them
 *   as they were (nothing pushed, nothing merged); moved to the front, the second lands first once
 *   the queue is resumed.
 * - Removed by the operator: out with one comment naming the operator and the reason, remembered at
 *   its head (its label still there does not put it back), and explain says so.
 * - `/hookbot dequeue`: a reporter's comment takes nothing out; a developer's does.
 * - The ops port: 401 without credentials, JSON only, clear JSON errors.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import type { MergeRequest } from '../../src/api/merge-requests.ts';
import { runQueueCommand } from '../../src/cli/queue.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'mqc-secret';
const BOT = { username: 'mqc-bot', token: 'mqc-bot-token-0123456789', password: 'mqc-bot-password' };
const CI = { username: 'mqc-ci', token: 'mqc-ci-token-0123456789', password: 'mqc-ci-password' };
const DEV = { username: 'mqc-dev', token: 'mqc-dev-token-0123456789' };
const REPORTER = { username: 'mqc-reporter', token: 'mqc-reporter-token-0123456789' };
const OPS = { username: 'ops', password: 'ops-password-123' };
const LONG = 120_000;
const TEST_TIMEOUT = 300_000;

const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m }
  - name: dequeue on command
    on: [note.created]
    for: merge_requests
    if:
      - note: { matches: '^/hookbot dequeue\\b' }
    do:
      - dequeue
`;

describe('steering the merge queue: an operator through hookbot queue and the ops port, members through comments', () => {
  let sb: Sandbox;
  let ci: SimulatedCi;
  let admin: Client;
  let dir = '';
  let groupId = 0;
  let bot: Runtime;
  let botUrl = '';

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'mqc-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-mq-controls-'));
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
    const dev = addUser(sb.ctx.db, {
      username: DEV.username,
      private_token: DEV.token,
      password: 'mqc-dev-pw',
    });
    const reporter = addUser(sb.ctx.db, {
      username: REPORTER.username,
      private_token: REPORTER.token,
      password: 'mqc-reporter-pw',
    });
    groupId = addGroup(sb.ctx.db, {
      name: 'mqc',
      owner_id: 1,
      members: [
        { user_id: botUser.id, access_level: 40 },
        { user_id: ciUser.id, access_level: 30 },
        { user_id: dev.id, access_level: 30 },
        { user_id: reporter.id, access_level: 20 },
      ],
    }).id;
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
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
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    config.git.cache_dir = path.join(home, 'git');
    config.server.status_auth = { ...config.server.status_auth, ...OPS };
    for (const sweep of ['rules', 'merge_watch', 'reconcile', 'hook_check'] as const)
      config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
    // Hooks move the queue; the timer is a backstop only.
    config.scheduler.sweeps.merge_queue = { enabled: true, every: '1h' };
    bot = await startRuntime(
      config,
      {
        log: createLogger({ level: (process.env.MQC_LOG as 'info' | undefined) ?? 'silent', format: 'json' }),
        metrics: createMetrics(),
      },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET },
    );
    const url = new URL(bot.bot.url);
    url.username = OPS.username;
    url.password = OPS.password;
    botUrl = url.toString().replace(/\/+$/, '');
  });

  afterAll(async () => {
    await bot?.close();
    await ci?.stop();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

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
    return { id: rec.id, path: `mqc/${rec.path}` };
  }

  async function openMergeRequest(projectId: number, branch: string, file: string) {
    await admin.branches.create(projectId, { branch_name: branch, ref: 'master' });
    const response = await fetch(`${sb.apiUrl}/projects/${projectId}/repository/files`, {
      method: 'POST',
      headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
      body: JSON.stringify({
        file_path: file,
        branch_name: branch,
        content: `${branch}\n`,
        commit_message: branch,
      }),
    });
    if (!response.ok) throw new Error(`could not commit on ${branch}: ${response.status}`);
    return admin.mergeRequests.create(projectId, {
      source_branch: branch,
      target_branch: 'master',
      title: `Change ${branch}`,
    });
  }

  const until = <T>(probe: () => T | undefined | Promise<T | undefined>, what: string) =>
    waitFor(probe, LONG, what);
  const stateOf = async (projectId: number, mr: MergeRequest) =>
    (await admin.mergeRequests.get(projectId, mr.id)).state;
  const entryOf = (mr: MergeRequest) => bot.store.queued().find((e) => e.mrId === mr.id);
  const active = (projectId: number) =>
    bot.store.queued().filter((e) => e.projectId === projectId && !e.left);

  async function botNotes(projectId: number, mr: MergeRequest): Promise<string[]> {
    const bodies: string[] = [];
    for await (const note of admin.notes.listMergeRequestNotes(projectId, mr.id))
      if (!note.system && note.author.username === BOT.username) bodies.push(note.body);
    return bodies;
  }

  const explain = async (projectPath: string, mr: MergeRequest) =>
    (
      await fetch(`${bot.bot.url}/explain/${encodeURIComponent(projectPath)}/mr/${mr.iid}`, {
        headers: {
          authorization: `Basic ${Buffer.from(`${OPS.username}:${OPS.password}`).toString('base64')}`,
        },
      })
    ).text();

  /** `hookbot queue ...` against the running bot; its exit code and what it printed. */
  async function cli(action: string, args: string[], options: Record<string, string> = {}) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runQueueCommand(
      action,
      args,
      { bot: botUrl, by: 'alice', ...options },
      { out: (t) => out.push(t), err: (t) => err.push(t) },
    );
    return { code, out: out.join(''), err: err.join('') };
  }

  const metricsText = async () =>
    (
      await fetch(`${bot.bot.url}/metrics`, {
        headers: {
          authorization: `Basic ${Buffer.from(`${OPS.username}:${OPS.password}`).toString('base64')}`,
        },
      })
    ).text();

  const post = (route: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${bot.bot.url}${route}`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${OPS.username}:${OPS.password}`).toString('base64')}`,
        'content-type': 'application/json',
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it(
    'paused, nothing lands and nothing is pushed; the one moved to the front lands first once resumed',
    async () => {
      const p = await project('freeze');
      const paused = await cli('pause', [p.path, 'master'], { reason: 'release freeze' });
      expect(paused).toMatchObject({ code: 0, err: '' });
      expect(paused.out).toMatch(
        /the default queue for master in mqc\/freeze is paused by alice since .* UTC: release freeze/,
      );

      const first = await openMergeRequest(p.id, 'first', 'first.txt');
      const second = await openMergeRequest(p.id, 'second', 'second.txt');
      await ci.idle();
      await admin.mergeRequests.update(p.id, first.id, { labels: ['automerge'] });
      await until(() => (active(p.id).length === 1 ? true : undefined), 'the first queued');
      await admin.mergeRequests.update(p.id, second.id, { labels: ['automerge'] });
      await until(() => (active(p.id).length === 2 ? true : undefined), 'both queued');
      const master = (await admin.branches.get(p.id, 'master')).commit.id;

      // A run of the queue while paused: the head waits, saying why; nothing was pushed or merged.
      const report = (await bot.sweeps.run('merge_queue')) as {
        items: { itemKey: string; outcome: string; detail: string }[];
      };
      const head = report.items.find((item) => item.itemKey === entryOf(first)!.itemKey);
      expect(head).toMatchObject({ outcome: 'waiting' });
      expect(head!.detail).toMatch(/^the queue is paused by alice since .* UTC: release freeze$/);
      expect(active(p.id).every((e) => e.pinnedSha === undefined && e.car === undefined)).toBe(true);
      expect((await admin.branches.get(p.id, 'master')).commit.id).toBe(master);
      expect(await stateOf(p.id, first)).toBe('opened');
      expect(await stateOf(p.id, second)).toBe('opened');
      expect(await explain(p.path, first)).toMatch(
        /merge queue: the default queue for master is paused by alice since .* UTC: release freeze: nothing lands until it is resumed; position 1 of 2/,
      );

      // The list shows the pause; the second goes to the front.
      const listed = await cli('list', []);
      expect(listed.out).toContain(`${p.path} master (default): 2 merge requests; paused by alice since`);
      const fronted = await cli('front', [p.path, `!${second.iid}`]);
      expect(fronted).toMatchObject({ code: 0 });
      expect(fronted.out).toContain(
        `${p.path}!${second.iid} moved to the front of the default queue for master`,
      );
      expect(await explain(p.path, second)).toMatch(
        /position 1 of 2 in the default queue for master \(moved to the front by alice\)/,
      );
      const status = (await (
        await fetch(`${bot.bot.url}/status.json`, {
          headers: {
            authorization: `Basic ${Buffer.from(`${OPS.username}:${OPS.password}`).toString('base64')}`,
          },
        })
      ).json()) as {
        mergeQueue: { iid: number; front?: { by: string }; paused?: { reason: string } }[];
        queueSummary: { paused: string[] };
      };
      const mine = status.mergeQueue.filter((view) => [first.iid, second.iid].includes(view.iid));
      expect(mine.map((view) => [view.iid, view.front?.by, view.paused?.reason])).toEqual([
        [second.iid, 'alice', 'release freeze'],
        [first.iid, undefined, 'release freeze'],
      ]);
      expect(status.queueSummary.paused).toContainEqual(expect.stringContaining(p.path));
      // The queues' own page has the pause on the queue.
      const page = (await (
        await fetch(`${bot.bot.url}/status/queue.json`, {
          headers: {
            authorization: `Basic ${Buffer.from(`${OPS.username}:${OPS.password}`).toString('base64')}`,
          },
        })
      ).json()) as { queues: { project: string; paused?: { by: string; reason: string } }[] };
      expect(page.queues.find((q) => q.project === p.path)?.paused).toMatchObject({
        by: 'alice',
        reason: 'release freeze',
      });

      // Resumed: the queue is woken, and the second lands before the first.
      const resumed = await cli('resume', [p.path, 'master']);
      expect(resumed).toMatchObject({ code: 0 });
      expect(resumed.out).toMatch(/is resumed \(it was paused by alice since .*: release freeze\)/);
      await until(
        async () =>
          (await stateOf(p.id, first)) === 'merged' && (await stateOf(p.id, second)) === 'merged'
            ? true
            : undefined,
        'both merged',
      );
      const line: { id: string; parent_ids: string[] }[] = [];
      for (let commit = await admin.commits.get(p.id, 'master'); ;) {
        line.unshift(commit);
        const parent = commit.parent_ids[0];
        if (!parent) break;
        commit = await admin.commits.get(p.id, parent);
      }
      expect(line).toHaveLength(3);
      const landed = async (mr: MergeRequest) => (await admin.mergeRequests.get(p.id, mr.id)).sha;
      expect(line[1]!.parent_ids[1]).toBe(await landed(second));
      expect(line[2]!.parent_ids[1]).toBe(await landed(first));
    },
    TEST_TIMEOUT,
  );

  it(
    'removed by the operator: out with one comment naming the operator and the reason, kept out at its head though its label stays',
    async () => {
      const p = await project('removal');
      expect((await cli('pause', [p.path, 'master'], { reason: 'hold it' })).code).toBe(0);
      const mr = await openMergeRequest(p.id, 'unwanted', 'u.txt');
      await ci.idle();
      await admin.mergeRequests.update(p.id, mr.id, { labels: ['automerge'] });
      await until(() => (active(p.id).length === 1 ? true : undefined), 'queued');

      const removed = await cli('remove', [p.path, String(mr.iid)], { reason: 'breaks the release notes' });
      expect(removed).toMatchObject({ code: 0 });
      expect(removed.out).toContain(
        `${p.path}!${mr.iid} removed from the default queue for master: breaks the release notes`,
      );
      expect(entryOf(mr)?.left?.reason).toBe('removed by operator alice: breaks the release notes');
      const notes = await until(async () => {
        const found = await botNotes(p.id, mr);
        return found.length > 0 ? found : undefined;
      }, 'the comment');
      expect(notes).toHaveLength(1);
      expect(notes[0]).toMatch(
        /^Removed from the default merge queue for `master` by the operator alice: breaks the release notes\./,
      );
      expect(await explain(p.path, mr)).toMatch(
        /merge queue: left the default queue for master at [0-9a-f]{7}: removed by operator alice: breaks the release notes; it enters again after a push/,
      );
      // The queue's story tells it, with its reason code and the comment posted.
      expect(await explain(p.path, mr)).toContain(
        'taken out of the default queue for master: removed by operator alice: breaks the release notes; comment posted',
      );
      expect(await explain(p.path, mr)).toContain('merge queue: removed (operator)');
      expect(await metricsText()).toMatch(/^hookbot_merge_queue_removed_total\{reason="operator"\} 1$/m);
      // Its rule still matches (a label edit evaluates it again): it stays out at this head.
      await admin.mergeRequests.update(p.id, mr.id, { labels: ['automerge', 'reviewed'] });
      await until(() => {
        const text = JSON.stringify(bot.store.latestDecision(entryOf(mr)!.itemKey)?.decision ?? {});
        return text.includes('reviewed') && text.includes('not queued again') ? true : undefined;
      }, 'evaluated again, not queued');
      expect(active(p.id)).toEqual([]);
      // Taken out again: it is not in the queue.
      const again = await cli('remove', [p.path, String(mr.iid)], { reason: 'twice' });
      expect(again.code).toBe(1);
      expect(again.err).toMatch(
        /is not in the queue: it left the default queue at [0-9a-f]{7}: removed by operator alice/,
      );
      expect((await cli('resume', [p.path, 'master'])).code).toBe(0);
    },
    TEST_TIMEOUT,
  );

  it(
    "/hookbot dequeue: a reporter's comment takes nothing out, a developer's does (reason dequeue_command), and the label still on it does not put it back",
    async () => {
      const p = await project('commands');
      expect((await cli('pause', [p.path, 'master'], { reason: 'commands' })).code).toBe(0);
      const mr = await openMergeRequest(p.id, 'commanded', 'c.txt');
      await ci.idle();
      await admin.mergeRequests.update(p.id, mr.id, { labels: ['automerge'] });
      await until(() => (active(p.id).length === 1 ? true : undefined), 'queued');
      const itemKey = entryOf(mr)!.itemKey;

      const reporter = createClient({ baseUrl: sb.url, token: REPORTER.token, retry: { limit: 0 } });
      await reporter.notes.createMergeRequestNote(p.id, mr.id, '/hookbot dequeue');
      await until(() => {
        const text = JSON.stringify(bot.store.latestDecision(itemKey)?.decision ?? {});
        return text.includes('has reporter (20) access') ? true : undefined;
      }, "the reporter's comment evaluated");
      expect(active(p.id).map((e) => e.mrId)).toEqual([mr.id]);

      const dev = createClient({ baseUrl: sb.url, token: DEV.token, retry: { limit: 0 } });
      await dev.notes.createMergeRequestNote(p.id, mr.id, '/hookbot dequeue please');
      await until(() => (entryOf(mr)?.left ? true : undefined), "out on the developer's comment");
      expect(entryOf(mr)!.left!.reason).toBe(`taken out on the /hookbot dequeue command of @${DEV.username}`);
      expect(await explain(p.path, mr)).toMatch(
        /left the default queue for master at [0-9a-f]{7}: taken out on the \/hookbot dequeue command/,
      );

      // Resumed and evaluated again on a label edit: the label-gated rule still matches, and the
      // memory of the head it left at keeps it out.
      expect((await cli('resume', [p.path, 'master'])).code).toBe(0);
      await admin.mergeRequests.update(p.id, mr.id, { labels: ['automerge', 'later'] });
      await until(() => {
        const text = JSON.stringify(bot.store.latestDecision(itemKey)?.decision ?? {});
        return text.includes('later') && text.includes('not queued again') ? true : undefined;
      }, 'evaluated again, not queued');
      expect(active(p.id)).toEqual([]);
      expect(await stateOf(p.id, mr)).toBe('opened');
      // Counted by its reason code.
      expect(await metricsText()).toMatch(
        /^hookbot_merge_queue_removed_total\{reason="dequeue_command"\} 1$/m,
      );
    },
    TEST_TIMEOUT,
  );

  it('the ops port: 401 without credentials, JSON only, and clear JSON errors', async () => {
    const p = await project('errors');
    const bare = await fetch(`${bot.bot.url}/queues/pause`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project: p.path, target_branch: 'master', reason: 'x' }),
    });
    expect(bare.status).toBe(401);
    expect((await fetch(`${bot.bot.url}/queues`)).status).toBe(401);

    // A form a browser could send without a preflight is refused before its body is read.
    const form = await post('/queues/pause', `project=${p.path}&target_branch=master&reason=x`, {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(415);
    expect(await form.json()).toEqual({
      message: 'send the body as JSON, with Content-Type: application/json',
    });
    const plain = await post('/queues/pause', JSON.stringify({ project: p.path }), {
      'content-type': 'text/plain',
    });
    expect(plain.status).toBe(415);

    const cases: [string, unknown, number, string | RegExp][] = [
      ['/queues/pause', '{"project":', 400, /JSON|Unexpected|Expected/],
      ['/queues/pause', { project: p.path, target_branch: 'master' }, 400, 'reason is missing'],
      [
        '/queues/pause',
        { project: p.path, target_branch: 'master', reason: 'x', extra: 1 },
        400,
        'unknown field: extra',
      ],
      [
        '/queues/pause',
        { project: 'mqc/nothing-here', target_branch: 'master', reason: 'x' },
        404,
        /^unknown queue: /,
      ],
      [
        '/queues/resume',
        { project: p.path, target_branch: 'master' },
        404,
        /^unknown queue: no paused default queue/,
      ],
      [
        '/queues/remove',
        { project: p.path, iid: 99, reason: 'x' },
        404,
        `unknown merge request: ${p.path} has no merge request !99`,
      ],
      ['/queues/front', { project: p.path, iid: 0 }, 400, 'iid must be positive'],
    ];
    for (const [route, body, status, message] of cases) {
      const response = await post(route, body);
      expect(response.status, `${route} ${JSON.stringify(body)}`).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const answer = (await response.json()) as { message: string };
      if (typeof message === 'string') expect(answer.message).toBe(message);
      else expect(answer.message).toMatch(message);
    }
    // A merge request that exists but is in no queue.
    const idle = await openMergeRequest(p.id, 'idle', 'i.txt');
    const notQueued = await post('/queues/front', { project: p.path, iid: idle.iid });
    expect(notQueued.status).toBe(409);
    expect(await notQueued.json()).toEqual({
      message: `${p.path}!${idle.iid} is not in the queue: it is in no merge queue`,
    });
    // The CLI says the bot's message and exits 1; without credentials it says where to set them.
    const cliAnswer = await cli('front', [p.path, `!${idle.iid}`]);
    expect(cliAnswer).toMatchObject({ code: 1, out: '' });
    expect(cliAnswer.err).toBe(
      `hookbot queue: ${p.path}!${idle.iid} is not in the queue: it is in no merge queue\n`,
    );
    const anonymous = await runQueueCommand(
      'list',
      [],
      { bot: bot.bot.url },
      { out: () => {}, err: (t) => void (anonErr += t) },
    );
    expect(anonymous).toBe(1);
    expect(anonErr).toMatch(/asks for the status page's credentials \(server\.status_auth\)/);
  });
  let anonErr = '';
});
