/**
 * `hookbot serve` as a replica on PostgreSQL whose connection dies silently (issue 28, item 7): the
 * review cut the path to the database while accept batches were in flight, and afterwards deliveries
 * timed out, `/readyz` said 200 and SIGTERM did not stop the process. Here the replica talks to the
 * real server through a TCP proxy that can stop forwarding in both directions without closing a
 * socket (test/helpers/fault-proxy.ts, `startTcpFaultProxy`), and to the sandbox through the HTTP
 * fault proxy (to hold one item run on the API).
 *
 * The bounds are configured short (state.database_*: 1-2 s, server.shutdown_timeout_ms 1.5 s,
 * state.lease_ms 3 s) so the test takes seconds rather than the defaults' minutes; what it asserts is
 * that an answer, a readiness change and an exit come at all, before a limit a real server or an
 * orchestrator would apply (a delivery: 10 s), where before the fix none ever came.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  startFaultProxy,
  startTcpFaultProxy,
  type FaultProxy,
  type TcpFaultProxy,
} from '../../helpers/fault-proxy.ts';
import { adminQuery, postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../../helpers/postgres.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { startBotProcess, type BotProcess } from '../../reliability/bot-process.ts';
import { goodHeaders, issuePayload, send } from '../../reliability/deliveries.ts';
import {
  botEnv,
  DELIVERY_ONLY_CONFIG,
  freePort,
  makeSecret,
  writeConfig,
} from '../../reliability/harness.ts';
import { COMMENT_RULE, createWorld, writeRules, type World } from '../../reliability/world.ts';

const schema = useTestSchemas();

/** What a real server waits for a hook's answer before it gives up on it. */
const SERVER_WAITS_MS = 10_000;

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
  cleanup = [];
});

async function readyz(baseUrl: string): Promise<number | undefined> {
  try {
    return (await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(SERVER_WAITS_MS) })).status;
  } catch {
    return undefined;
  }
}

describe.skipIf(!postgresAvailable)('a replica whose database connection dies silently', () => {
  it('answers deliveries 503 in time, is not ready, recovers once healed, and stops within its bound keeping what it accepted', async () => {
    const world: World = await createWorld({ botToken: makeSecret('api-token'), label: 'pg-black-hole' });
    cleanup.push(() => world.close());
    const issues = world.addIssues(3);
    const api: FaultProxy = await startFaultProxy(world.sandbox.url);
    cleanup.push(() => api.close());
    const target = new URL(TEST_DATABASE_URL);
    const db: TcpFaultProxy = await startTcpFaultProxy({
      host: target.hostname,
      port: Number(target.port || 5432),
    });
    cleanup.push(async () => {
      db.heal();
      await db.close();
    });
    const name = schema();
    const secret = makeSecret('hook-secret');
    const rulesDir = writeRules(world.dir, { 'default.yml': COMMENT_RULE });
    const configFile = writeConfig(
      world.dir,
      'config.yml',
      [
        DELIVERY_ONLY_CONFIG,
        'server:',
        '  shutdown_timeout_ms: 1500',
        'state:',
        `  database_schema: ${name}`,
        '  lease_ms: 3000',
        '  database_connect_timeout_ms: 1000',
        '  database_statement_timeout_ms: 1500',
        '  database_query_timeout_ms: 2000',
        '  database_accept_timeout_ms: 1000',
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const env = (databaseUrl: string) => ({
      ...botEnv({
        world,
        secret,
        rulesDir,
        statePath: `${world.dir}/unused/hookbot.json`,
        port,
        configFile,
        logLevel: 'info',
        apiUrl: api.url,
      }),
      HOOKBOT_DATABASE_URL: databaseUrl,
    });
    const deliver = (n: number) =>
      send(
        `http://127.0.0.1:${port}/hooks`,
        {
          body: issuePayload({ id: issues[n]!, iid: n + 1, projectId: world.projectId }),
          headers: goodHeaders(secret),
        },
        undefined,
        SERVER_WAITS_MS,
      );
    const commented = (n: number) =>
      waitFor(
        () => (world.botComments().has(issues[n]!) ? true : undefined),
        30_000,
        `a comment on issue ${n}`,
      );

    const bot: BotProcess = await startBotProcess(
      { env: env(db.through(TEST_DATABASE_URL)) },
      'pg black hole',
    );
    cleanup.push(() => bot.kill9());
    await waitFor(async () => ((await readyz(bot.baseUrl)) === 200 ? true : undefined), 30_000, 'ready');
    expect(await deliver(0)).toMatchObject({ kind: 'answer', status: 202 });
    await commented(0);

    // A partition: nothing goes through, nothing is closed.
    db.blackHole();
    const refused = await deliver(1);
    expect(refused).toMatchObject({ kind: 'answer', status: 503 });
    await waitFor(async () => ((await readyz(bot.baseUrl)) === 503 ? true : undefined), 30_000, 'not ready');

    // Healed: ready again and deliveries accepted, without a restart.
    db.heal();
    await waitFor(
      async () => ((await readyz(bot.baseUrl)) === 200 ? true : undefined),
      30_000,
      'ready again',
    );
    await waitFor(
      async () => {
        const outcome = await deliver(1);
        return outcome.kind === 'answer' && outcome.status === 202 ? outcome : undefined;
      },
      30_000,
      'a delivery accepted again',
    );
    await commented(1);

    // An accepted delivery whose item run hangs on the API, a partition, then SIGTERM.
    const held = new RegExp(`^/api/v3/projects/${world.projectId}/issues/${issues[2]}(\\?|$)`);
    api.decide = ({ method, path }) =>
      method === 'GET' && held.test(path) ? 'forward-then-hang' : undefined;
    expect(await deliver(2)).toMatchObject({ kind: 'answer', status: 202 });
    await waitFor(
      () => (api.arrived('GET', held) > 0 ? true : undefined),
      30_000,
      'the item run to be under way',
    );
    // Everything else done (the earlier deliveries' processed marks committed): one row left.
    const inboxRows = async () =>
      ((await adminQuery(`SELECT count(*)::int AS n FROM "${name}".hookbot_inbox`)).rows[0] as { n: number })
        .n;
    await waitFor(
      async () => ((await inboxRows()) === 1 ? true : undefined),
      30_000,
      'one delivery left in the inbox',
    );
    db.blackHole();
    bot.child.kill('SIGTERM');
    const exit = await Promise.race([
      bot.exited,
      new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 20_000).unref()),
    ]);
    expect(exit, bot.output().slice(-3000)).toEqual({ code: 0, signal: null });
    // It says what it abandoned, and that the database's connections were given up.
    expect(bot.output()).toMatch(/running work did not finish within server\.shutdown_timeout_ms/);
    expect(bot.output()).toMatch(/"deliveriesUnprocessed":1/);
    expect(bot.output()).toMatch(/state database did not finish within the stop bound/);

    // Nothing accepted is lost: the delivery is still in the inbox, and the next start processes it.
    db.heal();
    api.decide = () => undefined;
    expect(await inboxRows()).toBe(1);
    expect(world.botComments().has(issues[2]!)).toBe(false);
    const next = await startBotProcess({ env: env(TEST_DATABASE_URL) }, 'pg black hole, next start');
    cleanup.push(() => next.stop().then(() => undefined));
    await commented(2);
  }, 180_000);
});
