/**
 * The bree scheduler: next runs live in the store, so after a restart an overdue sweep runs once
 * (not once per missed interval) and one that is not due waits; a sweep never overlaps itself;
 * stopping asks a running sweep to stop and leaves it due.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScheduler, type ScheduledSweep, type Scheduler } from '../../src/scheduler/scheduler.ts';
import { timingOfSweep } from '../../src/scheduler/timing.ts';
import type { SweepRunOptions } from '../../src/scheduler/types.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { collectStatus } from '../../src/status/status-data.ts';
import { sweepRunResult } from '../../src/scheduler/summary.ts';
import type { StateStore } from '../../src/state/store.ts';

const HOUR = 3_600_000;

let scheduler: Scheduler | undefined;
afterEach(async () => {
  await scheduler?.stop();
  scheduler = undefined;
});

async function waitFor(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Lets timers and workers that would fire do so (a worker starts in about 0.1 s). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 600));

interface Counting extends ScheduledSweep {
  runs: number;
  signals: AbortSignal[];
}

function counting(
  name: string,
  timing: ScheduledSweep['timing'],
  work?: (options: SweepRunOptions) => Promise<void>,
): Counting {
  const sweep: Counting = {
    name,
    timing,
    runs: 0,
    signals: [],
    async run(options) {
      sweep.runs++;
      if (options.signal) sweep.signals.push(options.signal);
      await work?.(options);
      return { sweep: name };
    },
  };
  return sweep;
}

async function openStore(): Promise<StateStore> {
  const store = createMemoryStore();
  await store.open();
  return store;
}

describe('scheduler', () => {
  it('runs a sweep overdue by five intervals once after a restart, then sets its next run', async () => {
    const store = await openStore();
    await store.setNextRun('reconcile', undefined, Date.now() - 5 * HOUR);
    const sweep = counting('reconcile', timingOfSweep({ every: '1h' }));
    const before = Date.now();

    scheduler = createScheduler({ sweeps: [sweep], store });
    await scheduler.start();
    await waitFor(() => sweep.runs === 1 && scheduler?.running().length === 0);
    await settle();

    expect(sweep.runs).toBe(1);
    expect(store.nextRun('reconcile')).toBeGreaterThanOrEqual(before + HOUR);
  });

  it('does not run a sweep whose next run is still ahead', async () => {
    const store = await openStore();
    await store.setNextRun('hook_check', undefined, Date.now() + HOUR);
    const sweep = counting('hook_check', timingOfSweep({ every: '1h' }));

    scheduler = createScheduler({ sweeps: [sweep], store });
    await scheduler.start();
    await settle();

    expect(sweep.runs).toBe(0);
  });

  it('runs a sweep never run before at once', async () => {
    const store = await openStore();
    const sweep = counting('merge_watch', timingOfSweep({ every: '1m' }));

    scheduler = createScheduler({ sweeps: [sweep], store });
    await scheduler.start();
    await waitFor(() => sweep.runs === 1);

    expect(sweep.runs).toBe(1);
  });

  it('runs an overdue cron sweep once at start', async () => {
    const store = await openStore();
    await store.setNextRun('rules', undefined, Date.now() - 3 * 24 * HOUR);
    const sweep = counting('rules', timingOfSweep({ cron: '0 3 * * *' }));

    scheduler = createScheduler({ sweeps: [sweep], store });
    await scheduler.start();
    await waitFor(() => sweep.runs === 1 && scheduler?.running().length === 0);
    await settle();

    expect(sweep.runs).toBe(1);
    const next = new Date(store.nextRun('rules') ?? 0);
    expect([next.getHours(), next.getMinutes()]).toEqual([3, 0]);
    expect(next.getTime()).toBeGreaterThan(Date.now());
  });

  describe('a next run holds for the setting it was computed under', () => {
    /**
     * One start of the bot with this sweep: until its run at start is over when one is expected
     * (waited for: a worker may take long to start on a busy machine), else for a while, long
     * enough for a tick that was due to come.
     */
    async function oneStart(store: StateStore, sweep: Counting, runsAtStart: boolean): Promise<void> {
      const before = sweep.runs;
      scheduler = createScheduler({ sweeps: [sweep], store });
      await scheduler.start();
      if (runsAtStart) await waitFor(() => sweep.runs > before && scheduler?.running().length === 0, 20_000);
      else await settle();
      await scheduler.stop();
      scheduler = undefined;
    }

    it('hooks.manage turned on after a first start: the hook check runs at the next start, not an hour later', async () => {
      const store = await openStore();
      const hourly = timingOfSweep({ every: '1h' });
      const first = counting('hook_check', hourly);
      first.setting = 'manage: false';
      await oneStart(store, first, true);
      expect(first.runs).toBe(1);
      const stored = store.nextRun('hook_check')!;
      expect(stored).toBeGreaterThan(Date.now() + HOUR - 60_000);

      // Restarted as it was: it waits for its stored next run.
      const same = counting('hook_check', hourly);
      same.setting = 'manage: false';
      await oneStart(store, same, false);
      expect(same.runs).toBe(0);

      // Restarted with hooks.manage on: it runs now, and its next run is computed afresh.
      const managed = counting('hook_check', hourly);
      managed.setting = 'manage: true';
      await oneStart(store, managed, true);
      expect(managed.runs).toBe(1);
      expect(store.nextRun('hook_check')).toBeGreaterThan(stored);

      // And that is kept: the next restart waits again.
      const again = counting('hook_check', hourly);
      again.setting = 'manage: true';
      await oneStart(store, again, false);
      expect(again.runs).toBe(0);
    });

    it('a changed interval: the sweep runs at start, then on the new interval', async () => {
      const store = await openStore();
      await oneStart(store, counting('reconcile', timingOfSweep({ every: '1d' })), true);
      expect(store.nextRun('reconcile')).toBeGreaterThan(Date.now() + 23 * HOUR);

      const shorter = counting('reconcile', timingOfSweep({ every: '15m' }));
      await oneStart(store, shorter, true);
      expect(shorter.runs).toBe(1);
      expect(store.nextRun('reconcile')).toBeLessThan(Date.now() + 16 * 60_000);
    });

    it('a sweep turned off, then on again: it runs at start, though its stored next run is ahead', async () => {
      const store = await openStore();
      const timing = timingOfSweep({ every: '1h' });
      await oneStart(store, counting('merge_watch', timing), true);
      expect(store.nextRun('merge_watch')).toBeGreaterThan(Date.now() + HOUR - 60_000);

      const off = counting('merge_watch', timing);
      off.enabled = false;
      await oneStart(store, off, false);
      expect(off.runs).toBe(0);

      const on = counting('merge_watch', timing);
      await oneStart(store, on, true);
      expect(on.runs).toBe(1);
    });
  });

  it('never runs a sweep twice at once: a trigger during a run joins it', async () => {
    const store = await openStore();
    await store.setNextRun('retries', undefined, Date.now() + HOUR);
    let release: () => void = () => undefined;
    const sweep = counting(
      'retries',
      timingOfSweep({ every: '1h' }),
      () => new Promise<void>((r) => (release = r)),
    );
    scheduler = createScheduler({ sweeps: [sweep], store });

    const first = scheduler.trigger('retries');
    const second = scheduler.trigger('retries');
    expect(scheduler.running()).toEqual(['retries']);
    release();
    await Promise.all([first, second]);

    expect(sweep.runs).toBe(1);
  });

  it('wake runs an idle sweep now, and a sweep woken during its run once more right after it', async () => {
    const store = await openStore();
    await store.setNextRun('merge_queue', undefined, Date.now() + HOUR);
    const releases: (() => void)[] = [];
    const sweep = counting(
      'merge_queue',
      timingOfSweep({ every: '1h' }),
      () => new Promise<void>((r) => releases.push(r)),
    );
    scheduler = createScheduler({ sweeps: [sweep], store });
    // Not started: a wake does nothing (the demo and `--once` drive the sweeps themselves).
    scheduler.wake('merge_queue');
    expect(sweep.runs).toBe(0);
    await scheduler.start();
    await settle();
    expect(sweep.runs).toBe(0);

    scheduler.wake('merge_queue');
    expect(sweep.runs).toBe(1);
    // Three wakes while it runs: one more run, after this one.
    scheduler.wake('merge_queue');
    scheduler.wake('merge_queue');
    scheduler.wake('merge_queue');
    expect(sweep.runs).toBe(1);
    releases.shift()!();
    await waitFor(() => sweep.runs === 2);
    releases.shift()!();
    await waitFor(() => scheduler?.running().length === 0);
    await settle();
    expect(sweep.runs).toBe(2);
    // A woken run sets the next periodic run from its start, as a timer's run does.
    expect(store.nextRun('merge_queue')).toBeGreaterThan(Date.now() + HOUR - 60_000);

    await scheduler.stop();
    scheduler.wake('merge_queue');
    expect(sweep.runs).toBe(2);
  });

  it('a wake during a run is news to that run (what it can leave to the next run, it leaves); a run nobody woke hears none', async () => {
    const store = await openStore();
    await store.setNextRun('merge_queue', undefined, Date.now() + HOUR);
    const releases: (() => void)[] = [];
    const news: AbortSignal[] = [];
    const sweep = counting('merge_queue', timingOfSweep({ every: '1h' }), (options) => {
      news.push(options.news!);
      return new Promise<void>((r) => releases.push(r));
    });
    scheduler = createScheduler({ sweeps: [sweep], store });
    await scheduler.start();
    scheduler.wake('merge_queue');
    expect(news).toHaveLength(1);
    expect(news[0]!.aborted).toBe(false);
    // Woken while it runs: the run hears it at once, and one more run follows.
    scheduler.wake('merge_queue');
    expect(news[0]!.aborted).toBe(true);
    releases.shift()!();
    await waitFor(() => news.length === 2);
    // The run that follows starts with no news; nobody wakes it, so it ends with none.
    expect(news[1]!.aborted).toBe(false);
    releases.shift()!();
    await waitFor(() => scheduler?.running().length === 0);
    expect(news[1]!.aborted).toBe(false);
    expect(sweep.runs).toBe(2);
  });

  it('stop asks a running sweep to stop and leaves it due for the next start', async () => {
    const store = await openStore();
    const due = Date.now() - HOUR;
    await store.setNextRun('rules', undefined, due);
    const sweep = counting('rules', timingOfSweep({ every: '1h' }), async ({ signal }) => {
      await new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve()));
    });
    scheduler = createScheduler({ sweeps: [sweep], store });
    await scheduler.start();
    await waitFor(() => sweep.runs === 1);

    await scheduler.stop();

    expect(sweep.signals[0]?.aborted).toBe(true);
    expect(store.nextRun('rules')).toBe(due);
  });

  it('a failing sweep still gets its next run, so a restart does not hammer it', async () => {
    const store = await openStore();
    const sweep = counting('reconcile', timingOfSweep({ every: '15m' }), async () => {
      throw new Error('the server is down');
    });
    const errors: unknown[] = [];
    scheduler = createScheduler({
      sweeps: [sweep],
      store,
      log: { info: () => undefined, warn: () => undefined, error: (obj) => errors.push(obj) },
    });

    await scheduler.trigger('reconcile');

    expect(errors).toMatchObject([{ sweep: 'reconcile' }]);
    expect(store.nextRun('reconcile')).toBeGreaterThan(Date.now() + 14 * 60_000);
  });

  it("records an ok run's last success under the sweep's name, where the status page reads it", async () => {
    const store = await openStore();
    const results: [string, string][] = [];
    const ok = counting('reconcile', timingOfSweep({ every: '15m' }));
    const attention: ScheduledSweep = {
      ...counting('retries', timingOfSweep({ every: '1m' })),
      resultOf: () => 'failed',
    };
    const broken = counting('hook_check', timingOfSweep({ every: '1h' }), async () => {
      throw new Error('the server is down');
    });
    scheduler = createScheduler({
      sweeps: [ok, attention, broken],
      store,
      onRun: (name, result) => results.push([name, result]),
    });
    const before = Date.now();

    for (const name of ['reconcile', 'retries', 'hook_check']) await scheduler.trigger(name);

    expect(results).toEqual([
      ['reconcile', 'ok'],
      ['retries', 'failed'],
      ['hook_check', 'failed'],
    ]);
    expect(store.lastSuccess('reconcile')).toBeGreaterThanOrEqual(before);
    expect([store.lastSuccess('retries'), store.lastSuccess('hook_check')]).toEqual([undefined, undefined]);
    // The status page reads it back by the same name: "Last success" is no longer "not yet".
    const status = collectStatus({
      store,
      rules: { state: () => ({ files: [], problems: [], refused: false }) },
      sweeps: ['reconcile', 'retries'],
    });
    expect(status.sweeps).toEqual([
      { name: 'reconcile', nextRun: store.nextRun('reconcile'), lastSuccess: store.lastSuccess('reconcile') },
      { name: 'retries', nextRun: store.nextRun('retries') },
    ]);
  });

  it("reads a run's result from its report, as hookbot sweep --once exits by it", () => {
    const rules = { sweep: 'rules' as const, dryRun: false, aborted: false, unpaused: [], projects: [] };
    const retries = {
      sweep: 'retries' as const,
      dryRun: false,
      aborted: false,
      due: 0,
      calls: [],
      counts: { done: 0, skipped: 0, failed: 0, ambiguous: 0, withdrawn: 0, 'dry-run': 0 },
      parkedNow: [],
      parked: 0,
    };
    expect(sweepRunResult({ ...rules, tripped: [] })).toBe('ok');
    expect(sweepRunResult({ ...rules, tripped: ['close stale'] })).toBe('paused');
    expect(
      sweepRunResult({
        ...rules,
        tripped: ['close stale'],
        projects: [{ project: 'acme/web', schedules: [], items: {}, pages: 1, rules: [], error: 'HTTP 500' }],
      }),
    ).toBe('failed');
    expect(sweepRunResult(retries)).toBe('ok');
    expect(sweepRunResult({ ...retries, parkedNow: [{ id: 'a', reason: 'gave up' }] })).toBe('failed');
    expect(sweepRunResult({ ...retries, aborted: true })).toBe('stopped');
  });
});
