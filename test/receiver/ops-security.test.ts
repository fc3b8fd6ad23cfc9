/**
 * The bot's port as a stranger and as its operator see it, over real HTTP: a runtime against the
 * sandbox with `server.status_auth` set and a rule whose pattern froze a backtracking engine.
 * Unauthenticated callers get nothing but /healthz and /readyz; names that are not the bot's get
 * 403 (DNS rebinding); explain answers from recorded state only (no API call, whatever is asked);
 * dot segments are refused; /readyz says yes or no from a cached check; invented event kinds are
 * counted as `other`; a title built to make the pattern backtrack is evaluated like any other.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { Config } from '../../src/config/schema.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics, type Metrics } from '../../src/ops/metrics.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'ops-security-hook-secret';
const USER = 'operator';
const PASSWORD = 'ops-security-password';
const AUTH = { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` };
/** The title that froze the bot for 44 s with this rule on V8's backtracking engine. */
const FREEZING_TITLE = '11111111111111111111111111111!';
const RULES = [
  'rules:',
  '  - name: digits only',
  '    on: [issue.open]',
  "    if: [ { title: { matches: '^(\\w|\\d)+$' } } ]",
  '    do: [ { label: { add: [digits] } } ]',
  '',
].join('\n');

interface Answer {
  status: number;
  type: string;
  text: string;
}

/**
 * GET with any headers, `Host` included (fetch does not let a caller set it), and the path sent as
 * written: a URL parser would resolve `%2E` segments away before they leave (curl --path-as-is).
 */
function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const { hostname, port } = new URL(url);
  const rawPath = url.slice(url.indexOf('/', url.indexOf('//') + 2));
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path: rawPath, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), text }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** API calls the bot has made so far, every route and status together. */
async function apiCalls(metrics: Metrics, route?: string): Promise<number> {
  const metric = metrics.registry.getSingleMetric('hookbot_api_calls_total');
  const values = (await metric?.get())?.values ?? [];
  return values
    .filter((v) => route === undefined || v.labels.route === route)
    .reduce((n, v) => n + v.value, 0);
}

function configFor(dir: string, env: Record<string, string>): Config {
  const loaded = loadConfig({
    env: {
      HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: dir,
      HOOKBOT_IN_DOCKER: '0',
      ...env,
    },
  });
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  loaded.config.pipeline.debounce_ms = 0;
  loaded.config.rules.watch = false;
  return loaded.config;
}

/** A logger whose JSON lines the test can read. */
function collectingLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { log: createLogger({ level: 'info', format: 'json', destination }), lines };
}

describe('the ops routes of a bot with status_auth', () => {
  let sb: Sandbox;
  let runtime: Runtime;
  let metrics: Metrics;
  let dir = '';
  let base = '';
  let projectId = 0;
  const issues: Record<string, { id: number; iid: number }> = {};

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'ops-security-root', hookTimeoutMs: 2_000 });
    const bot = addUser(sb.ctx.db, { username: 'hookbot', private_token: 'ops-security-bot' });
    const group = addGroup(sb.ctx.db, {
      name: 'acme',
      owner_id: 1,
      members: [{ user_id: bot.id, access_level: 40 }],
    });
    projectId = (
      await addProject(sb.ctx, {
        name: 'web',
        namespace_id: group.id,
        creator_id: 1,
        initialFiles: { 'README.md': 'x\n' },
      })
    ).id;
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-ops-security-'));
    writeFileSync(path.join(dir, 'default.yml'), RULES);
    metrics = createMetrics({ defaultMetrics: false });
    runtime = await startRuntime(
      configFor(dir, { HOOKBOT_STATUS_USERNAME: USER, HOOKBOT_STATUS_PASSWORD: PASSWORD }),
      { log: createLogger({ level: 'silent', format: 'json' }), metrics },
      {
        api: { url: sb.url, token: 'ops-security-bot' },
        webhookSecret: SECRET,
        scheduler: false,
        // Long enough that every /readyz of this file shares one check.
        readinessTtlMs: 600_000,
      },
    );
    base = runtime.bot.url;
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    await admin.hooks.create(projectId, { url: runtime.bot.hookUrl, issues_events: true, token: SECRET });
    // Created one after the other: the first's global id is lower than the second's.
    for (const title of [FREEZING_TITLE, '12345'])
      issues[title] = await admin.issues.create(projectId, { title });
    for (const { id } of Object.values(issues))
      await waitFor(
        () => runtime.store.latestDecision(`issue:${projectId}:${id}`),
        20_000,
        `the decision on ${id}`,
      );
    await runtime.bot.pipeline.idle();
  });

  afterAll(async () => {
    await runtime?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('evaluates the title built to make the pattern backtrack like any other, and stays live', async () => {
    const text = (issue: { id: number }) =>
      (runtime.store.latestDecision(`issue:${projectId}:${issue.id}`)?.decision as { text: string }).text;
    expect(text(issues[FREEZING_TITLE]!)).toContain('✗ digits only (');
    expect(text(issues['12345']!)).toContain('✓ digits only (');
    expect((await get(`${base}/healthz`)).status).toBe(200);
  });

  it.each([
    '/status',
    '/status.json',
    '/metrics',
    '/explain/acme%2Fweb/issue/1',
    '/explain/1/issue/1',
    '/elsewhere',
  ])('answers 401 to %s without credentials, and tells nothing', async (route) => {
    const answer = await get(`${base}${route}`);
    expect(answer.status).toBe(401);
    expect(answer.text).toBe('authentication required\n');
  });

  it('answers /healthz and /readyz without credentials, with nothing but the verdict', async () => {
    expect(JSON.parse((await get(`${base}/healthz`)).text)).toEqual({ status: 'ok' });
    const ready = await get(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ status: 'ready' });
  });

  it('reads the API for /readyz at most once per cache period, however often it is asked', async () => {
    await get(`${base}/readyz`);
    const before = await apiCalls(metrics, '/user');
    const answers = await Promise.all(Array.from({ length: 20 }, () => get(`${base}/readyz`)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(await apiCalls(metrics, '/user')).toBe(before);
  });

  it.each(['evil.example', 'evil.example:80', 'localhost.evil.example'])(
    'answers 403 to the ops routes for Host %s, even with credentials',
    async (host) => {
      for (const route of ['/status', '/metrics', `/explain/acme%2Fweb/issue/1`]) {
        const answer = await get(`${base}${route}`, { ...AUTH, host });
        expect(answer.status).toBe(403);
        expect(JSON.parse(answer.text).message).toMatch(/is not allowed: .*server\.allowed_hosts/);
      }
      // Probes are not ops routes: a Kubernetes probe sends the pod's address, a proxy its name.
      expect((await get(`${base}/healthz`, { host })).status).toBe(200);
    },
  );

  it.each(['localhost', `localhost:3000`, 'bot.localhost', '127.0.0.1:3000', '[::1]:3000', '10.1.2.3'])(
    'serves the ops routes for Host %s',
    async (host) => {
      expect((await get(`${base}/metrics`, { ...AUTH, host })).status).toBe(200);
    },
  );

  it('explains the number people see as text, and as JSON when asked', async () => {
    const issue = issues['12345']!;
    const text = await get(`${base}/explain/acme%2Fweb/issue/${issue.iid}`, AUTH);
    expect(text.status).toBe(200);
    expect(text.type).toMatch(/^text\/plain/);
    expect(text.text.split('\n')[0]).toBe(`issue #${issue.iid} in acme/web: "12345" (opened), labels []`);
    const json = await get(`${base}/explain/acme%2Fweb/issue/%23${issue.iid}`, {
      ...AUTH,
      accept: 'application/json',
    });
    expect(json.type).toMatch(/^application\/json/);
    const body = JSON.parse(json.text) as { itemKey: string; lookup: unknown };
    expect(body.itemKey).toBe(`issue:${projectId}:${issue.id}`);
    expect(body.lookup).toEqual({ by: 'iid' });
  });

  it('explains by global id too, saying how it read the number', async () => {
    const issue = issues['12345']!;
    const answer = await get(`${base}/explain/${projectId}/issue/${issue.id}`, {
      ...AUTH,
      accept: 'application/json',
    });
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.text) as { itemKey: string; lookup: { by: string; note: string } };
    expect(body.itemKey).toBe(`issue:${projectId}:${issue.id}`);
    expect(body.lookup.by).toBe(issue.id === issue.iid ? 'iid' : 'id');
  });

  it('answers explain from recorded state: no API call, the same 404 for a project it cannot see', async () => {
    const before = await apiCalls(metrics);
    const routes = [
      '/explain/acme%2Fweb/issue/999',
      '/explain/acme%2Fsecret/issue/1',
      '/explain/nobody%2Fnothing/mr/1',
      '/explain/4242/issue/1',
    ];
    for (let round = 0; round < 5; round++)
      for (const route of routes) {
        const answer = await get(`${base}${route}`, AUTH);
        expect(answer.status).toBe(404);
        expect(JSON.parse(answer.text).message).toMatch(/^no decision recorded for /);
      }
    expect(await apiCalls(metrics)).toBe(before);
  });

  it.each([
    '/explain/%2E/issue/1',
    '/explain/%2e%2E/issue/1',
    '/explain/acme%2F..%2Fweb/issue/1',
    '/explain/.%2Fweb/issue/1',
  ])('refuses the dot segments of %s with 400, before any API call', async (route) => {
    const before = await apiCalls(metrics);
    const answer = await get(`${base}${route}`, AUTH);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text).message).toContain('"." and ".." are not project names');
    expect(await apiCalls(metrics)).toBe(before);
  });

  it('counts deliveries of invented kinds as other: /metrics does not grow with them', async () => {
    for (let n = 0; n < 30; n++) {
      const res = await fetch(runtime.bot.hookUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gitlab-event': 'Made Up Hook',
          'x-gitlab-token': SECRET,
        },
        body: JSON.stringify({ object_kind: `invented-${n}` }),
      });
      expect(res.status).toBeLessThan(500);
    }
    const text = (await get(`${base}/metrics`, AUTH)).text;
    expect(text).not.toContain('invented-');
    expect(text).toMatch(/hookbot_deliveries_total\{kind="other",outcome="[a-z_]+"\} 30/);
  });
});

describe('listening beyond loopback', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-exposure-'));
    writeFileSync(path.join(dir, 'default.yml'), RULES);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses to start without status_auth, saying why and what to set', async () => {
    const config = configFor(dir, { HOOKBOT_HOST: '0.0.0.0' });
    const started = startRuntime(
      config,
      {
        log: createLogger({ level: 'silent', format: 'json' }),
        metrics: createMetrics({ defaultMetrics: false }),
      },
      { api: { url: 'http://127.0.0.1:9', token: 't' }, webhookSecret: SECRET, scheduler: false },
    );
    await expect(started).rejects.toThrow(
      /server\.host is 0\.0\.0\.0, beyond loopback, and server\.status_auth is not set: .*\(HOOKBOT_ALLOW_PUBLIC_OPS=true\)/,
    );
  });

  it('starts when the operator allows it (HOOKBOT_ALLOW_PUBLIC_OPS), and warns', async () => {
    const sb = await startSandbox({ adminToken: 'exposure-root', hookTimeoutMs: 2_000 });
    const { log, lines } = collectingLogger();
    const runtime = await startRuntime(
      configFor(dir, { HOOKBOT_HOST: '0.0.0.0', HOOKBOT_ALLOW_PUBLIC_OPS: 'true', HOOKBOT_API_TOKEN: 'x' }),
      { log, metrics: createMetrics({ defaultMetrics: false }) },
      { api: { url: sb.url, token: sb.adminToken }, webhookSecret: SECRET, scheduler: false },
    );
    try {
      expect(lines.some((line) => line.includes('server.public_ops is true: the status page'))).toBe(true);
      const port = new URL(runtime.bot.url).port;
      expect((await get(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
    } finally {
      await runtime.close();
      await sb.close();
    }
  });

  it('answers "not ready" without the reason, which goes to the log', async () => {
    const sb = await startSandbox({ adminToken: 'readyz-root', hookTimeoutMs: 2_000 });
    const { log, lines } = collectingLogger();
    const config = configFor(dir, {});
    config.api.bot_username = 'hookbot';
    const runtime = await startRuntime(
      config,
      { log, metrics: createMetrics({ defaultMetrics: false }) },
      {
        api: { url: sb.url, token: 'a-token-the-server-does-not-know' },
        webhookSecret: SECRET,
        scheduler: false,
      },
    );
    try {
      const answer = await get(`${runtime.bot.url}/readyz`);
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.text)).toEqual({ status: 'not ready' });
      const logged = await waitFor(() => lines.find((line) => line.includes('"msg":"not ready"')));
      expect(logged).toContain('"check":"api"');
      expect(logged).toContain('401');
    } finally {
      await runtime.close();
      await sb.close();
    }
  });
});
