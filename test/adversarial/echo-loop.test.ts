/**
 * Rules that answer the bot's own changes for ever (issue 28): two rules with `allow_bot: true`,
 * one swapping a label to another and one swapping it back, made 131-137 API writes in 20 s on one
 * issue, without end. Over real HTTP and git: the sandbox delivers its hooks to the bot
 * (`startRuntime`, as `hookbot serve` runs it), and the bot's calls go through a proxy that counts
 * what reached the server.
 *
 * - central rules (the operator's) that swap `ping` and `pong` on an issue of acme/web;
 * - repository rules (a developer's `.hookbot.yml` in acme/helpdesk) that swap `left` and `right`.
 *
 * Each time the writes stop at the bound (`scheduler.breaker.echo_writes`, 10 by default, per rule
 * and item after the bot's own change), the rule is paused in that project, and the status page and
 * explain say which rule, how many writes, on which item, and how to approve it; a changed
 * `.hookbot.yml` lifts its pause, and `hookbot sweep --once --approve` lifts the central one.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { runSweepCommand } from '../../src/cli/sweep.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { createFileStore } from '../../src/state/index.ts';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'echo-loop-secret';
const BOUND = 10; // scheduler.breaker.echo_writes, left at its default

const swap = (name: string, from: string, to: string) => `  - name: ${name}
    on: [issue.open, issue.update]
    allow_bot: true
    for: issues
    if:
      - labels: { any: [${from}] }
    do:
      - label: { add: [${to}], remove: [${from}] }
`;

const CENTRAL = `rules:\n${swap('ping to pong', 'ping', 'pong')}${swap('pong to ping', 'pong', 'ping')}`;
const LOOPING = `rules:\n${swap('left to right', 'left', 'right')}${swap('right to left', 'right', 'left')}`;
// The developer's fix: one rule, which no longer runs on the bot's own changes.
const FIXED = `rules:\n${swap('left to right', 'left', 'right').replace('    allow_bot: true\n', '')}`;

interface StatusJson {
  pausedRules: { rule: string; project?: string; reason: string }[];
}

describe('a rule that answers its own changes is braked (over HTTP, the bot as it runs)', () => {
  let sb: Sandbox;
  let runtime: Runtime | undefined;
  let proxy: FaultProxy;
  let dir = '';
  let configFile = '';
  let admin: Client;
  let web = 0;
  let helpdesk = 0;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'echo-loop-root-token', hookTimeoutMs: 5_000 });
    proxy = await startFaultProxy(sb.url);
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-echo-loop-'));
    mkdirSync(path.join(dir, 'rules'));
    writeFileSync(path.join(dir, 'rules', 'default.yml'), CENTRAL);
    // The same settings for the bot and for `hookbot sweep --once` at the end.
    configFile = path.join(dir, 'hookbot.yml');
    writeFileSync(
      configFile,
      [
        `api: { url: '${proxy.url}', token: '${DEMO_TOKENS.hookbot}' }`,
        `webhook: { secret: '${SECRET}' }`,
        `state: { path: '${path.join(dir, 'state', 'hookbot.json')}' }`,
        `rules: { dir: '${path.join(dir, 'rules')}', watch: false, repository: { enabled: true } }`,
        // Short, so a loop turns quickly; the bound under test is the default one.
        'pipeline: { debounce_ms: 20 }',
        `hooks: { projects: [acme/web, acme/helpdesk] }`,
        '',
      ].join('\n'),
    );
    const loaded = loadConfig({
      file: configFile,
      env: { HOOKBOT_PORT: '0', HOOKBOT_IN_DOCKER: '0' },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    runtime = await startRuntime(
      loaded.config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { scheduler: false },
    );
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    web = (await admin.projects.get('acme/web')).id;
    helpdesk = (await admin.projects.get('acme/helpdesk')).id;
    for (const project of [web, helpdesk])
      await admin.hooks.create(project, {
        url: runtime.bot.hookUrl,
        token: SECRET,
        issues_events: true,
        merge_requests_events: true,
        note_events: true,
        push_events: true,
      });
  });

  afterAll(async () => {
    await runtime?.close();
    await proxy?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const bot = () => runtime!;
  /** The bot's writes to issues that reached the server. */
  const issueWrites = (project: number) =>
    proxy.forwarded('PUT', new RegExp(`/projects/${project}/issues/\\d+$`));

  /** Hooks sent and every run they caused finished. */
  async function settled(): Promise<void> {
    await sb.ctx.hooks.idle();
    await bot().bot.pipeline.idle();
  }

  /**
   * Waits until the writes stop: the pause is in force and nothing is left to run. (A loop the bot
   * does not stop never ends: the test then times out.)
   */
  async function loopStopped(project: string): Promise<void> {
    await waitFor(
      () =>
        bot()
          .store.pausedRules()
          .some((paused) => paused.rule.startsWith(`echo:${project}:`))
          ? true
          : undefined,
      40_000,
      `the echo brake in ${project}`,
    );
    await settled();
  }

  async function status(): Promise<StatusJson> {
    return (await (await fetch(`${bot().bot.url}/status.json`)).json()) as StatusJson;
  }

  const explain = async (project: string, iid: number) =>
    (await fetch(`${bot().bot.url}/explain/${encodeURIComponent(project)}/issue/${iid}`)).text();

  it('central rules swapping labels stop at the bound; the status page and explain say why', async () => {
    const before = issueWrites(web);
    const issue = await admin.issues.create(web, { title: 'Ping pong', labels: ['ping'] });
    await loopStopped('acme/web');
    const writes = issueWrites(web) - before;
    // The first write answers a person (not an echo); then each rule writes at most BOUND times.
    expect(writes).toBeGreaterThan(BOUND);
    expect(writes).toBeLessThanOrEqual(1 + 2 * BOUND);

    // It stays stopped: one more event by a person is answered, and braked again at once.
    await admin.issues.update(web, issue.id, { title: 'Ping pong, edited' });
    await settled();
    expect(issueWrites(web) - before).toBeLessThanOrEqual(1 + 2 * BOUND + 1);

    const paused = (await status()).pausedRules.find((one) => one.project === 'acme/web');
    expect(paused?.rule).toMatch(/^p[io]ng to p[io]ng$/);
    expect(paused?.reason).toMatch(
      new RegExp(
        `^rule "${paused!.rule}" wrote ${BOUND} times to #${issue.iid} in \\d+ (s|min), each time after the bot's own change`,
      ),
    );
    expect(paused?.reason).toContain(
      `approve with hookbot sweep --once --approve "${paused!.rule}" --project acme/web`,
    );
    const page = await (await fetch(`${bot().bot.url}/status`)).text();
    expect(page).toContain('echo brake');
    expect(page).toContain(`wrote ${BOUND} times to #${issue.iid}`);

    const text = await explain('acme/web', issue.iid);
    expect(text).toContain(`paused: rule "${paused!.rule}" wrote ${BOUND} times to #${issue.iid}`);
    // The rule's line in the decision: it did not run, and why.
    expect(text).toMatch(
      new RegExp(`\\n- ${paused!.rule} \\([^)]*\\): does not apply: paused: rule "${paused!.rule}" wrote`),
    );
  }, 60_000);

  it("a developer's .hookbot.yml swapping labels stops at the bound; a changed file lifts the pause", async () => {
    await admin.files.create(helpdesk, {
      file_path: '.hookbot.yml',
      branch_name: 'master',
      content: LOOPING,
      commit_message: 'Swap left and right',
    });
    // The rules the push brought are in force once the push was handled.
    await settled();
    const before = issueWrites(helpdesk);
    const issue = await admin.issues.create(helpdesk, { title: 'Left right', labels: ['left'] });
    await loopStopped('acme/helpdesk');
    const writes = issueWrites(helpdesk) - before;
    expect(writes).toBeGreaterThan(BOUND);
    expect(writes).toBeLessThanOrEqual(1 + 2 * BOUND);
    const paused = (await status()).pausedRules.find((one) => one.project === 'acme/helpdesk');
    expect(paused?.reason).toContain(`wrote ${BOUND} times to #${issue.iid}`);
    expect(await explain('acme/helpdesk', issue.iid)).toContain(`paused: rule "${paused!.rule}"`);

    // The developer fixes the file: the definition that looped is gone, and so is its pause.
    await admin.files.update(helpdesk, {
      file_path: '.hookbot.yml',
      branch_name: 'master',
      content: FIXED,
      commit_message: 'Only one way',
    });
    await settled();
    await admin.issues.update(helpdesk, issue.id, { title: 'Left right, edited' });
    await settled();
    expect((await status()).pausedRules.some((one) => one.project === 'acme/helpdesk')).toBe(false);
  }, 60_000);

  it('hookbot sweep --once --approve lifts the pause (the bot stopped: the state file has one writer)', async () => {
    const paused = (await status()).pausedRules.find((one) => one.project === 'acme/web');
    expect(paused).toBeDefined();
    await runtime!.close();
    runtime = undefined;
    const out: string[] = [];
    const err: string[] = [];
    const code = await runSweepCommand(
      { once: true, approve: paused!.rule, project: 'acme/web', config: configFile },
      { out: (text: string) => void out.push(text), err: (text: string) => void err.push(text) },
    );
    expect(err.join(''), out.join('')).toBe('');
    expect(out.join('')).toContain(`rule "${paused!.rule}" approved in acme/web`);
    expect(code, out.join('')).toBe(0);
    const store = createFileStore({ path: path.join(dir, 'state', 'hookbot.json') });
    await store.open();
    try {
      expect(store.pausedRules().filter((one) => one.rule.startsWith('echo:acme/web:'))).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
