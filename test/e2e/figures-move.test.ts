/**
 * Every figure the docs list moves under real traffic (docs/operations.md): a bot started as
 * `hookbot serve` runs it (`startRuntime`: receiver, pipeline, item processor, executor, scheduler
 * with its timers), the sandbox delivering its project hooks to it over HTTP, the bot's API calls
 * going through the fault proxy. The lists are read from the docs, not written here: the metric
 * families of the table under "Metrics" and the fields of the table under "Status page". Each has
 * a probe (figures-probes.ts) saying what "moved" means for it; a documented figure without a probe,
 * or whose probe never holds, fails the test. `/metrics` and `/status.json` are read all along, and
 * every read is given to every probe.
 *
 * What moves them, each step by what the comment beside it names (no test code calls the item
 * processor, a sweep or the store):
 * - an issue whose item run is held at its read (the proxy holds the GET): deliveries wait, the
 *   queue depth and the inbox show them; released, the bot labels and comments (actions done);
 * - an issue assigned to nobody the server knows: the action is parked;
 * - an issue whose comment fails (503), then is retitled: the action waits in the outbox, then the
 *   fresh evaluation withdraws it (`result="withdrawn"`, not `failed`);
 * - a merge request with a pending status and `automerge`: armed, watched; one labelled `queue-me`:
 *   queued;
 * - a scheduled rule added to the rules folder (reloaded by itself) that would close every open issue:
 *   the circuit breaker pauses it;
 * - issues with large descriptions: their deliveries fill the journal past 8 MiB, a compaction;
 * - a broken rules file: refused, with its problems;
 * - with PostgreSQL (second test), the fleet's figures;
 * - a third bot whose merge_queue sweep runs (its timer at 1 h: the hooks wake it), with git
 *   credentials and the sandbox's simulated CI building every pushed head: a merge request labelled in
 *   a project holding a branch named like the train's folder (`hookbot/train`) cannot be built into a
 *   car (the queue's trouble); three labelled in another project run as a train of depth 2, one whose
 *   CI fails is taken out (`status_failed`, its car failed), the two others land in cars.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import type { Config } from '../../src/config/index.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { ACTION_RESULTS, createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import type { MergeRequest } from '../../src/api/merge-requests.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { codeWords, readDoc, tableUnder } from '../helpers/docs-tables.ts';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.ts';
import { adminQuery, newSchemaName, postgresAvailable, TEST_DATABASE_URL } from '../helpers/postgres.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { caller, type Caller } from '../helpers/sandbox.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  BLOCKED_PROJECT,
  FIELD_PROBES,
  LONG,
  METRIC_PROBES,
  metricsOf,
  REPLICA,
  total,
  TRAIN_PROJECT,
  watcher,
} from './figures-probes.ts';

const SECRET = 'figures-move-secret';
const BOT = { username: 'fig-bot', token: 'fig-bot-token-0123456789', password: 'fig-bot-password' };
/** The simulated CI's user (a developer of the group: it posts statuses), for the queue bot's scenario. */
const CI = { username: 'fig-ci', token: 'fig-ci-token-0123456789', password: 'fig-ci-password' };

const OPERATIONS = readDoc('docs/operations.md');
const DOCUMENTED_METRICS = tableUnder(OPERATIONS, 'Metrics').map((row) => codeWords(row[0]!)[0]!);
const DOCUMENTED_FIELDS = tableUnder(OPERATIONS, 'Status page').map((row) => codeWords(row[0]!)[0]!);

const RULES = `
rules:
  - name: triage
    on: [issue.open]
    if:
      - title: { matches: '(?i)bug' }
    do:
      - label: { add: [bug] }
      - comment: 'Thanks, a maintainer will look at this.'
  - name: assign ghost
    on: [issue.open]
    if:
      - title: { matches: '(?i)ghost' }
    do:
      - assign: { to: nobody-by-this-name }
  - name: flaky
    on: [issue.open, issue.update]
    if:
      - title: { matches: '(?i)flaky' }
    do:
      - comment: 'This one looks flaky.'
  - name: arm when pending
    on: [merge_request.open, merge_request.update, status.changed]
    if:
      - state: opened
      - labels: { any: [automerge] }
      - merge_when_build_succeeds: false
      - statuses: { required: [ci/test], state: pending }
    do:
      - merge_when_build_succeeds
  - name: queue them
    on: [merge_request.open, merge_request.update]
    if:
      - state: opened
      - labels: { any: [queue-me] }
    do:
      - queue: { statuses: [ci/test], status_timeout: 1h }
`;

/** The queue bot's rules: a train of depth 2, waiting for the simulated CI's status. */
const QUEUE_RULES = `
rules:
  - name: train them
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [train-me] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, depth: 2 }
`;

/** Added later (the rules folder reloads by itself): every open issue matches, so the breaker trips. */
const STALE_RULE = `
  - name: close stale
    schedule: daily
    for: issues
    if:
      - state: opened
    do:
      - close
`;

/** The project's own rules (rules.repository.enabled). */
const REPOSITORY_RULES = `rules:
  - name: repository label
    on: [issue.open]
    if:
      - title: { matches: '(?i)repository' }
    do:
      - label: { add: [from-repository] }
`;

// ---------------------------------------------------------------------------------------------

describe('every documented figure moves under real traffic (docs/operations.md)', () => {
  let sb: Sandbox;
  let admin: Client;
  let call: Caller;
  let proxy: FaultProxy;
  let ci: SimulatedCi | undefined;
  let dir = '';
  let groupId = 0;
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'fig-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-figures-'));
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
    groupId = addGroup(sb.ctx.db, {
      name: 'fig',
      owner_id: 1,
      members: [
        { user_id: bot.id, access_level: 40 },
        { user_id: ciUser.id, access_level: 30 },
      ],
    }).id;
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    call = caller(sb, sb.adminToken);
    // Every API call of the bots goes through it: the tests hold a read, or fail a write, there.
    proxy = await startFaultProxy(sb.url);
  });

  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await ci?.stop();
    await proxy?.close();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A configuration as `hookbot serve` loads it, for a bot with its own folder. */
  function configFor(
    name: string,
    rules = RULES,
    env: Record<string, string> = {},
  ): { config: Config; rulesDir: string } {
    const home = path.join(dir, name);
    const rulesDir = path.join(home, 'rules');
    mkdirSync(rulesDir, { recursive: true });
    writeFileSync(path.join(rulesDir, 'default.yml'), rules);
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(home, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: rulesDir,
        HOOKBOT_IN_DOCKER: '0',
        ...env,
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    // One try per call: the comment the proxy fails must wait in the outbox, not be retried at once.
    config.api.retry.limit = 0;
    return { config, rulesDir };
  }

  async function start(config: Config): Promise<Runtime> {
    const runtime = await startRuntime(
      config,
      {
        log: createLogger({ level: (process.env.FIG_LOG as 'info' | undefined) ?? 'silent', format: 'json' }),
        metrics: createMetrics(),
      },
      { api: { url: proxy.url, token: BOT.token }, webhookSecret: SECRET },
    );
    runtimes.push(runtime);
    return runtime;
  }

  async function project(name: string, files: Record<string, string> = {}) {
    const rec = await addProject(sb.ctx, {
      name,
      namespace_id: groupId,
      creator_id: 1,
      initialFiles: { 'README.md': `# ${name}\n`, ...files },
    });
    return { id: rec.id, path: `fig/${rec.path}` };
  }

  /** The sandbox delivers the project's hooks to the bot, with the secret token. */
  async function hookTo(projectId: number, runtime: Runtime) {
    await admin.hooks.create(projectId, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      issues_events: true,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });
  }

  async function openIssue(projectId: number, title: string, description = '') {
    const answer = await call<{ id: number }>('POST', `/projects/${projectId}/issues`, {
      body: { title, description },
    });
    expect([200, 201], answer.text).toContain(answer.status);
    return answer.body.id;
  }

  async function issue(projectId: number, id: number) {
    return (await call<any>('GET', `/projects/${projectId}/issues/${id}`)).body;
  }

  async function notesOf(projectId: number, id: number): Promise<string[]> {
    const answer = await call<{ body: string }[]>('GET', `/projects/${projectId}/issues/${id}/notes`);
    return answer.body.map((note) => note.body);
  }

  /** A branch with one commit, its head's status `ci/test` pending, and a merge request from it. */
  async function mergeRequest(projectId: number, branch: string, labels: string) {
    await admin.branches.create(projectId, { branch_name: branch, ref: 'master' });
    await admin.files.create(projectId, {
      file_path: `${branch}.txt`,
      branch_name: branch,
      content: `${branch}\n`,
      commit_message: `Add ${branch}`,
    });
    const sha = (await admin.branches.get(projectId, branch)).commit.id;
    const status = await call('POST', `/projects/${projectId}/statuses/${sha}`, {
      body: { state: 'pending', name: 'ci/test' },
    });
    expect([200, 201], status.text).toContain(status.status);
    const answer = await call<{ id: number }>('POST', `/projects/${projectId}/merge_requests`, {
      body: { source_branch: branch, target_branch: 'master', title: `Change ${branch}`, labels },
    });
    expect([200, 201], answer.text).toContain(answer.status);
    return answer.body.id;
  }

  /** Holds the next read of one issue at the proxy until `release()` (the item run waits there). */
  function holdNextIssueRead() {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    proxy.fail({ method: 'GET', path: /^\/api\/v3\/projects\/[^/]+\/issues\/\d+$/, before: () => held });
    return release;
  }

  it(
    'with the state file: every metric family and every status field moves as documented',
    async () => {
      // The probes and the docs name the same figures: one documented with no probe fails here.
      expect(Object.keys(METRIC_PROBES).sort()).toEqual([...DOCUMENTED_METRICS].sort());
      expect(Object.keys(FIELD_PROBES).sort()).toEqual([...DOCUMENTED_FIELDS].sort());

      const web = await project('web', { '.hookbot.yml': REPOSITORY_RULES });
      const { config, rulesDir } = configFor('file');
      // Repository rules on: their status section has something to show.
      config.rules.repository.enabled = true;
      config.hooks.projects = [web.path];
      // The sweeps tick every second, so their next runs and last successes move during the test;
      // reconcile and the hook check run once at start (a reconcile every second would evaluate the
      // issues again and again, and send the comment held back below before it can be withdrawn).
      for (const sweep of ['retries', 'merge_watch', 'rules'] as const)
        config.scheduler.sweeps[sweep] = { enabled: true, every: '1s' };
      for (const sweep of ['reconcile', 'hook_check'] as const)
        config.scheduler.sweeps[sweep] = { enabled: true, every: '1h' };
      config.scheduler.sweeps.merge_queue = { enabled: false, every: '1h' };
      const runtime = await start(config);
      const watch = watcher(runtime.bot.url, 'file');
      await watch.read();
      await hookTo(web.id, runtime);
      watch.start();

      // 1. An item run held at its read: its delivery waits (pending, the queue depth, the inbox).
      const release = holdNextIssueRead();
      const bug = await openIssue(web.id, 'Checkout bug on an empty cart (repository)');
      for (const field of [
        'deliveries.pending',
        'deliveries.oldestPendingAt',
        'stats.inbox',
        'stats.inboxBytes',
      ])
        await watch.until(field);
      await watch.until('hookbot_queue_depth');
      release();
      // Released: labelled (the central rule and the repository's) and thanked.
      await waitFor(
        async () => {
          const labels: string[] = (await issue(web.id, bug)).labels;
          const notes = await notesOf(web.id, bug);
          return labels.includes('bug') && labels.includes('from-repository') && notes.length === 1
            ? true
            : undefined;
        },
        LONG,
        'the bug labelled and thanked',
      );

      // 2. Assigned to nobody the server knows: parked for good.
      await openIssue(web.id, 'Assign this ghost');
      await watch.until('parked');

      // 3. A comment the server refuses (503) waits in the outbox; the issue retitled, the fresh
      // evaluation no longer plans it: withdrawn.
      proxy.fail({ method: 'POST', path: /^\/api\/v3\/projects\/[^/]+\/issues\/\d+\/notes$/, mode: 'down' });
      const flaky = await openIssue(web.id, 'A flaky test');
      await waitFor(
        async () => {
          const { samples } = await watch.read();
          const tried = ['failed', 'ambiguous'].map((result) =>
            total(samples, 'hookbot_rule_actions_total', { rule: 'flaky', result }),
          );
          return tried.some((count) => count > 0) ? true : undefined;
        },
        LONG,
        'the comment tried and failed',
      );
      await watch.until('stats.outbox');
      expect(
        (await call('PUT', `/projects/${web.id}/issues/${flaky}`, { body: { title: 'A test' } })).status,
      ).toBe(200);
      await watch.until('hookbot_rule_actions_total');
      expect((await notesOf(web.id, flaky)).filter((note) => note.includes('looks flaky'))).toEqual([]);

      // 4. Armed on a pending status (the merge watch), and queued.
      await mergeRequest(web.id, 'armed', 'automerge');
      await watch.until('mergeWatch');
      await mergeRequest(web.id, 'queued', 'queue-me');
      await watch.until('mergeQueue');

      // 5. A scheduled rule that would close every open issue: the breaker pauses it at the next tick.
      const loadedAt = (await watch.read()).status.rules.loadedAt;
      writeFileSync(path.join(rulesDir, 'default.yml'), `${RULES}${STALE_RULE}`);
      await waitFor(
        async () => ((await watch.read()).status.rules.loadedAt > loadedAt ? true : undefined),
        LONG,
        'the rules reloaded',
      );
      await watch.until('pausedRules');
      await watch.until('hookbot_breaker_trips_total');

      // 6. Large deliveries (descriptions of 900 kB, each delivered whole): the journal passes 8 MiB.
      for (let n = 0; n < 10; n++) await openIssue(web.id, `Large ${n}`, `${'x'.repeat(900_000)}`);
      await watch.until('stats.compactions', LONG * 2);

      // 7. A broken rules file: refused, its problems shown, the rules before stay in force.
      writeFileSync(path.join(rulesDir, 'default.yml'), 'rules: [\n');
      await watch.until('rules.problems');
      await watch.until('rules.refused');

      // Every sweep has run, and ended ok at least once.
      await watch.until('sweeps[].lastSuccess');
      await watch.until('hookbot_sweep_runs_total');
      await watch.stop();
      await watch.read();

      // The merge queue's families move with the queue bot (third test), not here.
      const expected = [
        ...DOCUMENTED_METRICS.filter((metric) => metricsOf('file').includes(metric)),
        ...DOCUMENTED_FIELDS.filter((field) => FIELD_PROBES[field]!.bot === 'file'),
      ];
      expect(expected.length).toBeGreaterThan(metricsOf('file').length);
      expect(expected.filter((figure) => !watch.moved.has(figure))).toEqual([]);
      // Every result label seen is one the docs list (the withdrawn action among them, never "failed").
      const documentedResults = codeWords(
        tableUnder(OPERATIONS, 'Label values').find((row) =>
          row[0]!.includes('hookbot_rule_actions_total'),
        )![1]!,
      );
      expect([...documentedResults].sort()).toEqual([...ACTION_RESULTS].sort());
      for (const result of watch.labels.get('result') ?? []) expect(documentedResults).toContain(result);
      // The comment: one try that failed (503, to be retried), then its withdrawal, each counted
      // under its own result (the withdrawal was counted "failed" before).
      const flakyResults: Record<string, number> = {};
      for (const sample of (await watch.read()).samples)
        if (sample.name === 'hookbot_rule_actions_total' && sample.labels.rule === 'flaky')
          flakyResults[sample.labels.result!] = sample.value;
      expect(flakyResults.withdrawn).toBe(1);
      expect((flakyResults.failed ?? 0) + (flakyResults.ambiguous ?? 0)).toBe(1);
      expect(Object.keys(flakyResults).sort()).toEqual(
        ['withdrawn', flakyResults.failed === undefined ? 'ambiguous' : 'failed'].sort(),
      );
      await runtime.close();
    },
    LONG * 5,
  );

  it.skipIf(!postgresAvailable)(
    'with PostgreSQL: the fleet fields move as documented',
    async () => {
      const schema = newSchemaName();
      try {
        const pgProject = await project('pg');
        const { config } = configFor('postgres');
        config.state.database_url = TEST_DATABASE_URL;
        config.state.database_schema = schema;
        config.state.replica_id = REPLICA;
        config.hooks.projects = [pgProject.path];
        for (const sweep of [
          'retries',
          'merge_watch',
          'rules',
          'reconcile',
          'hook_check',
          'merge_queue',
        ] as const)
          config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
        const runtime = await start(config);
        const watch = watcher(runtime.bot.url, 'postgres');
        await watch.read();
        await hookTo(pgProject.id, runtime);

        // An item run held at its read: the delivery is pending in the fleet, held by this replica.
        const release = holdNextIssueRead();
        const bug = await openIssue(pgProject.id, 'A bug in the fleet');
        for (const field of ['fleet.replica', 'fleet.pending', 'fleet.replicas']) await watch.until(field);
        release();
        await waitFor(
          async () => ((await issue(pgProject.id, bug)).labels.includes('bug') ? true : undefined),
          LONG,
          'the bug labelled',
        );
        const expected = DOCUMENTED_FIELDS.filter((field) => FIELD_PROBES[field]!.bot === 'postgres');
        expect(expected.length).toBeGreaterThan(0);
        expect(expected.filter((field) => !watch.moved.has(field))).toEqual([]);
        await runtime.close();
      } finally {
        await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      }
    },
    LONG * 2,
  );

  it(
    'with merge queues that run: every merge queue family and the queue summary move as documented',
    async () => {
      ci = startSimulatedCi(sb, { token: CI.token, git: { username: CI.username, password: CI.password } });
      // Git credentials: the train builds its cars with git and pushes them.
      const { config } = configFor('queue', QUEUE_RULES, { HOOKBOT_GIT_PASSWORD: BOT.password });
      config.rules.watch = false;
      config.git.cache_dir = path.join(dir, 'queue', 'git');
      // The merge queue sweep alone, its timer at 1 h: the hooks (a label, the CI's statuses on the
      // cars) wake it.
      for (const sweep of ['retries', 'merge_watch', 'rules', 'reconcile', 'hook_check'] as const)
        config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
      config.scheduler.sweeps.merge_queue = { enabled: true, every: '1h' };
      const runtime = await start(config);
      const watch = watcher(runtime.bot.url, 'queue');
      await watch.read();
      watch.start();

      /** A merge request from a new branch with one file, its CI done, then labelled into the queue. */
      async function trainRequest(projectId: number, branch: string, content: string) {
        await admin.branches.create(projectId, { branch_name: branch, ref: 'master' });
        await admin.files.create(projectId, {
          file_path: `${branch}.txt`,
          branch_name: branch,
          content,
          commit_message: `Add ${branch}`,
        });
        return admin.mergeRequests.create(projectId, {
          source_branch: branch,
          target_branch: 'master',
          title: `Change ${branch}`,
        });
      }
      const label = (projectId: number, mr: MergeRequest) =>
        admin.mergeRequests.update(projectId, mr.id, { labels: ['train-me'] });

      // 1. A queue that cannot move: a branch named like the train's folder blocks its cars' names.
      const blocked = await project('blocked', INITIAL_FILES);
      expect(blocked.path).toBe(BLOCKED_PROJECT);
      await hookTo(blocked.id, runtime);
      await admin.branches.create(blocked.id, { branch_name: 'hookbot/train', ref: 'master' });
      const held = await trainRequest(blocked.id, 'held', 'calls: foo\n');
      await ci.idle();
      await label(blocked.id, held);
      await watch.until('queueSummary');

      // 2. A train of depth 2: `bad` fails its CI (taken out, its car failed), `a` and `c` land.
      const train = await project('train', INITIAL_FILES);
      expect(train.path).toBe(TRAIN_PROJECT);
      await hookTo(train.id, runtime);
      const a = await trainRequest(train.id, 'a', 'calls: foo\n');
      const bad = await trainRequest(train.id, 'bad', 'calls: nowhere\n');
      const c = await trainRequest(train.id, 'c', 'calls: foo\n');
      await ci.idle();
      for (const mr of [a, bad, c]) await label(train.id, mr);
      for (const metric of [
        'hookbot_merge_queue_entries',
        'hookbot_merge_queue_trouble',
        'hookbot_merge_queue_rounds_total',
        'hookbot_merge_queue_removed_total',
        'hookbot_merge_queue_car_builds_total',
        'hookbot_merge_queue_landed_total',
        'hookbot_merge_queue_time_to_land_seconds',
      ])
        await watch.until(metric);

      // 3. An operator freezes the blocked project's queue over the ops port (as `hookbot queue pause`
      // does; a loopback bot without status_auth takes it), then lifts the freeze.
      const control = (action: string, body: object) =>
        fetch(`${runtime.bot.url}/queues/${action}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ project: BLOCKED_PROJECT, target_branch: 'master', ...body }),
        });
      expect((await control('pause', { reason: 'release freeze', by: 'ops' })).status).toBe(200);
      await watch.until('stats.queueControls');
      expect((await control('resume', { by: 'ops' })).status).toBe(200);
      await watch.stop();
      await watch.read();

      // What the figures say is what the server shows: two landed, the failed one open, the held one
      // still waiting behind the branch in the way.
      const stateOf = async (projectId: number, mr: MergeRequest) =>
        (await admin.mergeRequests.get(projectId, mr.id)).state;
      expect(await stateOf(train.id, a)).toBe('merged');
      expect(await stateOf(train.id, c)).toBe('merged');
      expect(await stateOf(train.id, bad)).toBe('opened');
      expect(await stateOf(blocked.id, held)).toBe('opened');

      const expected = [
        ...DOCUMENTED_METRICS.filter((metric) => metricsOf('queue').includes(metric)),
        ...DOCUMENTED_FIELDS.filter((field) => FIELD_PROBES[field]!.bot === 'queue'),
      ];
      expect(expected.length).toBe(metricsOf('queue').length + 2);
      expect(expected.filter((figure) => !watch.moved.has(figure))).toEqual([]);
      await runtime.close();
      await ci.stop();
      ci = undefined;
    },
    LONG * 3,
  );
});
