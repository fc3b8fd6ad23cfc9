/**
 * A backlog of large deliveries on the Docker image's heap. The bot runs with the image's
 * NODE_OPTIONS (`--max-old-space-size=256`); the server goes away (every API call answered 503) and
 * ~950 KB push deliveries arrive, 16 at a time, until the inbox refuses one for its bytes (503 with the reason and
 * Retry-After). The bot must stay up throughout, and, restarted with the server back, process the
 * whole backlog. Before issue 15 it died with "Reached heap limit" after 65 such deliveries, and again
 * within a second of every restart.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { startBotProcess, waitFor, type BotProcess } from './bot-process.ts';
import { keepAliveAgent, send } from './deliveries.ts';
import {
  botEnv,
  DELIVERY_ONLY_CONFIG,
  freePort,
  isIdle,
  makeSecret,
  readStatus,
  writeConfig,
} from './harness.ts';
import { Expectations, notableLines, type ScenarioResult } from './report.ts';
import type { Sizes } from './sizes.ts';
import { COMMENT_RULE, createWorld, writeRules } from './world.ts';

/** The Dockerfile's NODE_OPTIONS. */
const IMAGE_NODE_OPTIONS = '--max-semi-space-size=4 --max-old-space-size=256';
/** Commits per push: about 900 KB a delivery, under the 1 MiB body limit. */
const COMMITS = 1_900;
/** Deliveries in flight at once: a burst, each one parsed and waiting for its fdatasync together. */
const SENDERS = 16;

function pushPayload(n: number, projectId: number): string {
  const base = JSON.parse(
    readFileSync(new URL('../fixtures/hooks/push.json', import.meta.url), 'utf8'),
  ) as Record<string, unknown> & { commits: Record<string, unknown>[] };
  const commit = base.commits[0]!;
  return JSON.stringify({
    ...base,
    project_id: projectId,
    ref: `refs/heads/backlog-${n}`,
    after: n.toString(16).padStart(40, '0'),
    total_commits_count: COMMITS,
    commits: Array.from({ length: COMMITS }, (_, i) => ({
      ...commit,
      id: `${n.toString(16).padStart(8, '0')}${i.toString(16).padStart(32, '0')}`,
      message: `change ${i} of push ${n}: ${'lorem ipsum '.repeat(12)}`,
      added: [`src/file-${i}.ts`],
    })),
  });
}

export async function backlogScenario(sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const secret = makeSecret('hook-secret');
  const world = await createWorld({ botToken: makeSecret('api-token'), label: 'backlog' });
  const proxy = await startFaultProxy(world.sandbox.url);
  const agent = keepAliveAgent(SENDERS);
  let bot: BotProcess | undefined;
  let crashes = 0;
  const figures: Record<string, number | string> = {};
  try {
    const env = {
      ...botEnv({
        world,
        secret,
        rulesDir: writeRules(world.dir, { 'default.yml': COMMENT_RULE }),
        statePath: path.join(world.dir, 'state', 'hookbot.json'),
        port: await freePort(),
        configFile: writeConfig(world.dir, 'config.yml', DELIVERY_ONLY_CONFIG),
        apiUrl: proxy.url,
        logLevel: 'info',
      }),
      NODE_OPTIONS: IMAGE_NODE_OPTIONS,
    };
    bot = await startBotProcess({ env }, 'backlog: bot');
    // The server goes away once the bot has started (it reads its identity at start).
    proxy.decide = () => 'down';

    // A burst: SENDERS deliveries in flight at once, each sender going on until one is refused.
    let accepted = 0;
    let refusal: { status: number; body: string } | undefined;
    let next = 1;
    const running = bot;
    const sender = async () => {
      while (refusal === undefined && next <= 200) {
        const n = next++;
        const result = await send(
          running.hookUrl,
          {
            body: pushPayload(n, world.projectId),
            headers: {
              'content-type': 'application/json',
              'x-gitlab-event': 'Push Hook',
              'x-gitlab-token': secret,
            },
          },
          agent,
          sizes.settleTimeoutMs,
        );
        if (result.kind !== 'answer') {
          expect.true(
            `delivery ${n} was answered`,
            false,
            `${result.kind}: ${running.alive() ? 'bot alive' : 'the bot died'}`,
          );
          return;
        }
        if (result.status === 202) accepted++;
        else refusal ??= { status: result.status, body: result.body };
      }
    };
    await Promise.all(Array.from({ length: SENDERS }, sender));
    figures.accepted_while_down = accepted;
    if (!bot.alive()) crashes++;
    expect.true(
      'the bot stayed up while the backlog grew',
      bot.alive(),
      notableLines(bot.output()).join('\n'),
    );
    expect.true('some deliveries were accepted', accepted > 0);
    expect.equal('the refusal once the inbox is full', refusal?.status ?? 0, 503);
    expect.true(
      'the refusal says the inbox is full, by its bytes',
      /inbox full: .*maxPendingBytes/.test(refusal?.body ?? ''),
      refusal?.body,
    );
    // Logged once for the burst (the line may reach the output a moment after the answer).
    const refusalLogged = () =>
      running
        .output()
        .split('\n')
        .filter((line) => line.includes('refusing deliveries with 503')).length;
    await waitFor('the refusal logged', () => (refusalLogged() > 0 ? true : undefined), 10_000, 20).catch(
      () => undefined,
    );
    expect.equal('refusals logged (once per burst)', refusalLogged(), 1);
    const before = await readStatus(bot.baseUrl);
    figures.pending_before_restart = before?.pending ?? 'unknown';
    expect.equal('the backlog waiting in the inbox', before?.pending ?? -1, accepted);

    // A restart with the server back: the whole backlog is processed.
    await bot.stop();
    proxy.decide = () => undefined;
    bot = await startBotProcess({ env }, 'backlog: bot restarted');
    const baseUrl = bot.baseUrl;
    const status = await waitFor(
      'the backlog processed after the restart',
      async () => {
        const s = await readStatus(baseUrl);
        return isIdle(s) ? s : undefined;
      },
      sizes.settleTimeoutMs,
      200,
    );
    figures.pending_after_restart = status.pending;
    if (!bot.alive()) crashes++;
    expect.true('the restarted bot stayed up', bot.alive(), notableLines(bot.output()).join('\n'));
    expect.true('no line says the heap ran out', !/heap limit|out of memory/i.test(bot.output()));
  } finally {
    agent.destroy();
    await bot?.stop().catch(() => undefined);
    await proxy.close();
    await world.close();
  }
  return {
    name: 'backlog',
    seconds: (performance.now() - started) / 1000,
    figures,
    failures: expect.failures,
    totals: { crashes },
  };
}
