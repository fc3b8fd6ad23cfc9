/**
 * Sweep runs started by the scheduler log their job id on every line, their own and those of the
 * parts beneath (rule sweep, item processor, executor, API client): over HTTP, through a proxy
 * that plays an outage, the rule sweep's failing calls carry its job and the retries sweep that
 * later carries them out carries another.
 */
import type { DestinationStream } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/ops/logger.ts';
import { createExecutor } from '../../src/rules/executor/executor.ts';
import { createScheduler, sweepJobId, type Scheduler } from '../../src/scheduler/scheduler.ts';
import { createSweepSet, type SweepName } from '../../src/scheduler/sweep-set.ts';
import { timingOfSweep } from '../../src/scheduler/timing.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.ts';
import { issueAged, makeWorld, STALE_RULE } from './world.ts';

const sandbox = useSandbox();

type Line = Record<string, unknown> & { msg: string; part?: string };

let proxy: FaultProxy | undefined;
let scheduler: Scheduler | undefined;
afterEach(async () => {
  await scheduler?.stop();
  scheduler = undefined;
  await proxy?.close();
  proxy = undefined;
});

describe('sweepJobId', () => {
  it.each([
    {
      name: 'reconcile',
      at: Date.UTC(2025, 2, 1, 14, 5, 0, 999),
      run: 7,
      id: 'reconcile:20250301T140500Z-7',
    },
    {
      name: 'merge_watch',
      at: Date.UTC(2024, 11, 31, 23, 59, 59),
      run: 1,
      id: 'merge_watch:20241231T235959Z-1',
    },
    { name: 'rules', at: 0, run: 12, id: 'rules:19700101T000000Z-12' },
    { name: 'rules', at: Number.NaN, run: 2, id: 'rules:NaN-2' },
  ])('$name started at $at, run $run: $id', ({ name, at, run, id }) => {
    expect(sweepJobId(name, at, run)).toBe(id);
  });
});

describe('scheduler: the job id on every line of a sweep run', () => {
  it('the rule sweep meets an outage, the retries sweep acts later: each line carries its own run', async () => {
    proxy = await startFaultProxy(sandbox().sb.url);
    // The issue is aged against the real date: the clock starts there.
    const clock = { now: Date.now() };
    const started: number[] = [];
    const world = await makeWorld(sandbox().sb, {
      prefix: 'joblog',
      rules: STALE_RULE,
      baseUrl: proxy.url,
      now: () => clock.now,
      settings: { breaker: { maxItems: 50, maxShare: 1 } },
    });
    await issueAged(world, 'stale', 90);

    // The parts wired as start-from-config.ts wires them, each with its child of one real logger.
    const raw: string[] = [];
    const destination: DestinationStream = { write: (line: string) => void raw.push(line) };
    const log = createLogger({ level: 'debug', format: 'json', destination });
    const now = () => clock.now;
    const executor = createExecutor({
      client: world.client,
      store: world.store,
      now,
      random: () => 0.5,
      retry: { baseDelayMs: 1_000, maxDelayMs: 60_000 },
      log: log.child({ part: 'executor' }),
    });
    const sweeps = createSweepSet(
      {
        client: world.client,
        store: world.store,
        rules: { forProject: (p) => world.rules.byProject(p) },
        executor,
        now,
        log: log.child({ part: 'sweep' }),
      },
      world.settings,
    );
    const scheduled = (name: SweepName) => ({
      name,
      timing: timingOfSweep({ every: '1h' }),
      run: (options: { signal?: AbortSignal }) => sweeps.run(name, options),
    });
    scheduler = createScheduler({
      sweeps: [scheduled('rules'), scheduled('retries')],
      store: world.store,
      now,
      log: log.child({ part: 'scheduler' }),
    });
    const lines = () => raw.map((text) => JSON.parse(text) as Line);

    // The listing gets through; every call the executor makes meets the outage.
    const isListing = (path: string) => /\/issues\?/.test(path) || /^\/api\/v3\/projects\/\d+$/.test(path);
    proxy.decide = ({ path }) => (isListing(path) ? undefined : 'down');
    log.info('before the runs');
    started.push(clock.now);
    await scheduler.trigger('rules');
    const firstRun = lines().slice(1);
    proxy.decide = () => undefined;
    clock.now += 10 * 60_000;
    started.push(clock.now);
    await scheduler.trigger('retries');
    const secondRun = lines().slice(1 + firstRun.length);
    log.info('after the runs');

    const rulesJob = sweepJobId('rules', started[0]!, 1);
    const retriesJob = sweepJobId('retries', started[1]!, 2);
    expect(rulesJob).toMatch(/^rules:\d{8}T\d{6}Z-1$/);
    expect([firstRun[0]?.msg, firstRun.at(-1)?.msg]).toEqual(['sweep started', 'sweep finished']);
    expect([secondRun[0]?.msg, secondRun.at(-1)?.msg]).toEqual(['sweep started', 'sweep finished']);
    expect(firstRun.filter((line) => line.job !== rulesJob)).toEqual([]);
    expect(secondRun.filter((line) => line.job !== retriesJob)).toEqual([]);

    // The executor's lines, the deepest: failing in the rule sweep's run, done in the retries'.
    const executorLines = (run: Line[]) =>
      run.filter((line) => line.part === 'executor').map((line) => [line.op, line.msg, line.job]);
    expect(executorLines(firstRun)).toEqual([
      ['notes.createIssueNote', 'call failed; will retry', rulesJob],
      ['issues.update', 'call failed; will retry', rulesJob],
    ]);
    expect(executorLines(secondRun)).toEqual([
      ['notes.createIssueNote', 'call done', retriesJob],
      ['issues.update', 'call done', retriesJob],
    ]);

    // Lines outside the runs carry no job.
    const outside = lines().filter((line) => line.msg === 'before the runs' || line.msg === 'after the runs');
    expect(outside.map((line) => [line.msg, line.job])).toEqual([
      ['before the runs', undefined],
      ['after the runs', undefined],
    ]);
  });

  it('a run started without the scheduler (hookbot sweep --once, the demo) gets a job id of its own', async () => {
    const clock = { now: Date.now() };
    const world = await makeWorld(sandbox().sb, {
      prefix: 'directjob',
      rules: STALE_RULE,
      now: () => clock.now,
      settings: { breaker: { maxItems: 50, maxShare: 1 } },
    });
    await issueAged(world, 'stale', 90);
    const raw: string[] = [];
    const log = createLogger({
      level: 'debug',
      format: 'json',
      destination: { write: (line: string) => void raw.push(line) },
    });
    const now = () => clock.now;
    const executor = createExecutor({
      client: world.client,
      store: world.store,
      now,
      log: log.child({ part: 'executor' }),
    });
    const sweeps = createSweepSet(
      {
        client: world.client,
        store: world.store,
        rules: { forProject: (p) => world.rules.byProject(p) },
        executor,
        now,
        log: log.child({ part: 'sweep' }),
      },
      world.settings,
    );
    await sweeps.run('rules', { force: true });
    log.info('after the run');
    const lines = raw.map((text) => JSON.parse(text) as Line);
    const run = lines.slice(0, -1);
    // Every line of the run carries the run's id, the executor's (the deepest) included...
    expect(run.length).toBeGreaterThan(0);
    expect(new Set(run.map((line) => line.job)).size).toBe(1);
    expect(run[0]?.job).toMatch(/^rules:\d{8}T\d{6}Z-1$/);
    expect(run.some((line) => line.part === 'executor')).toBe(true);
    // ...and the line after it none.
    expect(lines.at(-1)).toMatchObject({ msg: 'after the run' });
    expect(lines.at(-1)?.job).toBeUndefined();
  });

  it('a run started by its timer, in a bree worker tick, carries its job id too', async () => {
    const raw: string[] = [];
    const log = createLogger({
      level: 'info',
      format: 'json',
      destination: { write: (line: string) => void raw.push(line) },
    });
    const sweepLog = log.child({ part: 'sweep' });
    const store = createMemoryStore();
    await store.open();
    let ran = false;
    scheduler = createScheduler({
      sweeps: [
        {
          name: 'reconcile',
          timing: timingOfSweep({ every: '1h' }),
          run: async () => {
            await new Promise((resolve) => setTimeout(resolve, 1));
            sweepLog.info('walking');
            ran = true;
            return {};
          },
        },
      ],
      store,
      log: log.child({ part: 'scheduler' }),
    });
    await scheduler.start();
    const until = Date.now() + 5_000;
    while (!ran || scheduler.running().length > 0) {
      if (Date.now() > until) throw new Error('the sweep did not run');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const lines = raw.map((text) => JSON.parse(text) as Line);
    const run = lines.filter((line) => line.msg !== 'sweep scheduled');
    expect(run.map((line) => line.msg)).toEqual(['sweep started', 'walking', 'sweep finished']);
    expect(new Set(run.map((line) => line.job)).size).toBe(1);
    expect(run[0]?.job).toMatch(/^reconcile:\d{8}T\d{6}Z-1$/);
    expect(lines.find((line) => line.msg === 'sweep scheduled')?.job).toBeUndefined();
  });
});
