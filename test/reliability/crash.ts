/**
 * Crash: a burst of distinct issue deliveries, each of which must lead to one comment; the bot is
 * killed with SIGKILL at random moments (while it accepts, and while it processes) and restarted
 * each time on the same state file and port. At the end every delivery answered 202 has been
 * processed exactly once: counted in the sandbox, one comment per issue, none missing, none doubled.
 */
import path from 'node:path';
import { startBotProcess, waitFor, sleep, type BotProcess } from './bot-process.ts';
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

export async function crashScenario(sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const n = sizes.crashDeliveries;
  const secret = makeSecret('hook-secret');
  const world = await createWorld({ botToken: makeSecret('api-token'), label: 'crash' });
  let bot: BotProcess | undefined;
  try {
    const ids = world.addIssues(n);
    const rulesDir = writeRules(world.dir, { 'default.yml': COMMENT_RULE });
    const configFile = writeConfig(world.dir, 'config.yml', DELIVERY_ONLY_CONFIG);
    const env = botEnv({
      world,
      secret,
      rulesDir,
      statePath: path.join(world.dir, 'state', 'hookbot.json'),
      port: await freePort(),
      configFile,
    });
    let generation = 1;
    bot = await startBotProcess({ env }, `crash: bot #${generation}`);

    const deliveries = ids.map((id, i) => ({
      body: issuePayload({ id, iid: i + 1, projectId: world.projectId }),
      headers: goodHeaders(secret),
    }));
    const sender = startSender({
      url: bot.hookUrl,
      deliveries,
      concurrency: sizes.concurrency,
      timeoutMs: sizes.settleTimeoutMs,
    });

    // Kill moments, spread over the whole job: "work" is deliveries answered plus issues processed
    // (0 .. 2n). The span is cut in as many slices as kills and each kill falls at random in its
    // slice, so with two or more some land in the burst and some while the inbox is worked off.
    const from = 0.05 * 2 * n;
    const slice = (0.9 * 2 * n) / sizes.crashKills;
    const moments = Array.from({ length: sizes.crashKills }, (_, k) =>
      Math.floor(from + (k + Math.random()) * slice),
    );
    const killedAt: string[] = [];
    const restartMs: number[] = [];
    let crashes = 0;
    const unexpected: string[] = [];
    const processed = () => world.botComments().size;
    const restart = async () => {
      generation++;
      const t0 = performance.now();
      bot = await startBotProcess({ env }, `crash: bot #${generation}`);
      restartMs.push(performance.now() - t0);
    };
    /** A bot that exited on its own crashed: counted, its last lines kept, and it is restarted. */
    const checkAlive = async () => {
      if (bot!.alive()) return;
      crashes++;
      unexpected.push(`bot #${generation} exited on its own:`, ...notableLines(bot!.output()));
      await restart();
    };

    for (const moment of moments) {
      await waitFor(
        `work ${moment} of ${2 * n} before a kill`,
        () => (sender.answered() + processed() >= moment || !bot!.alive() ? true : undefined),
        sizes.settleTimeoutMs,
        10,
      );
      await sleep(Math.random() * 50);
      await checkAlive();
      killedAt.push(`${sender.answered()} answered / ${processed()} processed`);
      await bot!.kill9();
      await restart();
    }

    await sender.done;
    const sent = sender.figures();
    await waitFor(
      'every issue processed and the bot idle',
      async () => {
        await checkAlive();
        return processed() >= n && isIdle(await readStatus(bot!.baseUrl)) ? true : undefined;
      },
      sizes.settleTimeoutMs,
      100,
    ).catch((error: unknown) => expect.true('the bot finished its work', false, String(error)));
    const last = bot!;
    // A late duplicate would come now, if ever: give it a moment before counting.
    await sleep(1_000);
    const status = await readStatus(last.baseUrl);
    const count = countComments(world, ids);
    const exitCode = await last.stop();
    bot = undefined;
    if (exitCode !== 0) {
      crashes++;
      unexpected.push(`last bot exited with ${exitCode} on SIGTERM`, ...notableLines(last.output()));
    }

    const answered = sent.accepted + sent.acceptedAsDuplicate;
    expect.equal('deliveries answered 202', answered, n);
    expect.zero(
      'accepted deliveries with no comment (lost)',
      count.lost,
      `issues ${count.lostIds.join(', ')}`,
    );
    expect.zero(
      'comments beyond the first (duplicated)',
      count.duplicated,
      `issues ${count.duplicatedIds.join(', ')}`,
    );
    expect.zero('bot comments on issues no delivery named', count.stray);
    expect.zero('unexpected bot exits', crashes, unexpected.join('\n'));
    expect.zero('parked actions', status?.stats.parked ?? -1);
    const wrongBodies = [...world.botComments().values()]
      .flat()
      .filter((body) => !body.startsWith('seen')).length;
    expect.zero("comments with another text than the rule's", wrongBodies);

    return {
      name: 'crash',
      seconds: (performance.now() - started) / 1000,
      figures: {
        deliveries: n,
        kills: moments.length,
        killed_at: killedAt.join('; '),
        restart_ms_max: Math.round(Math.max(0, ...restartMs)),
        attempts: sent.attempts,
        refused: sent.refused,
        resets: sent.resets,
        accepted: sent.accepted,
        accepted_as_duplicate: sent.acceptedAsDuplicate,
        other_answers:
          Object.entries(sent.otherAnswers)
            .map(([k, v]) => `${v}x ${k}`)
            .join('; ') || 'none',
        processed: count.processed,
        lost: count.lost,
        duplicated: count.duplicated,
        stray: count.stray,
        parked: status?.stats.parked ?? 'unknown',
      },
      failures: expect.failures,
      totals: {
        sent: n,
        accepted: answered,
        processed: count.processed,
        lost: count.lost,
        duplicated: count.duplicated,
        kills: moments.length,
        crashes,
      },
    };
  } finally {
    await bot?.kill9();
    await world.close();
  }
}
