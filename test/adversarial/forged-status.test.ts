/**
 * Adversarial: a developer posts the status a merge rule requires on her own merge request, over the
 * API with her own token (8.x lets any developer post commit statuses, under any name), against a
 * running bot (`startRuntime`, what `hookbot serve` runs) to which the sandbox delivers its project
 * hooks. With `rules.status_authors` naming the CI's account, her `ci/test: success` does not count:
 * the merge request into protected master is not merged on her word, and explain says the status is
 * missing; once the CI's account posts it, it is merged.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { statusTrust } from '../../src/api/statuses.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'adv-status-secret';
const BOT = { username: 'advs-bot', token: 'advs-bot-token-0123456789' };
const CI = { username: 'advs-ci', token: 'advs-ci-token-0123456789' };
const MALLORY = { username: 'mallory', token: 'advs-mallory-token-0123456789' };
const LONG = 60_000;

const RULES = `
rules:
  - name: merge when green
    on: [merge_request.open, merge_request.update, status.changed]
    for: merge_requests
    if:
      - state: opened
      - statuses: { required: [ci/test], state: success }
    do: [ merge ]
`;

describe('statusTrust', () => {
  it('none for an empty list (every author counts); else the named accounts, any case, and the bot', () => {
    expect(statusTrust([], () => 'bot')).toBeUndefined();
    const trust = statusTrust(['CI-Runner'], () => 'hookbot')!;
    expect(['ci-runner', 'CI-RUNNER', 'hookbot', 'mallory', undefined].map((a) => trust.counts(a))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});

describe('adversarial: a developer posts the required status herself (running bot, real HTTP)', () => {
  let sb: Sandbox;
  let bot: Runtime;
  let admin: Client;
  let mallory: Client;
  let ci: Client;
  let dir = '';
  let projectId = 0;

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'advs-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-adv-status-'));
    const ids = [BOT, CI, MALLORY].map(
      (user) => addUser(sb.ctx.db, { username: user.username, private_token: user.token }).id,
    );
    const group = addGroup(sb.ctx.db, {
      name: 'advs',
      owner_id: 1,
      members: [
        { user_id: ids[0]!, access_level: 40 },
        { user_id: ids[1]!, access_level: 30 },
        { user_id: ids[2]!, access_level: 30 },
      ],
    });
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    mallory = createClient({ baseUrl: sb.url, token: MALLORY.token, retry: { limit: 0 } });
    ci = createClient({ baseUrl: sb.url, token: CI.token, retry: { limit: 0 } });
    const project = await addProject(sb.ctx, {
      name: 'web',
      namespace_id: group.id,
      creator_id: 1,
      initialFiles: { 'README.md': 'hello\n' },
    });
    projectId = project.id;
    await admin.branches.protect(projectId, 'master');

    const home = path.join(dir, 'bot');
    mkdirSync(path.join(home, 'rules'), { recursive: true });
    writeFileSync(path.join(home, 'rules', 'default.yml'), RULES);
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(home, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(home, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
      },
      cwd: home,
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    // The setting under test: only the CI's account (and the bot) may make a status count.
    config.rules.status_authors = [CI.username];
    // Hooks alone drive the bot here: no sweep acts meanwhile.
    for (const sweep of ['rules', 'merge_watch', 'reconcile', 'hook_check', 'merge_queue'] as const)
      config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
    bot = await startRuntime(
      config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET },
    );
    await admin.hooks.create(projectId, {
      url: bot.bot.hookUrl,
      token: SECRET,
      merge_requests_events: true,
      push_events: true,
      build_events: true,
    });
  });

  afterAll(async () => {
    await bot?.close();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("her own ci/test: success merges nothing into protected master; the CI's account's does", async () => {
    await mallory.branches.create(projectId, { branch_name: 'feature', ref: 'master' });
    await mallory.files.create(projectId, {
      file_path: 'feature.txt',
      branch_name: 'feature',
      content: 'mine\n',
      commit_message: 'Feature',
    });
    const head = (await admin.branches.get(projectId, 'feature')).commit.id;
    const mr = await mallory.mergeRequests.create(projectId, {
      source_branch: 'feature',
      target_branch: 'master',
      title: 'Feature',
    });
    await mallory.statuses.create(projectId, head, { state: 'success', name: 'ci/test' });

    // The bot evaluates her status's hook: the required status is missing, as far as it counts.
    const explain = () =>
      fetch(`${bot.bot.url}/explain/${encodeURIComponent('advs/web')}/mr/${mr.iid}`).then((r) => r.text());
    const seen = await waitFor(
      async () => {
        const text = await explain();
        return /ci\/test/.test(text) && /status\.changed/.test(text) ? text : undefined;
      },
      LONG,
      'the evaluation of her status',
    );
    expect(seen).toMatch(/ci\/test[^\n]*missing/);
    expect((await admin.mergeRequests.get(projectId, mr.id)).state).toBe('opened');

    // The CI's own account posts it: now it counts, and the bot merges.
    await ci.statuses.create(projectId, head, { state: 'success', name: 'ci/test' });
    await waitFor(
      async () => ((await admin.mergeRequests.get(projectId, mr.id)).state === 'merged' ? true : undefined),
      LONG,
      'the merge once the CI posted',
    );
  });
});
