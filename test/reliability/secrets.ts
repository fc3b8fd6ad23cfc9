/**
 * Secrets: no token, hook secret, signature secret or password in any output. Every bot process of
 * the whole run logs at debug level and its stdout and stderr are kept (bot-process.ts); this
 * scenario adds a run built to tempt a leak, then searches everything for every secret the run made
 * (as written, URL-encoded, and inside a basic-auth header):
 *
 * - each secret comes a different way: the API token from a file, the hook secret from the
 *   environment, the signature secret and the status page password from the config file (which
 *   also makes the bot warn that a secret is written in it);
 * - the server is careless: for a while it answers 503 with a body that echoes the token;
 * - deliveries with wrong secrets and signatures, broken rules reloaded, a kill -9 and a restart;
 * - the status page, its JSON and the metrics are read with the password, and searched too, as is
 *   the state file the bot wrote.
 */
import { sign } from '@octokit/webhooks-methods';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { allBotOutput, sleep, startBotProcess, waitFor, type BotProcess } from './bot-process.ts';
import { goodHeaders, issuePayload, send } from './deliveries.ts';
import { botEnv, freePort, isIdle, makeSecret, readStatus, secretsMade, writeConfig } from './harness.ts';
import { Expectations, type ScenarioResult } from './report.ts';
import type { Sizes } from './sizes.ts';
import { COMMENT_RULE, countComments, createWorld, writeRules } from './world.ts';

/** The forms a secret could take in output. */
function formsOf(secret: string): string[] {
  return [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')];
}

interface Leak {
  where: string;
  line: string;
}

function findLeaks(
  where: string,
  text: string,
  secrets: readonly string[],
  extraForms: readonly string[],
): Leak[] {
  const needles = [...secrets.flatMap(formsOf), ...extraForms];
  const leaks: Leak[] = [];
  for (const line of text.split('\n'))
    for (const needle of needles)
      if (line.includes(needle)) {
        // Shown masked: the report must not print what it is complaining about.
        leaks.push({ where, line: line.replaceAll(needle, '<SECRET>').slice(0, 400) });
        break;
      }
  return leaks;
}

export async function secretsScenario(sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const hookSecret = makeSecret('hook-secret');
  const signatureSecret = makeSecret('signature-secret');
  const password = makeSecret('status-password');
  const world = await createWorld({ botToken: makeSecret('api-token'), label: 'secrets' });
  const proxy = await startFaultProxy(world.sandbox.url);
  const statePath = path.join(world.dir, 'state', 'hookbot.json');
  let bot: BotProcess | undefined;
  const fetched: { where: string; text: string }[] = [];
  try {
    const ids = world.addIssues(20);
    const tokenFile = path.join(world.dir, 'api-token.txt');
    writeFileSync(tokenFile, `${world.botToken}\n`);
    const rulesDir = writeRules(world.dir, { 'default.yml': COMMENT_RULE });
    const configFile = writeConfig(
      world.dir,
      'config.yml',
      [
        'pipeline:',
        '  debounce_ms: 0',
        'webhook:',
        '  signature:',
        `    secret: ${signatureSecret}`,
        'server:',
        '  status_auth:',
        '    username: ops',
        `    password: ${password}`,
        'scheduler:',
        '  sweeps:',
        '    retries: { every: 1s }',
        '    reconcile: { enabled: false }',
        '    rules: { enabled: false }',
        '    merge_watch: { enabled: false }',
        '    merge_queue: { enabled: false }',
        '    hook_check: { enabled: false }',
        '',
      ].join('\n'),
    );
    const env = botEnv({
      world,
      secret: hookSecret,
      rulesDir,
      statePath,
      port: await freePort(),
      configFile,
      apiUrl: proxy.url,
    });
    delete env.HOOKBOT_API_TOKEN;
    env.HOOKBOT_API_TOKEN_FILE = tokenFile;

    bot = await startBotProcess({ env }, 'secrets: bot #1');
    const auth = { authorization: `Basic ${Buffer.from(`ops:${password}`).toString('base64')}` };
    const signed = async (n: number) => {
      const body = issuePayload({ id: ids[n]!, iid: n + 1, projectId: world.projectId });
      return {
        body,
        headers: { ...goodHeaders(hookSecret), 'x-hookbot-signature-256': await sign(signatureSecret, body) },
      };
    };

    // A careless server for the first deliveries: for 5 s its 503s echo the token back, long enough
    // for the client's own retries to give up, so the answers reach the logs.
    let careless = true;
    proxy.decide = ({ method }) => (careless && method === 'GET' ? 'echo-token' : undefined);
    for (let n = 0; n < 5; n++) await send(bot.hookUrl, await signed(n));
    await sleep(5_000);
    careless = false;

    // Wrong secrets and signatures (none of them is a secret of ours).
    const good = await signed(5);
    const wrong: Record<string, string>[] = [
      { ...good.headers, 'x-gitlab-token': 'not-the-secret' },
      { ...good.headers, 'x-hookbot-signature-256': `sha256=${'0'.repeat(64)}` },
      { 'content-type': 'application/json', 'x-gitlab-event': 'Issue Hook' },
    ];
    for (const headers of wrong) await send(bot.hookUrl, { body: good.body, headers });
    for (let n = 5; n < 12; n++) await send(bot.hookUrl, await signed(n));

    // Broken rules, reloaded while running: errors logged at length.
    writeFileSync(
      path.join(rulesDir, 'default.yml'),
      `${COMMENT_RULE}  - name: broken\n    on: [issue.opne]\n    do: [clse]\n`,
    );
    const first = bot;
    await waitFor(
      'the broken rules refused',
      async () => ((await readStatus(first.baseUrl, auth))?.rules.refused ? true : undefined),
      20_000,
    ).catch((error: unknown) => expect.true('the broken rules were refused', false, String(error)));
    writeFileSync(path.join(rulesDir, 'default.yml'), COMMENT_RULE);

    // A crash and a restart: startup logs twice, a replayed journal.
    await first.kill9();
    bot = await startBotProcess({ env }, 'secrets: bot #2');
    const second = bot;
    for (let n = 12; n < 20; n++) await send(second.hookUrl, await signed(n));
    await waitFor(
      'every delivery processed',
      async () =>
        world.botComments().size >= 20 && isIdle(await readStatus(second.baseUrl, auth)) ? true : undefined,
      sizes.settleTimeoutMs,
      100,
    ).catch((error: unknown) => expect.true('the bot finished its work', false, String(error)));

    for (const route of [
      '/status',
      '/status.json',
      '/metrics',
      '/readyz',
      `/explain/acme%2Fweb/issue/${ids[0]}`,
    ]) {
      const res = await fetch(`${second.baseUrl}${route}`, { headers: auth });
      fetched.push({ where: `GET ${route} (${res.status})`, text: await res.text() });
    }
    const unauthorized = await fetch(`${second.baseUrl}/status`);
    expect.equal('/status without the password', unauthorized.status, 401);
    const unexplained = await fetch(`${second.baseUrl}/explain/acme%2Fweb/issue/${ids[0]}`);
    expect.equal('/explain without the password', unexplained.status, 401);
    fetched.push({ where: 'GET /status without password', text: await unauthorized.text() });

    const code = await second.stop();
    bot = undefined;
    expect.equal('exit code on SIGTERM', code ?? 'signal', 0);
    const count = countComments(world, ids);
    expect.zero('deliveries of this run not processed', count.lost);
    expect.zero('comments doubled in this run', count.duplicated);
    expect.true('the careless server echoed the token', (proxy.counts['echo-token'] ?? 0) > 0);

    // Everything any bot of the whole run printed, what this one served, and what it stored.
    const secrets = secretsMade();
    const outputs = allBotOutput();
    const stored = readdirSync(path.dirname(statePath)).map((name) => ({
      where: `state file ${name}`,
      text: readFileSync(path.join(path.dirname(statePath), name), 'utf8'),
    }));
    // The basic-auth header as a whole, too.
    const extra = [auth.authorization.slice('Basic '.length)];
    const leaks = [
      ...outputs.flatMap((o) => findLeaks(o.label, o.text, secrets, extra)),
      ...fetched.flatMap((f) => findLeaks(f.where, f.text, secrets, extra)),
      ...stored.flatMap((s) => findLeaks(s.where, s.text, secrets, extra)),
    ];
    const bytes = outputs.reduce((sum, o) => sum + o.text.length, 0);
    const lines = outputs.reduce((sum, o) => sum + o.text.split('\n').length, 0);
    const debugLines = outputs.reduce((sum, o) => sum + (o.text.match(/"level":20/g)?.length ?? 0), 0);
    expect.true('debug lines were written (the search is over debug output)', debugLines > 0);
    // The echoed answers reached the logs: the redaction was put to the test, not bypassed.
    expect.true(
      "the careless server's answers reached the logs",
      outputs.some((o) => o.text.includes('down for maintenance')),
    );
    expect.zero(
      'lines holding a secret',
      leaks.length,
      leaks
        .slice(0, 10)
        .map((l) => `${l.where}: ${l.line}`)
        .join('\n'),
    );

    return {
      name: 'secrets',
      seconds: (performance.now() - started) / 1000,
      figures: {
        secrets_searched: secrets.length,
        bot_processes_searched: outputs.length,
        output_lines: lines,
        output_bytes: bytes,
        debug_lines: debugLines,
        pages_searched: fetched.length,
        state_files_searched: stored.length,
        echoed_token_503s: proxy.counts['echo-token'] ?? 0,
        leaks: leaks.length,
      },
      failures: expect.failures,
      totals: { leaks: leaks.length, kills: 1, crashes: code === 0 ? 0 : 1 },
    };
  } finally {
    await bot?.kill9();
    await sleep(0);
    await proxy.close();
    await world.close();
  }
}
