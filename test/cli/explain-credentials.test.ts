/**
 * `hookbot explain --bot` against a bot with `server.status_auth`: the credentials are read as the
 * bot reads them, from the configuration file HOOKBOT_CONFIG names (its password_file too), the
 * environment winning, the URL's first of all. A bot runs in-process on the sandbox with its
 * credentials in a file; explain asks it for an item the bot has recorded nothing on, so a bot that
 * took the credentials answers "no decision recorded", and one that did not answers 401.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';

async function explain(args: string[]) {
  const io = { out: '', err: '' };
  const code = await main(['explain', ...args], {
    out: (t) => void (io.out += t),
    err: (t) => void (io.err += t),
  });
  return { code, ...io };
}

const NO_DECISION =
  'hookbot explain: no decision recorded for issue 1 of acme/web yet (the bot records one each time it evaluates the item)\n';

describe('hookbot explain --bot: the status credentials of the configuration', () => {
  let sb: Sandbox;
  let runtime: Runtime | undefined;
  let dir = '';
  let configFile = '';

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo' });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-explain-auth-'));
    writeFileSync(path.join(dir, 'status-password'), 's3cret-status\n');
    // The bot's configuration as an operator writes it: the API token and the hook secret live in
    // the bot's environment (not explain's), the status password in a file beside it.
    configFile = path.join(dir, 'hookbot.yml');
    writeFileSync(
      configFile,
      [
        'api:',
        `  url: ${sb.url}`,
        'server:',
        '  status_auth:',
        '    username: ops',
        `    password_file: ${path.join(dir, 'status-password')}`,
        '',
      ].join('\n'),
    );
    const loaded = loadConfig({
      file: configFile,
      env: {
        HOOKBOT_API_TOKEN: DEMO_TOKENS.hookbot,
        HOOKBOT_WEBHOOK_SECRET: 'explain-auth-secret',
        HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: 'test/fixtures/rules/example',
        HOOKBOT_IN_DOCKER: '0',
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    loaded.config.rules.watch = false;
    runtime = await startRuntime(
      loaded.config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics: createMetrics() },
      { scheduler: false },
    );
  });

  afterEach(() => {
    vi.unstubAllEnvs();
  });
  afterAll(async () => {
    await runtime?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads them from the file HOOKBOT_CONFIG names, the password from its password_file', async () => {
    vi.stubEnv('HOOKBOT_CONFIG', configFile);
    const result = await explain(['acme/web', 'issue', '1', '--bot', runtime!.bot.url]);
    expect(result).toEqual({ code: 1, out: '', err: NO_DECISION });
  });

  it('without them, the bot asks for them, and explain says where they may come from', async () => {
    vi.stubEnv('HOOKBOT_CONFIG', '');
    const result = await explain(['acme/web', 'issue', '1', '--bot', runtime!.bot.url]);
    expect(result.code).toBe(1);
    expect(result.err).toContain("asks for the status page's credentials (server.status_auth)");
    expect(result.err).toContain("set HOOKBOT_CONFIG to the bot's configuration file");
  });

  it('the environment wins over the file, and credentials refused say where they came from', async () => {
    vi.stubEnv('HOOKBOT_CONFIG', configFile);
    vi.stubEnv('HOOKBOT_STATUS_PASSWORD', 'not-the-password');
    const result = await explain(['acme/web', 'issue', '1', '--bot', runtime!.bot.url]);
    expect(result.code).toBe(1);
    expect(result.err).toBe(
      `hookbot explain: ${runtime!.bot.url} refused the status page's credentials from ${configFile}:5:15 (username) and environment variable HOOKBOT_STATUS_PASSWORD (password) (server.status_auth): are they the bot's?\n`,
    );
  });

  it("the URL's credentials come first", async () => {
    vi.stubEnv('HOOKBOT_CONFIG', configFile);
    const url = runtime!.bot.url.replace('http://', 'http://ops:s3cret-status@');
    vi.stubEnv('HOOKBOT_STATUS_PASSWORD', 'not-the-password');
    const result = await explain(['acme/web', 'issue', '1', '--bot', url]);
    expect(result).toEqual({ code: 1, out: '', err: NO_DECISION });
  });

  it('a configuration that cannot be read is said when the bot asks for credentials', async () => {
    vi.stubEnv('HOOKBOT_CONFIG', path.join(dir, 'missing.yml'));
    const result = await explain(['acme/web', 'issue', '1', '--bot', runtime!.bot.url]);
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      `the configuration ${path.join(dir, 'missing.yml')} (HOOKBOT_CONFIG) could not be read`,
    );
  });
});
