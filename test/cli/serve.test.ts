/**
 * `hookbot serve` as a process against the sandbox: it prints where it receives hooks, a rule acts on
 * an issue opened in the sandbox, SIGTERM stops it with exit 0; a bad configuration lists every problem.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import { createClient } from '../../src/api/client.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';

const SECRET = 'serve-test-secret';

function runServe(
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['bin/hookbot.js', 'serve', ...args], {
    env: { ...process.env, HOOKBOT_IN_DOCKER: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout!.on('data', (c: Buffer) => (text += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (text += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
}

describe('hookbot serve', () => {
  let sb: Sandbox;
  let dir = '';
  let projectId = 0;

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'serve-root-token', hookTimeoutMs: 2_000 });
    const bot = addUser(sb.ctx.db, { username: 'hookbot', private_token: 'serve-bot-token' });
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
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-serve-'));
    writeFileSync(
      path.join(dir, 'default.yml'),
      [
        'rules:',
        '  - name: triage bugs',
        '    on: [issue.open]',
        "    if: [ { title: { matches: '(?i)crash' } } ]",
        '    do: [ { label: { add: [bug] } } ]',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('receives hooks, acts through the API, and stops cleanly on SIGTERM', async () => {
    const serve = runServe([], {
      HOOKBOT_API_URL: sb.url,
      HOOKBOT_API_TOKEN: 'serve-bot-token',
      HOOKBOT_WEBHOOK_SECRET: SECRET,
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: dir,
      HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
      HOOKBOT_LOG_LEVEL: 'warn',
    });
    try {
      const hookUrl = await waitFor(() => /(http:\/\/127\.0\.0\.1:\d+\/hooks)/.exec(serve.output())?.[1]);
      const admin = createClient({ baseUrl: sb.url, token: 'serve-root-token' });
      await admin.hooks.create(projectId, {
        url: hookUrl,
        issues_events: true,
        note_events: true,
        token: SECRET,
      });
      const issue = await admin.issues.create(projectId, { title: 'It crashes on start' });
      const labelled = await waitFor(async () => {
        const fresh = await admin.issues.get(projectId, issue.id);
        return fresh.labels.includes('bug') ? fresh : undefined;
      });
      expect(labelled.labels).toEqual(['bug']);
      const ready = await fetch(hookUrl.replace('/hooks', '/readyz'));
      expect(ready.status).toBe(200);
      // The decision (and its counts) is recorded once every call of the plan has finished.
      const metrics = await waitFor(async () => {
        const text = await (await fetch(hookUrl.replace('/hooks', '/metrics'))).text();
        return text.includes('hookbot_rule_matches_total{rule="triage bugs"}') ? text : undefined;
      });
      expect(metrics).toMatch(/hookbot_deliveries_total\{kind="issue",outcome="accepted"\} [1-9]/);
      // Matched at least once. Not exactly once: the reconcile sweep that serve runs at start may
      // list the issue too on a slow machine and evaluate it again (it matches, and plans nothing
      // since the label is there). The effect is what must happen once: one label write, below.
      expect(metrics).toMatch(/hookbot_rule_matches_total\{rule="triage bugs"\} [1-9]/);
      // The delivery was made durable by a group commit of the store, timed.
      expect(metrics).toMatch(/hookbot_state_commit_seconds_count [1-9]/);
      expect(metrics).toMatch(
        /hookbot_api_calls_total\{method="PUT",route="\/projects\/:id\/issues\/:issue_id",status="200"\} 1/,
      );
      // The number people see (#1), as text for a terminal and as JSON when asked for.
      const explainUrl = hookUrl.replace('/hooks', `/explain/acme%2Fweb/issue/${issue.iid}`);
      const explained = await fetch(explainUrl);
      expect(explained.status).toBe(200);
      expect(explained.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await explained.text()).toContain('triage bugs');
      const asJson = await fetch(explainUrl, { headers: { accept: 'application/json' } });
      expect(((await asJson.json()) as { text: string }).text).toContain('triage bugs');
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect(await serve.exited).toBe(0);
  });

  it('on every address, prints a hook URL a server can reach (not 0.0.0.0) and what to do next', async () => {
    const serve = runServe([], {
      HOOKBOT_API_URL: sb.url,
      HOOKBOT_API_TOKEN: 'serve-bot-token',
      HOOKBOT_WEBHOOK_SECRET: SECRET,
      HOOKBOT_HOST: '0.0.0.0',
      // Listening beyond loopback without status auth needs the operator's explicit yes.
      HOOKBOT_ALLOW_PUBLIC_OPS: 'true',
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: dir,
      HOOKBOT_STATE: path.join(dir, 'state-any', 'hookbot.json'),
      HOOKBOT_LOG_LEVEL: 'warn',
    });
    try {
      const hookUrl = await waitFor(() => /receiving hooks at (\S+)/.exec(serve.output())?.[1]);
      expect(hookUrl).not.toContain('0.0.0.0');
      expect(hookUrl).toMatch(/^http:\/\/[^/]+:\d+\/hooks$/);
      await waitFor(() => (serve.output().includes(`next: add ${hookUrl} as a web hook`) ? true : undefined));
      expect(serve.output()).toContain('listening on every address');
      // The address printed reaches the bot.
      expect((await fetch(hookUrl.replace(/\/hooks$/, '/healthz'))).status).toBe(200);
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect(await serve.exited).toBe(0);
  });

  it('warns at start of a merge train in force without git credentials, and says what to configure (issue 37)', async () => {
    const rules = mkdtempSync(path.join(tmpdir(), 'hookbot-serve-train-'));
    writeFileSync(
      path.join(rules, 'default.yml'),
      'rules:\n  - name: train\n    on: [merge_request.update]\n    for: merge_requests\n    do: [ { queue: { statuses: [ci/test], batch: 2 } } ]\n',
    );
    const serve = runServe([], {
      HOOKBOT_API_URL: sb.url,
      HOOKBOT_API_TOKEN: 'serve-bot-token',
      HOOKBOT_WEBHOOK_SECRET: SECRET,
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: rules,
      HOOKBOT_STATE: path.join(rules, 'state', 'hookbot.json'),
      HOOKBOT_LOG_LEVEL: 'warn',
    });
    try {
      await waitFor(() =>
        serve.output().includes('docs/merge-queue.md#git-credentials') ? true : undefined,
      );
      expect(serve.output()).toContain(
        '  warning: no git credentials are configured, and the rules in force have a merge train',
      );
      expect(serve.output()).toContain(
        `    ${path.join(rules, 'default.yml')}:5:11: rule "train" queues in "default" with depth 1, batch 2`,
      );
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect(await serve.exited).toBe(0);
  });

  it('refuses to start on rules with problems, listing them', async () => {
    const rules = mkdtempSync(path.join(tmpdir(), 'hookbot-serve-rules-'));
    writeFileSync(
      path.join(rules, 'default.yml'),
      'rules:\n  - name: typo\n    on: [issue.opne]\n    do: [close]\n',
    );
    const state = path.join(rules, 'state', 'hookbot.json');
    const serve = runServe([], {
      HOOKBOT_API_URL: sb.url,
      HOOKBOT_API_TOKEN: 'serve-bot-token',
      HOOKBOT_WEBHOOK_SECRET: SECRET,
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: rules,
      HOOKBOT_STATE: state,
      HOOKBOT_LOG_LEVEL: 'warn',
    });
    expect(await serve.exited).toBe(1);
    expect(serve.output()).toMatch(/could not start: the rules in .* have problems/);
    expect(serve.output()).toMatch(/default\.yml:3:\d+: .*issue\.opne/);
  });

  it('refuses to listen beyond loopback without status_auth, saying why, before opening the state', async () => {
    const state = path.join(dir, 'public', 'hookbot.json');
    const serve = runServe([], {
      HOOKBOT_API_URL: sb.url,
      HOOKBOT_API_TOKEN: 'serve-bot-token',
      HOOKBOT_WEBHOOK_SECRET: SECRET,
      HOOKBOT_HOST: '0.0.0.0',
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: dir,
      HOOKBOT_STATE: state,
      HOOKBOT_LOG_LEVEL: 'warn',
    });
    expect(await serve.exited).toBe(1);
    expect(serve.output()).toContain(
      'hookbot serve: could not start: server.host is 0.0.0.0, beyond loopback, and server.status_auth is not set',
    );
    expect(serve.output()).toContain('HOOKBOT_ALLOW_PUBLIC_OPS=true');
    expect(existsSync(path.dirname(state))).toBe(false);
  });

  it('in a container (a /.dockerenv-like file), the default every-interface address keeps the guard, and the refusal names the detection and the variables that change it', async () => {
    const marker = path.join(dir, 'dockerenv');
    writeFileSync(marker, '');
    const state = path.join(dir, 'container', 'hookbot.json');
    const serve = runServe([], {
      // The container signal as a file, as /.dockerenv is: HOOKBOT_IN_DOCKER unset (empty).
      HOOKBOT_IN_DOCKER: '',
      HOOKBOT_CONTAINER_FILE: marker,
      HOOKBOT_API_URL: sb.url,
      HOOKBOT_API_TOKEN: 'serve-bot-token',
      HOOKBOT_WEBHOOK_SECRET: SECRET,
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: dir,
      HOOKBOT_STATE: state,
      HOOKBOT_LOG_LEVEL: 'warn',
    });
    expect(await serve.exited).toBe(1);
    const out = serve.output();
    expect(out).toContain(
      'hookbot serve: could not start: server.host is 0.0.0.0, beyond loopback, and server.status_auth is not set',
    );
    expect(out).toContain(`It is 0.0.0.0 because hookbot runs in a container (${marker} exists;`);
    expect(out).toContain('HOOKBOT_IN_DOCKER=0');
    expect(out).toContain('HOOKBOT_HOST=127.0.0.1');
    expect(out).toContain('HOOKBOT_STATUS_USERNAME and HOOKBOT_STATUS_PASSWORD');
    expect(out).toContain('HOOKBOT_ALLOW_PUBLIC_OPS=true');
    expect(existsSync(path.dirname(state))).toBe(false);
  });

  it('names the variable that set a public address', async () => {
    const serve = runServe([], {
      HOOKBOT_API_URL: sb.url,
      HOOKBOT_API_TOKEN: 'serve-bot-token',
      HOOKBOT_WEBHOOK_SECRET: SECRET,
      HOOKBOT_HOST: '0.0.0.0',
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: dir,
      HOOKBOT_STATE: path.join(dir, 'named', 'hookbot.json'),
    });
    expect(await serve.exited).toBe(1);
    expect(serve.output()).toContain('It is 0.0.0.0 because HOOKBOT_HOST sets it.');
  });

  it('refuses a bad configuration with every problem listed', async () => {
    const file = path.join(dir, 'bad.yml');
    writeFileSync(file, ['api:', '  url: not a url', 'server:', '  port: 99999', 'sever: {}', ''].join('\n'));
    const serve = runServe(['--config', file], {});
    expect(await serve.exited).toBe(1);
    const out = serve.output();
    expect(out).toContain('server.port');
    expect(out).toContain('api.url');
    expect(out).toContain('sever');
  });
});
