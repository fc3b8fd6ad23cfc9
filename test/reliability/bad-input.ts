/**
 * Bad input: thousands of generated bad deliveries (bad-deliveries.ts) mixed with good ones, sent
 * concurrently. The bot never dies, answers each bad one as issue 4 says, and processes every good
 * one exactly once (one comment each, none anywhere else). Then a share of the good ones is sent
 * again, byte for byte: 202 `duplicate`, and still one comment.
 */
import path from 'node:path';
import { sleep, startBotProcess, waitFor, type BotProcess } from './bot-process.ts';
import { makeBadCases, seededRandom, type Expected } from './bad-deliveries.ts';
import {
  goodHeaders,
  issuePayload,
  keepAliveAgent,
  messageOf,
  send,
  type RawDelivery,
  type SendResult,
} from './deliveries.ts';
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

interface Case {
  category: string;
  delivery: RawDelivery;
  expected: Expected;
}

function matches(result: SendResult, expected: Expected): boolean {
  if ('noAnswer' in expected) return true; // nothing to answer; survival is checked separately
  if (result.kind !== 'answer' || result.status !== expected.status) return false;
  return expected.message === undefined || messageOf(result.body) === expected.message;
}

const shown = (result: SendResult): string =>
  result.kind === 'answer'
    ? `${result.status} ${messageOf(result.body).slice(0, 100)}`
    : `${result.kind}${'code' in result ? ` ${result.code}` : ''}`;

const expectedText = (expected: Expected): string =>
  'noAnswer' in expected
    ? 'no answer'
    : `${expected.status}${expected.message ? ` ${expected.message}` : ''}`;

export async function badInputScenario(sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const seed = Number(process.env.RELIABILITY_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const secret = makeSecret('hook-secret');
  const world = await createWorld({ botToken: makeSecret('api-token'), label: 'bad-input' });
  let bot: BotProcess | undefined;
  try {
    const goodCount = Math.max(1, Math.ceil(sizes.badDeliveries / sizes.badPerGood));
    const ids = world.addIssues(goodCount);
    const good = ids.map((id, i) => issuePayload({ id, iid: i + 1, projectId: world.projectId }));
    bot = await startBotProcess(
      {
        env: botEnv({
          world,
          secret,
          rulesDir: writeRules(world.dir, { 'default.yml': COMMENT_RULE }),
          statePath: path.join(world.dir, 'state', 'hookbot.json'),
          port: await freePort(),
          configFile: writeConfig(world.dir, 'config.yml', DELIVERY_ONLY_CONFIG),
        }),
      },
      'bad-input: bot',
    );
    const live = bot;

    // Good ones spread evenly through the bad ones.
    const bad = makeBadCases(sizes.badDeliveries, { secret, sample: good[0]!, seed });
    const cases: Case[] = [];
    let g = 0;
    bad.forEach((c, i) => {
      if (i % sizes.badPerGood === 0 && g < good.length)
        cases.push({
          category: 'good',
          delivery: { body: good[g++]!, headers: goodHeaders(secret) },
          expected: { status: 202, message: 'accepted' },
        });
      cases.push(c);
    });
    while (g < good.length)
      cases.push({
        category: 'good',
        delivery: { body: good[g++]!, headers: goodHeaders(secret) },
        expected: { status: 202, message: 'accepted' },
      });
    // Then a tenth of the good ones again, the same bytes: a server's retry of a slow delivery.
    const random = seededRandom(seed + 1);
    const again = good.filter(() => random() < 0.1);
    const second: Case[] = again.map((body) => ({
      category: 'duplicate-of-good',
      delivery: { body, headers: goodHeaders(secret) },
      expected: { status: 202, message: 'duplicate' },
    }));

    const tally = new Map<string, { sent: number; wrong: number; examples: string[] }>();
    let died = false;
    void live.exited.then(() => (died = true));
    async function sendAll(list: Case[]): Promise<void> {
      const agent = keepAliveAgent(sizes.concurrency);
      let next = 0;
      await Promise.all(
        Array.from({ length: sizes.concurrency }, async () => {
          while (next < list.length && !died) {
            const c = list[next++]!;
            const result = await send(live.hookUrl, c.delivery, agent);
            const entry = tally.get(c.category) ?? { sent: 0, wrong: 0, examples: [] };
            entry.sent++;
            if (!matches(result, c.expected)) {
              entry.wrong++;
              if (entry.examples.length < 3)
                entry.examples.push(`got ${shown(result)}, expected ${expectedText(c.expected)}`);
            }
            tally.set(c.category, entry);
          }
        }),
      );
      agent.destroy();
    }
    await sendAll(cases);
    await sendAll(second);

    const processed = () => world.botComments().size;
    if (!died)
      await waitFor(
        'every good delivery processed and the bot idle',
        async () => (processed() >= goodCount && isIdle(await readStatus(live.baseUrl)) ? true : undefined),
        sizes.settleTimeoutMs,
        100,
      ).catch((error: unknown) => expect.true('the bot finished its work', false, String(error)));
    await sleep(500);
    const health = await fetch(`${live.baseUrl}/healthz`).then(
      (res) => res.status,
      () => 0,
    );
    const count = countComments(world, ids);
    const diedDuringRun = died;
    const exit = diedDuringRun ? await live.exited : { code: await live.stop(), signal: null };
    bot = undefined;
    const crashes = diedDuringRun || exit.code !== 0 ? 1 : 0;

    const badTried = [...tally].filter(([c]) => c !== 'good').reduce((sum, [, t]) => sum + t.sent, 0);
    const wrong = [...tally].filter(([c]) => c !== 'good').reduce((sum, [, t]) => sum + t.wrong, 0);
    const goodEntry = tally.get('good') ?? { sent: 0, wrong: 0, examples: [] };
    for (const [category, t] of tally)
      if (t.wrong > 0)
        expect.zero(`wrong answers to ${category}`, t.wrong, `of ${t.sent}; ${t.examples.join('; ')}`);
    expect.zero(
      'bot exits while fed bad input',
      crashes,
      diedDuringRun ? notableLines(live.output()).join('\n') : `exit code ${exit.code} on SIGTERM`,
    );
    expect.equal('/healthz after the run', health, 200);
    expect.equal('bad inputs tried', badTried >= sizes.badDeliveries ? 'enough' : String(badTried), 'enough');
    expect.zero('good deliveries not processed (lost)', count.lost, `issues ${count.lostIds.join(', ')}`);
    expect.zero(
      'comments beyond the first (duplicated)',
      count.duplicated,
      `issues ${count.duplicatedIds.join(', ')}`,
    );
    expect.zero('bot comments caused by bad deliveries', count.stray);

    return {
      name: 'bad-input',
      seconds: (performance.now() - started) / 1000,
      figures: {
        seed,
        bad_inputs: badTried,
        wrong_answers: wrong,
        by_category: [...tally]
          .filter(([c]) => c !== 'good')
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([c, t]) => `${c} ${t.sent}${t.wrong ? ` (${t.wrong} wrong)` : ''}`)
          .join(', '),
        good_sent: goodEntry.sent,
        good_accepted: goodEntry.sent - goodEntry.wrong,
        processed: count.processed,
        lost: count.lost,
        duplicated: count.duplicated,
        stray_comments: count.stray,
        crashes,
      },
      failures: expect.failures,
      totals: {
        sent: goodCount,
        accepted: goodEntry.sent - goodEntry.wrong,
        processed: count.processed,
        lost: count.lost,
        duplicated: count.duplicated,
        badInputs: badTried,
        wrongAnswers: wrong,
        crashes,
      },
    };
  } finally {
    await bot?.kill9();
    await world.close();
  }
}
