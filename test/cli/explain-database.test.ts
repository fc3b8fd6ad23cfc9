/**
 * `hookbot explain --database`: a bot on PostgreSQL (real server, a schema of its own) records a
 * decision against the sandbox; explain reads it from the database while the bot runs, without
 * joining the fleet or writing anything, and by default whenever HOOKBOT_DATABASE_URL is set.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { main } from '../../src/cli/main.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import type { DecisionRecord } from '../../src/state/index.ts';
import { answerOfOne } from './explain-expected.ts';
import { adminQuery, newSchemaName, postgresAvailable, TEST_DATABASE_URL } from '../helpers/postgres.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'explain-db-hook-secret';

async function explain(args: string[]) {
  const io = { out: '', err: '' };
  const code = await main(['explain', ...args], {
    out: (t) => void (io.out += t),
    err: (t) => void (io.err += t),
  });
  return { code, ...io };
}

/** Everything in the schema that a reader could have changed: the replicas and the row counts. */
async function footprint(schema: string): Promise<unknown> {
  const replicas = await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".hookbot_replicas`);
  const decisions = await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".hookbot_latest_decisions`);
  const sessions = await adminQuery(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'hookbot explain'`,
  );
  return {
    replicas: replicas.rows[0].n,
    decisions: decisions.rows[0].n,
    explainSessions: sessions.rows[0].n,
  };
}

describe.skipIf(!postgresAvailable)('hookbot explain --database', () => {
  const schema = newSchemaName();
  let sb: Sandbox;
  let runtime: Runtime | undefined;
  let projectId = 0;
  let issue = { id: 0, iid: 0 };
  let recorded: { text: string };
  /** The same, with its id and time: the whole answer derives from it (one decision kept). */
  let kept: DecisionRecord;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'explain-db-root', hookTimeoutMs: 2_000 });
    const loaded = loadConfig({
      env: {
        HOOKBOT_DATABASE_URL: TEST_DATABASE_URL,
        HOOKBOT_REPLICA_ID: 'replica-a',
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: 'test/fixtures/rules/example',
        HOOKBOT_IN_DOCKER: '0',
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.state.database_schema = schema;
    config.pipeline.debounce_ms = 0;
    config.rules.watch = false;
    runtime = await startRuntime(
      config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { api: { url: sb.url, token: DEMO_TOKENS.hookbot }, webhookSecret: SECRET, scheduler: false },
    );
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    projectId = (await admin.projects.get('acme/web')).id;
    await admin.hooks.create('acme/web', { url: runtime.bot.hookUrl, issues_events: true, token: SECRET });
    const alice = createClient({ baseUrl: sb.url, token: DEMO_TOKENS.alice });
    const created = await alice.issues.create('acme/web', { title: 'Crash on save', labels: ['ui'] });
    issue = { id: created.id, iid: created.iid };
    const record = await waitFor(
      () => runtime!.store.latestDecision(`issue:${projectId}:${issue.id}`),
      20_000,
      'the decision recorded',
    );
    await runtime.bot.pipeline.idle();
    recorded = record.decision as typeof recorded;
    kept = record;
  });

  afterEach(() => {
    vi.unstubAllEnvs();
  });
  afterAll(async () => {
    await runtime?.close();
    await sb?.close();
    if (postgresAvailable) await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });

  it('reads the decision from the database while the bot runs, and writes nothing there', async () => {
    const before = await footprint(schema);
    const result = await explain([
      'acme/web',
      'issue',
      String(issue.iid),
      `--database=${TEST_DATABASE_URL}`,
      '--database-schema',
      schema,
    ]);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.out).toBe(`${recorded.text}\n`);
    expect(result.out).toContain('triage bug reports');
    // No replica joined, nothing recorded, the connection closed.
    expect(await footprint(schema)).toEqual(before);
  });

  it('reads $HOOKBOT_DATABASE_URL when neither --bot nor --state is given', async () => {
    vi.stubEnv('HOOKBOT_DATABASE_URL', TEST_DATABASE_URL);
    const result = await explain([
      String(projectId),
      'issue',
      `#${issue.iid}`,
      '--json',
      '--database-schema',
      schema,
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out)).toEqual(answerOfOne(kept));
  });

  it('says so when the item has no decision there', async () => {
    const result = await explain([
      'acme/web',
      'issue',
      '999',
      `--database=${TEST_DATABASE_URL}`,
      '--database-schema',
      schema,
    ]);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`(schema ${schema})`);
  });

  it('says which database and schema hold no hookbot state, and creates nothing there', async () => {
    const empty = newSchemaName();
    const result = await explain([
      'acme/web',
      'issue',
      '1',
      `--database=${TEST_DATABASE_URL}`,
      '--database-schema',
      empty,
    ]);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`(schema ${empty}): holds no hookbot state`);
    const created = await adminQuery('SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1', [
      empty,
    ]);
    expect(created.rows[0].n).toBe(0);
  });

  it('a row that is not JSON hookbot writes is a clear error, not a crash', async () => {
    const broken = newSchemaName();
    await adminQuery(`CREATE SCHEMA "${broken}"`);
    await adminQuery(`CREATE TABLE "${broken}".hookbot_meta (schema_version int)`);
    await adminQuery(`INSERT INTO "${broken}".hookbot_meta VALUES (1)`);
    await adminQuery(
      `CREATE TABLE "${broken}".hookbot_latest_decisions (item_key text, n bigint, record text)`,
    );
    await adminQuery(`INSERT INTO "${broken}".hookbot_latest_decisions VALUES ('issue:1:1', 1, '{not json')`);
    try {
      const result = await explain([
        'acme/web',
        'issue',
        '1',
        `--database=${TEST_DATABASE_URL}`,
        '--database-schema',
        broken,
      ]);
      expect(result.code).toBe(1);
      expect(result.err).toContain('is not the JSON hookbot writes');
    } finally {
      await adminQuery(`DROP SCHEMA "${broken}" CASCADE`);
    }
  });

  it('refuses two sources at once', async () => {
    const result = await explain([
      'acme/web',
      'issue',
      '1',
      '--state',
      'x.json',
      `--database=${TEST_DATABASE_URL}`,
    ]);
    expect(result.code).toBe(2);
    expect(result.err).toContain('give one of --bot');
  });
});
