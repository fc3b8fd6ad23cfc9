/**
 * `hookbot explain` through `main()`: a bot runs in-process against the sandbox (demo seed) with the
 * example rules and records a real decision; explain asks it over HTTP (`--bot`), refuses its state
 * file while it holds it, and reads the file once it has stopped (`--state`), leaving it untouched.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

const SECRET = 'explain-hook-secret';

async function explain(args: string[]) {
  const io = { out: '', err: '' };
  const code = await main(['explain', ...args], {
    out: (t) => void (io.out += t),
    err: (t) => void (io.err += t),
  });
  return { code, ...io };
}

async function waitFor<T>(probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A loopback port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Every file of the state folder with its contents. */
function snapshotFolder(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((name) => [name, readFileSync(path.join(dir, name), 'utf8')]),
  );
}

describe('hookbot explain', () => {
  let sb: Sandbox;
  let runtime: Runtime | undefined;
  let dir = '';
  let stateFile = '';
  let projectId = 0;
  let issue = { id: 0, iid: 0 };
  /** The decision the bot recorded, as the store holds it. */
  let recorded: { text: string; evaluation: { item: { labels: string[] } } };
  /** The same, with its id and time: the whole answer derives from it (one decision kept). */
  let record: DecisionRecord;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'explain-root-token', hookTimeoutMs: 2_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-explain-'));
    stateFile = path.join(dir, 'state', 'hookbot.json');
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: stateFile,
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: 'test/fixtures/rules/example',
        HOOKBOT_IN_DOCKER: '0',
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
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
    record = await waitFor(() => runtime!.store.latestDecision(`issue:${projectId}:${issue.id}`));
    await runtime.bot.pipeline.idle();
    recorded = record.decision as typeof recorded;
  });

  afterEach(() => {
    vi.unstubAllEnvs();
  });
  afterAll(async () => {
    await runtime?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('with --bot, from a running bot', () => {
    it('prints the decision the bot recorded: verdicts, plan and what became of each call', async () => {
      const result = await explain(['acme/web', 'issue', String(issue.iid), '--bot', runtime!.bot.url]);
      expect(result).toEqual({ code: 0, out: `${recorded.text}\n`, err: '' });
      const lines = result.out.split('\n');
      expect(lines[0]).toBe(`issue #${issue.iid} in acme/web: "Crash on save" (opened), labels [ui]`);
      expect(lines).toContain('✓ triage bug reports (test/fixtures/rules/example/default.yml:3): matched');
      expect(lines).toContain('    ✓ labels include none of [bug]: [ui]');
      expect(lines).toContain('execution:');
      expect(lines.filter((line) => /^ {2}\d\. done: /.test(line))).toHaveLength(2);
    });

    it('prints the whole decision with --json', async () => {
      const result = await explain([
        'acme/web',
        'issue',
        `#${issue.iid}`,
        '--bot',
        runtime!.bot.url,
        '--json',
      ]);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.out)).toEqual({ ...answerOfOne(record), lookup: { by: 'iid' } });
    });

    it('takes the project id as well as its path', async () => {
      const result = await explain([
        String(projectId),
        'issue',
        String(issue.iid),
        '--bot',
        runtime!.bot.url,
      ]);
      expect(result).toEqual({ code: 0, out: `${recorded.text}\n`, err: '' });
    });

    it('takes the global id too, and says how it read the number', async () => {
      const result = await explain(['acme/web', 'issue', String(issue.id), '--bot', runtime!.bot.url]);
      expect(result).toEqual({
        code: 0,
        out: `${recorded.text}\n`,
        err: `hookbot explain: ${issue.id} is read as the global id (no decision is recorded for #${issue.id}): this is #${issue.iid}\n`,
      });
    });

    it('uses $HOOKBOT_BOT_URL when --bot has no URL', async () => {
      vi.stubEnv('HOOKBOT_BOT_URL', `${runtime!.bot.url}/`);
      const result = await explain(['acme/web', 'issue', String(issue.iid), '--bot']);
      expect(result).toEqual({ code: 0, out: `${recorded.text}\n`, err: '' });
    });

    it.each([
      {
        name: 'an item without a decision',
        args: () => ['acme/web', 'issue', '2'],
        message:
          'no decision recorded for issue 2 of acme/web yet (the bot records one each time it evaluates the item)',
      },
      {
        name: 'a merge request without a decision',
        args: () => ['acme/web', 'mr', '1'],
        message:
          'no decision recorded for merge request 1 of acme/web yet (the bot records one each time it evaluates the item)',
      },
      {
        name: 'a project without decisions (the bot asks no server: known or not, the answer is the same)',
        args: () => ['acme/nothing', 'issue', '1'],
        message:
          'no decision recorded for issue 1 of acme/nothing yet (the bot records one each time it evaluates the item)',
      },
    ])('exits 1 on $name', async ({ args, message }) => {
      const result = await explain([...args(), '--bot', runtime!.bot.url]);
      expect(result.code).toBe(1);
      expect(result.out).toBe('');
      expect(result.err).toBe(`hookbot explain: ${message}\n`);
    });

    it('exits 1 when no bot answers', async () => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      const result = await explain(['acme/web', 'issue', String(issue.id), `--bot=${url}`]);
      expect(result.code).toBe(1);
      expect(result.err).toContain(`hookbot explain: no bot answers at ${url} (`);
      expect(result.err).toContain('Without --bot, explain reads the state file.');
    });

    it('refuses the state file while the bot holds it, and says to ask the bot', async () => {
      const before = snapshotFolder(path.dirname(stateFile));
      const result = await explain(['acme/web', 'issue', String(issue.id), '--state', stateFile]);
      expect(result.code).toBe(1);
      expect(result.err).toBe(
        `hookbot explain: ${stateFile} is in use by process ${process.pid} (a running bot): the state file has one writer, and opening it from a second process could damage it. Ask the bot instead: hookbot explain acme/web issue ${issue.id} --bot [URL]\n`,
      );
      expect(snapshotFolder(path.dirname(stateFile))).toEqual(before);
    });
  });

  describe('with --state, from the state file of a stopped bot', () => {
    beforeAll(async () => {
      await runtime!.close();
    });

    it('prints the decision, and leaves every file of the state as it was', async () => {
      const before = snapshotFolder(path.dirname(stateFile));
      const result = await explain(['acme/web', 'issue', String(issue.iid), '--state', stateFile]);
      expect(result).toEqual({ code: 0, out: `${recorded.text}\n`, err: '' });
      expect(snapshotFolder(path.dirname(stateFile))).toEqual(before);
    });

    it('reads $HOOKBOT_STATE when --state is not given, by project id, as JSON', async () => {
      vi.stubEnv('HOOKBOT_STATE', stateFile);
      const result = await explain([String(projectId), 'issue', `#${issue.iid}`, '--json']);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.out)).toEqual(answerOfOne(record));
    });

    it.each([
      {
        name: 'an item of a known project without a decision',
        args: () => ['acme/web', 'issue', '2'],
        message: () => `no decision recorded for issue 2 of acme/web in ${stateFile}`,
      },
      {
        name: 'a project path the file has no decision for',
        args: () => ['acme/helpdesk', 'issue', '4'],
        message: () => `no decision recorded for issue 4 of acme/helpdesk in ${stateFile}`,
      },
      {
        name: 'a missing state file',
        args: () => ['acme/web', 'issue', '1', '--state', path.join(dir, 'none.json')],
        message: () =>
          `no state file at ${path.join(dir, 'none.json')}: pass the bot's with --state FILE, or ask a running bot with --bot [URL]`,
      },
    ])('exits 1 on $name', async ({ args, message }) => {
      vi.stubEnv('HOOKBOT_STATE', stateFile);
      const result = await explain(args());
      expect(result.code).toBe(1);
      expect(result.err).toBe(`hookbot explain: ${message()}\n`);
    });
  });

  it.each([
    {
      args: ['acme', 'issue', '1'],
      message: 'PROJECT must be namespace/project (e.g. acme/web) or a project id',
    },
    { args: ['acme/web', 'pr', '1'], message: 'the kind must be issue or mr (got "pr")' },
    { args: ['acme/web', 'issue', '0'], message: 'NUMBER must be a positive number, e.g. 4 or #4 (got "0")' },
    {
      args: ['acme/web', 'issue', '#x'],
      message: 'NUMBER must be a positive number, e.g. 4 or #4 (got "#x")',
    },
    {
      args: ['acme/..', 'issue', '1'],
      message: '"acme/.." is not a project: "." and ".." are not project names',
    },
    {
      args: ['acme/web', 'issue', '1', '--bot', 'http://127.0.0.1:1', '--state', 'x.json'],
      message: 'give one of --bot (ask a running bot), --state (read its state file) or --database',
    },
    { args: ['acme/web', 'issue', '1', '--bot=localhost:3000'], message: "--bot takes the bot's URL" },
    { args: ['acme/web', 'issue'], message: "missing required argument 'number'" },
  ])('exits 2 on $args', async ({ args, message }) => {
    const result = await explain(args);
    expect(result.code).toBe(2);
    expect(result.err).toContain(message);
  });
});
