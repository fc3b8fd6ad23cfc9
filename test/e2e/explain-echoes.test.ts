/**
 * "Why did it act?" answered after the echoes (issue 30), with the bot as it runs: `startRuntime`
 * (what `hookbot serve` runs), the sandbox delivering the project's hooks to it over HTTP, on the
 * state file and on PostgreSQL.
 *
 * A rule labels a merge request about the docs, posts a commit status on its head and comments.
 * Each of those fires hooks back at the bot: the status a Pipeline Hook (no actor: a real
 * `status.changed` evaluation, which the labelling rule does not listen to), the label a Merge
 * Request Hook and the comment a Note Hook (the bot's own: evaluated because one rule of the
 * project allows bot events). Before, each echo replaced the decision explain kept, and explain
 * answered "label docs MRs ... does not apply: status.changed" to whoever asked why the merge request
 * was labelled. Now explain (HTTP text and JSON, `hookbot explain --bot`, `--state` once the bot
 * stopped, `--database` while it runs) answers with the decision that planned the label: its rule,
 * the condition with the title seen, the event; and the latest evaluation is the echo.
 *
 * The wait is on the status page's recent decisions (which every version has): until an
 * evaluation of `status.changed` is recorded after the one that labelled. No test code calls the
 * item processor or the store.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import { main } from '../../src/cli/main.ts';
import type { Config } from '../../src/config/index.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { adminQuery, newSchemaName, postgresAvailable, TEST_DATABASE_URL } from '../helpers/postgres.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'explain-echoes-secret';
const BOT = { username: 'echo-bot', token: 'echo-bot-token-0123456789' };
/** Generous: a busy 2-core machine runs the sandbox and the bot at once. */
const LONG = 90_000;

const RULES = `
rules:
  - name: label docs MRs
    on: [merge_request.open]
    if:
      - title: { matches: '(?i)\\bdocs\\b' }
    do:
      - label: { add: [documentation] }
      - status: { name: hookbot/docs, state: success, description: 'about the docs' }
      - comment: 'Labelled documentation.'
  # Allows bot events: the bot's own label and comment are evaluated too (and recorded).
  - name: thank the bot
    on: [note.created, merge_request.update]
    allow_bot: true
    if:
      - title: { matches: 'never-seen-title' }
    do:
      - comment: 'Thanks.'
`;

async function cli(args: string[]) {
  const io = { out: '', err: '' };
  const code = await main(['explain', ...args], {
    out: (t) => void (io.out += t),
    err: (t) => void (io.err += t),
  });
  return { code, ...io };
}

interface Answer {
  id: string;
  evaluation: { event: string; rules: { rule: string; applies: boolean; matched: boolean }[] };
  execution: { calls: { status: string }[] };
  actions: { id: string; op: string; rule: string; status: string; decision: string; call: string }[];
  acting: {
    id: string;
    evaluation: {
      event: string;
      item: { labels: string[] };
      rules: {
        rule: string;
        matched: boolean;
        conditions: { describe: string; value: unknown; ok: boolean }[];
      }[];
    };
  }[];
  history: { id: string; event: string; acted: boolean }[];
  explanation: string;
}

describe('explain answers "why did it act?" after the echoes of the bot\'s own changes', () => {
  let sb: Sandbox;
  let admin: Client;
  let dir = '';
  let groupId = 0;

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'echo-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-explain-echoes-'));
    const bot = addUser(sb.ctx.db, { username: BOT.username, private_token: BOT.token });
    groupId = addGroup(sb.ctx.db, {
      name: 'echo',
      owner_id: 1,
      members: [{ user_id: bot.id, access_level: 40 }],
    }).id;
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
  });

  afterAll(async () => {
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A bot of its own folder, as `hookbot serve` loads it; sweeps off (hooks alone move it). */
  function configFor(name: string): { config: Config; stateFile: string } {
    const home = path.join(dir, name);
    const rulesDir = path.join(home, 'rules');
    mkdirSync(rulesDir, { recursive: true });
    writeFileSync(path.join(rulesDir, 'default.yml'), RULES);
    const stateFile = path.join(home, 'state', 'hookbot.json');
    const loaded = loadConfig({
      env: { HOOKBOT_STATE: stateFile, HOOKBOT_PORT: '0', HOOKBOT_RULES: rulesDir, HOOKBOT_IN_DOCKER: '0' },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 0;
    config.rules.watch = false;
    for (const sweep of [
      'retries',
      'merge_watch',
      'rules',
      'reconcile',
      'hook_check',
      'merge_queue',
    ] as const)
      config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
    return { config, stateFile };
  }

  async function start(config: Config): Promise<Runtime> {
    return startRuntime(
      config,
      {
        log: createLogger({
          level: (process.env.ECHO_LOG as 'info' | undefined) ?? 'silent',
          format: 'json',
        }),
        metrics: createMetrics(),
      },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET },
    );
  }

  /**
   * A project whose hooks go to the bot; a merge request about the docs opened in it; waits until
   * the bot labelled it and then evaluated the echo of its own status. Returns the project's path
   * and the merge request's iid.
   */
  async function docsMergeRequest(name: string, runtime: Runtime): Promise<{ project: string; iid: number }> {
    const rec = await addProject(sb.ctx, {
      name,
      namespace_id: groupId,
      creator_id: 1,
      initialFiles: { 'README.md': `# ${name}\n` },
    });
    const project = `echo/${rec.path}`;
    await admin.hooks.create(rec.id, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      merge_requests_events: true,
      note_events: true,
      build_events: true,
      pipeline_events: true,
    });
    await admin.branches.create(rec.id, { branch_name: 'docs', ref: 'master' });
    await admin.files.create(rec.id, {
      file_path: 'docs/guide.md',
      branch_name: 'docs',
      content: '# Guide\n',
      commit_message: 'Add the guide',
    });
    const mr = await admin.mergeRequests.create(rec.id, {
      source_branch: 'docs',
      target_branch: 'master',
      title: 'Update the docs',
    });
    const itemKey = `merge_request:${rec.id}:${mr.id}`;
    await waitFor(
      async () =>
        (await admin.mergeRequests.get(rec.id, mr.id)).labels.includes('documentation') ? true : undefined,
      LONG,
      'the merge request labelled documentation',
    );
    // The echo: an evaluation of the bot's own status, recorded after the one that labelled.
    await waitFor(
      async () => {
        const status = (await (await fetch(`${runtime.bot.url}/status.json`)).json()) as {
          decisions: { itemKey: string; at: number; event?: string; matched: string[] }[];
        };
        const mine = status.decisions.filter((d) => d.itemKey === itemKey);
        const labelled = mine.find((d) => d.matched.includes('label docs MRs'));
        const echo = mine.find((d) => d.event?.includes('status.changed') && !d.matched.length);
        return labelled && echo && echo.at >= labelled.at ? true : undefined;
      },
      LONG,
      'the echo of the status evaluated after the label',
    );
    await runtime.bot.pipeline.idle();
    return { project, iid: mr.iid };
  }

  /** The answer says why it acted: the label, planned by the evaluation of merge_request.open. */
  function expectWhy(answer: Answer): void {
    // First, in words (an answer without `explanation` is the latest decision alone: its text).
    expect(answer.explanation ?? (answer as unknown as { text: string }).text).toMatch(
      /^why it acted: 3 actions/,
    );
    const label = answer.actions.find((a) => a.op === 'mergeRequests.update');
    expect(label).toMatchObject({ rule: 'label docs MRs', status: 'done' });
    expect(label!.call).toContain('documentation');
    const planner = answer.acting.find((d) => d.id === label!.decision)!;
    expect(planner.evaluation.event).toContain('merge_request.open');
    const rule = planner.evaluation.rules.find((r) => r.rule === 'label docs MRs')!;
    expect(rule.matched).toBe(true);
    expect(rule.conditions[0]).toMatchObject({ value: 'Update the docs', ok: true });
    // The status and the comment were planned by the same decision.
    expect(
      answer.actions
        .filter((a) => a.decision === planner.id)
        .map((a) => a.op)
        .sort(),
    ).toEqual(['mergeRequests.update', 'notes.createMergeRequestNote', 'statuses.create']);
    // Evaluations came after it (the echoes), and did nothing; the answer is not about them.
    const index = answer.history.findIndex((h) => h.id === planner.id);
    expect(index).toBeGreaterThan(0);
    expect(answer.history.slice(0, index).every((h) => !h.acted)).toBe(true);
    expect(answer.history.slice(0, index).some((h) => h.event.includes('status.changed'))).toBe(true);
    // In words: the action first, with the rule's condition and the title seen. The events the
    // decision was made on include the open; the push of the branch's commit may join them in one
    // burst (the sandbox fires it as 8.x does, a few ms before the open).
    expect(answer.explanation).toMatch(/^why it acted: 3 actions/);
    expect(answer.explanation).toMatch(
      new RegExp(
        `\\ndecision ${planner.id} at \\S+, on event (?:[\\w.]+, )*merge_request\\.open(?:, [\\w.]+)*:\\n {2}\\d\\. done: mergeRequests\\.update .*documentation`,
      ),
    );
    expect(answer.explanation).toContain('✓ label docs MRs');
    expect(answer.explanation).toMatch(/✓ title matches .*: "Update the docs"/);
    expect(answer.explanation).toContain('latest evaluation (decision');
  }

  async function overHttp(runtime: Runtime, project: string, iid: number) {
    const url = `${runtime.bot.url}/explain/${encodeURIComponent(project)}/mr/${iid}`;
    const json = (await (await fetch(url, { headers: { accept: 'application/json' } })).json()) as Answer;
    const text = await (await fetch(url)).text();
    return { json, text };
  }

  it(
    'with the state file: over HTTP, through hookbot explain --bot, and --state once the bot stopped',
    async () => {
      const { config, stateFile } = configFor('file');
      const runtime = await start(config);
      let item = { project: '', iid: 0 };
      try {
        item = await docsMergeRequest('web', runtime);
        const { project, iid } = item;
        const { json, text } = await overHttp(runtime, project, iid);
        // The latest evaluation is an echo that did nothing: the fields at the top are its own.
        expect(json.execution.calls.every((call) => call.status === 'skipped')).toBe(true);
        expect(json.evaluation.rules.find((r) => r.rule === 'label docs MRs')?.matched).toBe(false);
        expectWhy(json);
        expect(text).toBe(`${json.explanation}\n`);

        const bot = await cli([project, 'mr', String(iid), '--bot', runtime.bot.url, '--json']);
        expect(bot.code).toBe(0);
        expectWhy(JSON.parse(bot.out) as Answer);
        const label = json.actions.find((a) => a.op === 'mergeRequests.update')!;
        const asked = await cli([
          project,
          'mr',
          String(iid),
          `--bot=${runtime.bot.url}`,
          '--decision',
          label.decision,
        ]);
        expect(asked.code).toBe(0);
        expect(asked.out).toMatch(
          new RegExp(`^decision ${label.decision} \\(\\S+\\), as asked; the latest is `),
        );
        expect(asked.out).toContain('✓ label docs MRs');
      } finally {
        await runtime.close();
      }
      const fromFile = await cli([item.project, 'mr', String(item.iid), '--state', stateFile, '--json']);
      expect(fromFile.code, fromFile.err).toBe(0);
      expectWhy(JSON.parse(fromFile.out) as Answer);
      const words = await cli([item.project, 'mr', String(item.iid), '--state', stateFile]);
      expect(words.out).toMatch(/^why it acted: 3 actions/);
    },
    LONG * 3,
  );

  it.skipIf(!postgresAvailable)(
    'with PostgreSQL: over HTTP, through hookbot explain --bot, and --database while the bot runs',
    async () => {
      const schema = newSchemaName();
      const { config } = configFor('postgres');
      config.state.database_url = TEST_DATABASE_URL;
      config.state.database_schema = schema;
      config.state.replica_id = 'echo-replica';
      const runtime = await start(config);
      try {
        const { project, iid } = await docsMergeRequest('pg', runtime);
        // A replica's view of the latest decisions follows the database at its refresh.
        await runtime.store.fleet!.refresh();
        const { json, text } = await overHttp(runtime, project, iid);
        expectWhy(json);
        expect(text).toBe(`${json.explanation}\n`);
        const bot = await cli([project, 'mr', String(iid), '--bot', runtime.bot.url, '--json']);
        expectWhy(JSON.parse(bot.out) as Answer);
        const database = await cli([
          project,
          'mr',
          String(iid),
          `--database=${TEST_DATABASE_URL}`,
          '--database-schema',
          schema,
          '--json',
        ]);
        expect(database.code, database.err).toBe(0);
        expectWhy(JSON.parse(database.out) as Answer);
      } finally {
        await runtime.close();
        await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      }
    },
    LONG * 3,
  );
});
