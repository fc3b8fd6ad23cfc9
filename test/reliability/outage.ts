/**
 * Server outage: while the bot works off a burst of issue deliveries (one comment each), the server
 * answers 503 for a while: most requests never reach it (`down`), and every other comment POST does
 * reach it but its answer is lost (`lost`: the comment exists, the bot saw a 503). Then it recovers.
 * Afterwards every planned comment is there exactly once, and the outbox is empty with nothing parked.
 * The retry sweep runs every second here (its default is a minute).
 */
import path from 'node:path';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { sleep, startBotProcess, waitFor, type BotProcess } from './bot-process.ts';
import { goodHeaders, issuePayload } from './deliveries.ts';
import { startSender } from './delivery-sender.ts';
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
import { COMMENT_RULE, countComments, createWorld, writeRules } from './world.ts';

export async function outageScenario(sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const n = sizes.outageDeliveries;
  const secret = makeSecret('hook-secret');
  const world = await createWorld({ botToken: makeSecret('api-token'), label: 'outage' });
  const proxy = await startFaultProxy(world.sandbox.url);
  let bot: BotProcess | undefined;
  try {
    const ids = world.addIssues(n);
    const env = botEnv({
      world,
      secret,
      rulesDir: writeRules(world.dir, { 'default.yml': COMMENT_RULE }),
      statePath: path.join(world.dir, 'state', 'hookbot.json'),
      port: await freePort(),
      configFile: writeConfig(world.dir, 'config.yml', DELIVERY_ONLY_CONFIG),
      apiUrl: proxy.url,
    });
    bot = await startBotProcess({ env }, 'outage: bot');

    // Armed once a fifth of the work is done; the outage starts with the next comment POST (whose
    // answer is lost), so it hits reads, writes and the backlog alike.
    let armed = false;
    let outage = false;
    let ended: Promise<void> | undefined;
    let notePosts = 0;
    const isNotePost = (method: string, url: string) => method === 'POST' && /\/notes(\?|$)/.test(url);
    proxy.decide = ({ method, path: url }) => {
      if (armed && !outage && isNotePost(method, url)) {
        armed = false;
        outage = true;
        ended = sleep(sizes.outageMs).then(() => void (outage = false));
      }
      if (!outage) return undefined;
      if (isNotePost(method, url)) return notePosts++ % 2 === 0 ? 'lost' : 'down';
      return 'down';
    };

    const processed = () => world.botComments().size;
    const sender = startSender({
      url: bot.hookUrl,
      deliveries: ids.map((id, i) => ({
        body: issuePayload({ id, iid: i + 1, projectId: world.projectId }),
        headers: goodHeaders(secret),
      })),
      concurrency: sizes.concurrency,
      timeoutMs: sizes.settleTimeoutMs,
    });
    await waitFor(
      'a fifth of the issues processed',
      () => (processed() >= Math.ceil(n / 5) ? true : undefined),
      sizes.settleTimeoutMs,
      5,
    );
    armed = true;
    await waitFor('the outage to start', () => (outage ? true : undefined), sizes.settleTimeoutMs, 5);
    const processedBefore = processed();
    await ended;
    const processedDuring = processed() - processedBefore;
    const recovered = performance.now();

    await sender.done;
    const sent = sender.figures();
    const live = bot;
    let recoverySeconds: number | string = 'did not finish';
    await waitFor(
      'every issue processed and the outbox empty',
      async () => (processed() >= n && isIdle(await readStatus(live.baseUrl)) ? true : undefined),
      sizes.settleTimeoutMs,
      100,
    ).then(
      () => (recoverySeconds = Number(((performance.now() - recovered) / 1000).toFixed(1))),
      (error: unknown) => expect.true('the bot finished its work after the outage', false, String(error)),
    );
    await sleep(1_000);
    const status = await readStatus(live.baseUrl);
    const count = countComments(world, ids);
    const exitCode = await live.stop();
    bot = undefined;
    const crashes = exitCode === 0 ? 0 : 1;

    const answered = sent.accepted + sent.acceptedAsDuplicate;
    expect.equal('deliveries answered 202', answered, n);
    expect.zero('planned comments missing', count.lost, `issues ${count.lostIds.join(', ')}`);
    expect.zero('comments applied twice', count.duplicated, `issues ${count.duplicatedIds.join(', ')}`);
    expect.zero('bot comments on issues no delivery named', count.stray);
    expect.zero('actions still in the outbox', status?.stats.outbox ?? -1);
    expect.zero('parked actions', status?.stats.parked ?? -1, status?.parked.map((p) => p.reason).join('; '));
    expect.true('the outage was felt (requests answered 503)', (proxy.counts.down ?? 0) > 0);
    if (crashes)
      expect.zero('bot exit code on SIGTERM', exitCode ?? -1, notableLines(live.output()).join('\n'));

    return {
      name: 'outage',
      seconds: (performance.now() - started) / 1000,
      figures: {
        deliveries: n,
        outage_ms: sizes.outageMs,
        processed_before_outage: processedBefore,
        processed_during_outage: processedDuring,
        requests_down: proxy.counts.down ?? 0,
        comment_posts_answer_lost: proxy.counts.lost ?? 0,
        seconds_from_recovery_to_done: recoverySeconds,
        comment_posts_reaching_server: proxy.forwarded(
          'POST',
          /^\/api\/v3\/projects\/\d+\/issues\/\d+\/notes$/,
        ),
        accepted: answered,
        processed: count.processed,
        lost: count.lost,
        duplicated: count.duplicated,
        outbox: status?.stats.outbox ?? 'unknown',
        parked: status?.stats.parked ?? 'unknown',
      },
      failures: expect.failures,
      totals: {
        sent: n,
        accepted: answered,
        processed: count.processed,
        lost: count.lost,
        duplicated: count.duplicated,
        crashes,
      },
    };
  } finally {
    await bot?.kill9();
    await proxy.close();
    await world.close();
  }
}
