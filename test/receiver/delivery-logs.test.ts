/**
 * The whole bot, in process, against the sandbox (demo seed, the example rules), logging at debug
 * level through the real logger into memory (issue 7: "structured JSON logs with the delivery or
 * job id on every line"). A hook delivery is followed from the door to the actions it causes, and a
 * sweep run through the scheduler from start to finish: every line in between carries the id.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DestinationStream } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { DEMO_TOKENS } from '../../src/sandbox/seed.ts';
import { createScheduler } from '../../src/scheduler/scheduler.ts';
import { timingOfSweep } from '../../src/scheduler/timing.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'delivery-logs-hook-secret';

type Line = Record<string, unknown> & { msg: string; part?: string };

describe('a running bot logs the delivery or job id on every line of the work', () => {
  let sb: Sandbox;
  let runtime: Runtime | undefined;
  let dir = '';
  const raw: string[] = [];
  const lines = () => raw.map((text) => JSON.parse(text) as Line);

  beforeAll(async () => {
    sb = await startSandbox({ seed: 'demo', adminToken: 'delivery-logs-root-token', hookTimeoutMs: 2_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-delivery-logs-'));
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: 'test/fixtures/rules/example',
        HOOKBOT_IN_DOCKER: '0',
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 0;
    config.rules.watch = false;
    const destination: DestinationStream = { write: (line: string) => void raw.push(line) };
    runtime = await startRuntime(
      config,
      { log: createLogger({ level: 'debug', format: 'json', destination }), metrics: createMetrics() },
      { api: { url: sb.url, token: DEMO_TOKENS.hookbot }, webhookSecret: SECRET, scheduler: false },
    );
    const admin = createClient({ baseUrl: sb.url, token: sb.adminToken });
    await admin.hooks.create('acme/web', { url: runtime.bot.hookUrl, issues_events: true, token: SECRET });
  });

  afterAll(async () => {
    await runtime?.close();
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Waits until the work is over: the bot's own actions fire hooks in turn (its label change is an
   * issue update), so the sandbox's deliveries and the pipeline are waited for until nothing new
   * is logged.
   */
  async function settle(): Promise<void> {
    for (let logged = -1; logged !== raw.length;) {
      logged = raw.length;
      await sb.ctx.hooks.idle();
      await runtime!.bot.pipeline.idle();
    }
  }

  it('an issue opened: every line from its acceptance to its last action carries a delivery id', async () => {
    const alice = createClient({ baseUrl: sb.url, token: DEMO_TOKENS.alice });
    const from = raw.length;
    const issue = await alice.issues.create('acme/web', { title: 'Crash on save', labels: ['ui'] });
    const item = `issue:${issue.project_id}:${issue.id}`;
    await waitFor(() => runtime!.store.latestDecision(item), 10_000, 'a decision');
    await settle();

    const work = lines().slice(from);
    const acceptedLines = work.filter((line) => line.msg === 'delivery accepted');
    const accepted = acceptedLines.map((line) => line.delivery);
    // The issue's opening, then the update the bot's own label change caused.
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    for (const id of accepted) expect(id).toEqual(expect.any(String));
    const opened = accepted[0];
    const after = work.slice(work.indexOf(acceptedLines[0]!));

    // Every line from the first acceptance on names an accepted delivery.
    expect(after.filter((line) => !accepted.includes(line.delivery))).toEqual([]);
    // The opening's run: the processor, the executor and the API client's call log all say so.
    const run = after.filter((line) => line.delivery === opened && line.msg !== 'delivery accepted');
    const actions = run.filter((line) => line.part === 'executor' && line.msg === 'call done');
    expect(actions.map((line) => line.op)).toEqual(['issues.update', 'notes.createIssueNote']);
    expect(run.filter((line) => line.part === 'process').map((line) => line.msg)).toContain('item evaluated');
    expect(run.filter((line) => line.msg === 'api call').length).toBeGreaterThan(2);
    for (const line of run) expect(line).toMatchObject({ deliveries: [opened], item });
  });

  it('a sweep run by the scheduler: every line from its start to its end carries its job id', async () => {
    const { sweeps, store } = runtime!;
    const scheduler = createScheduler({
      // As start-from-config.ts wires it (scheduledSweepsOf), forced so that the daily rule runs now.
      sweeps: [
        {
          name: 'rules',
          timing: timingOfSweep({ every: '1h' }),
          run: (options) => sweeps.run('rules', { ...options, force: true }),
        },
      ],
      store,
      log: createLogger({
        level: 'debug',
        format: 'json',
        destination: { write: (line: string) => void raw.push(line) },
      }).child({ part: 'scheduler' }),
    });
    const from = raw.length;
    await scheduler.trigger('rules');
    await scheduler.stop();

    const work = lines().slice(from);
    expect(work[0]?.msg).toBe('sweep started');
    expect(work.at(-1)?.msg).toBe('sweep finished');
    const job = work[0]?.job;
    expect(job).toMatch(/^rules:\d{8}T\d{6}Z-1$/);
    expect(work.filter((line) => line.msg === 'api call').length).toBeGreaterThan(0);
    expect(work.filter((line) => line.job !== job)).toEqual([]);
    expect(work.filter((line) => line.delivery !== undefined)).toEqual([]);
  });

  it('a delivery with a wrong secret: one warning with the remote address, not one per delivery', async () => {
    const from = raw.length;
    const send = (token: string) =>
      fetch(runtime!.bot.hookUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gitlab-event': 'Issue Hook',
          'x-gitlab-token': token,
        },
        body: JSON.stringify({ object_kind: 'issue' }),
      });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await send(`wrong-secret-${i}`)).status);
    expect(answers).toEqual([401, 401, 401]);
    const refused = await waitFor(() => {
      const found = lines()
        .slice(from)
        .filter((line) => line.msg.startsWith('delivery refused (401)'));
      return found.length > 0 ? found : undefined;
    });
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ level: 40, remote: expect.stringMatching(/127\.0\.0\.1$/) });
    expect(refused[0]!.msg).toContain("the project hook's secret token must equal");
    // The secrets sent are not logged.
    expect(raw.slice(from).join('\n')).not.toContain('wrong-secret');
  });
});
