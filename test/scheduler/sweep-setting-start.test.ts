/**
 * The case, with the bot as it runs: `hooks.manage: true` turned on after a first start.
 * The first start (hooks.manage off) runs the hook check, which stores its next run an hour away;
 * the second start, with hooks.manage on, must install the hook at once instead of keeping that
 * schedule. The bot runs in-process (startRuntime, as `hookbot serve` starts it) against the
 * sandbox over HTTP, with its state in a file, stopped and started again on it.
 *
 * Settings, each because the test needs it: `HOOKBOT_PORT=0` (other tests run at once; any free
 * port); `HOOKBOT_IN_DOCKER=0` (the test machine may be a container: nothing here is about that).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { waitFor } from '../helpers/wait-for.ts';

const sandbox = useSandbox();

let dir = '';
let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a sweep whose setting changed runs at start', () => {
  it('hooks.manage turned on after a first start: the second start installs the hook at once', async () => {
    const { sb } = sandbox();
    const bot = addUser(sb.ctx.db, { username: 'hookbot-setting', private_token: 'setting-bot-token' });
    const group = addGroup(sb.ctx.db, {
      name: 'setting',
      owner_id: 1,
      members: [{ user_id: bot.id, access_level: 40 }],
    });
    await addProject(sb.ctx, { name: 'web', namespace_id: group.id, creator_id: 1 });
    dir = await mkdtemp(join(tmpdir(), 'hookbot-sweep-setting-'));
    await writeFile(join(dir, 'default.yml'), 'rules: []\n');
    const hookUrl = 'http://bot.example.com:3100/hooks';
    const start = async (manage: boolean): Promise<Runtime> => {
      const loaded = loadConfig({
        env: {
          HOOKBOT_API_URL: sb.url,
          HOOKBOT_API_TOKEN: 'setting-bot-token',
          HOOKBOT_WEBHOOK_SECRET: 'setting-secret',
          HOOKBOT_PORT: '0',
          HOOKBOT_RULES: dir,
          HOOKBOT_STATE: join(dir, 'state', 'hookbot.json'),
          HOOKBOT_IN_DOCKER: '0',
        },
        cwd: dir,
        readFile: (path) => (path.endsWith('hookbot.yml') ? config(manage) : ''),
        file: 'hookbot.yml',
      });
      if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
      return startRuntime(loaded.config, {
        log: createLogger({ level: 'silent', format: 'json' }),
        metrics: createMetrics(),
      });
    };
    const config = (manage: boolean) =>
      ['hooks:', `  manage: ${manage}`, `  url: ${hookUrl}`, '  projects: [setting/web]', ''].join('\n');
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    const hooks = async () => {
      const found = [];
      for await (const hook of admin.hooks.list('setting/web')) found.push(hook.url);
      return found;
    };

    // First start, hooks.manage off: the hook check runs (and reports the hook missing).
    runtime = await start(false);
    const first = runtime;
    const next = await waitFor(() => first.store.nextRun('hook_check'), 20_000, 'the hook check');
    expect(next).toBeGreaterThan(Date.now() + 50 * 60_000);
    await first.close();
    runtime = undefined;
    expect(await hooks()).toEqual([]);

    // Second start, hooks.manage on: the hook is there within seconds, not an hour later.
    runtime = await start(true);
    await waitFor(async () => ((await hooks()).includes(hookUrl) ? true : undefined), 20_000, 'the hook');
    expect(await hooks()).toEqual([hookUrl]);
  }, 60_000);
});
