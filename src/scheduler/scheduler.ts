/**
 * The scheduler: bree times the sweeps; the main thread does them.
 *
 * Why the work runs in the main thread and bree's workers only say "due": a sweep needs the state
 * store, the rule engine with the loaded rules, the executor and the API client (its connection
 * pool, its concurrency limit, its call counts). The store must have exactly one writer (its
 * journal and group commit live in this process's memory: state/store.ts), and the rules, the
 * executor's per-item locks and the client cannot be shared with a worker thread. A worker
 * holding its own copies would be a second writer and a second client, racing the receiver on
 * the same items. So each bree job is a few lines evaluated in a worker that posts `due` and
 * exits; the main thread's `workerMessageHandler` runs the sweep with the same engine, executor,
 * client and store as the hooks. A sweep is I/O-bound (API calls), so running it in the main
 * thread costs the receiver nothing but the short CPU slices of evaluation.
 *
 * Restart safety: the next run of each sweep lives in the store (`nextRun(name)`), set after
 * every run from the time it started. On start, each job's first tick is delayed until that time
 * (bree `timeout`), or fires at once when it is past: a sweep overdue by many intervals runs
 * once, not once per missed interval, and then keeps its period. A tick that comes while the
 * same sweep still runs is skipped (a sweep never overlaps itself); different sweeps may run at
 * the same time (the executor serialises calls per item).
 *
 * A next run holds only for the setting it was computed under: the sweep's timing and what else
 * the configuration says it does (`setting`: for the hook check, hooks.manage, hooks.url and the
 * projects). Beside the next run, the store keeps a fingerprint of that setting (`nextRun(name,
 * 'setting')`, a 48-bit hash of it where a time would be: the schedule's one row per sweep, so no
 * other table and no migration), written after each run with the next run. At start, a sweep whose
 * stored fingerprint is another setting's runs at once, on the new setting, whatever its stored
 * next run says: `hooks.manage: true` turned on after a first start installs the hooks at this
 * start, not up to an hour later; a shorter interval takes effect now. A sweep the configuration
 * turns off (`enabled: false`) is not timed, and its fingerprint is set to 0 (no setting's), so
 * that turned on again it runs at start. A next run stored without a fingerprint (by a version
 * that kept none, or moved by `hookbot state migrate`) is kept as it is until that sweep's run.
 *
 * Each run has a job id (sweepJobId), set as the log context of everything the run does: its
 * lines, the sweep's, the item processor's, the executor's and the API client's all carry `job`.
 *
 * Each run ends with a result (`SweepRunResult`: the sweep's `resultOf` reads its report). An `ok`
 * run records the sweep's last success in the store under the sweep's own name, the name the
 * status page reads it by (its "Last success" column); the result goes to `onRun` (metrics).
 */
import Bree from 'bree';
import { createHash } from 'node:crypto';
import { runInNewLogContext } from '../ops/index.ts';
import { outsideItemRuns } from '../rules/index.ts';
import type { StateStore } from '../state/index.ts';
import { sweepJobId } from './job-id.ts';

export { sweepJobId } from './job-id.ts';
import { describeTiming, nextRunAfter, type Timing } from './timing.ts';
import { quietLog, type SweepLog, type SweepRunOptions } from './types.ts';

/**
 * How a run ended: `ok` it finished and its report needs no one's attention; `paused` the circuit
 * breaker paused a scheduled rule; `failed` it threw, or its report has a failure; `stopped` it was
 * stopped before its end (the bot stopping).
 */
export type SweepRunResult = 'ok' | 'failed' | 'paused' | 'stopped';

export interface ScheduledSweep {
  /** The sweep's name (`reconcile`, `merge_watch`...): its key for its next run and last success. */
  name: string;
  timing: Timing;
  run(options: SweepRunOptions): Promise<unknown>;
  /** What the run's report says (summary.ts `sweepRunResult`). Default: `ok` once `run` returns. */
  resultOf?(report: unknown): SweepRunResult;
  /**
   * What the sweep does under this configuration, besides its timing (the hook check: whether it
   * manages the hooks, their URL, the projects). Changed since the stored next run was computed,
   * the sweep runs at start. Default: the timing alone counts.
   */
  setting?: string;
  /** false: the configuration turns it off (not timed; see above). Default true. */
  enabled?: boolean;
}

/** Where the fingerprint of a sweep's setting is kept: `nextRun(name, SETTING)`. */
const SETTING = 'setting';
/** The fingerprint of a sweep turned off: no setting's (fingerprints start at 1). */
const TURNED_OFF = 0;

/** A 48-bit fingerprint (1 to 2^48 - 1) of the sweep's timing and setting: a number the store keeps. */
function settingFingerprint(sweep: Pick<ScheduledSweep, 'timing' | 'setting'>): number {
  const text = `${describeTiming(sweep.timing)}\n${sweep.setting ?? ''}`;
  const value = Number.parseInt(createHash('sha256').update(text).digest('hex').slice(0, 12), 16);
  return value === TURNED_OFF ? 1 : value;
}

export interface SchedulerOptions {
  sweeps: readonly ScheduledSweep[];
  store: Pick<StateStore, 'nextRun' | 'setNextRun' | 'setLastSuccess' | 'fleet'>;
  now?: () => number;
  log?: SweepLog;
  /** Each finished run: its result, and its report when it returned one (metrics). */
  onRun?: (name: string, result: SweepRunResult, report: unknown) => void;
}

export interface Scheduler {
  /** Starts the timers (overdue sweeps fire at once). */
  start(): Promise<void>;
  /** Stops the timers, asks running sweeps to stop between two items, and waits for them. */
  stop(): Promise<void>;
  /** Runs a sweep now, unless it is running already; resolves when it is done. */
  trigger(name: string): Promise<void>;
  /**
   * Something happened that a sweep should act on soon (a hook about a queued merge request wakes
   * the merge queue): once started, the sweep runs now when it is idle, or once more as soon as
   * the run in progress ends (that run may have read the state before the news). Wakes during one
   * run make one more run, not one each. Nothing before start or after stop.
   */
  wake(name: string): void;
  /** Sweeps running now. */
  running(): string[];
}

/**
 * What each bree worker runs (a string, evaluated: no file to ship, nothing transpiled). It holds
 * no state and writes nothing; the main thread does the work.
 */
const TICK = "require('node:worker_threads').parentPort.postMessage('due')";

/** A tick this early (timer jitter, worker start) still counts as on time. */
const EARLY_TOLERANCE_MS = 5_000;

export function createScheduler(options: SchedulerOptions): Scheduler {
  const now = options.now ?? Date.now;
  const log = options.log ?? quietLog;
  const { store } = options;
  const enabled = options.sweeps.filter((sweep) => sweep.enabled !== false);
  const disabled = options.sweeps.filter((sweep) => sweep.enabled === false);
  const sweeps = new Map(enabled.map((sweep) => [sweep.name, sweep]));
  /** Sweeps whose stored next run was computed under another setting: due until they have run. */
  const settingChanged = new Set<string>();
  /**
   * Runs in progress: `controller` stops one (stop()), `news` tells it a wake came during it (another
   * run follows at once, so work that can wait is left to that one: SweepRunOptions.news).
   */
  const runs = new Map<string, { controller: AbortController; news: AbortController; done: Promise<void> }>();
  let bree: Bree | undefined;
  let stopping = false;
  /** Sweeps woken during their run: they run once more when it ends. */
  const wokenDuringRun = new Set<string>();

  /** The next run the sweep waits for: none (due now) when its setting changed since it was stored. */
  function storedNext(sweep: ScheduledSweep): number | undefined {
    return settingChanged.has(sweep.name) ? undefined : store.nextRun(sweep.name);
  }

  /** Runs started by this scheduler: the run number in job ids. */
  let runCount = 0;

  /**
   * One run, in its own log context: a new one, since a run may be started from anywhere (a test,
   * a command) and its lines belong to the job alone. Outside every item run too: a sweep woken by
   * a hook's item run (the merge queue) is not part of that run, and waits for it like any other
   * work on the item (rules/executor/lock.ts).
   */
  function runSweep(sweep: ScheduledSweep, controller: AbortController, news: AbortSignal): Promise<void> {
    const startedAt = now();
    const job = sweepJobId(sweep.name, startedAt, ++runCount);
    return outsideItemRuns(() =>
      runInNewLogContext({ job }, () => runSweepNow(sweep, controller, news, startedAt)),
    );
  }

  async function runSweepNow(
    sweep: ScheduledSweep,
    controller: AbortController,
    news: AbortSignal,
    startedAt: number,
  ): Promise<void> {
    let result: SweepRunResult;
    let report: unknown;
    try {
      log.info({ sweep: sweep.name }, 'sweep started');
      report = await sweep.run({ signal: controller.signal, news });
      result = controller.signal.aborted ? 'stopped' : (sweep.resultOf?.(report) ?? 'ok');
      log.info({ sweep: sweep.name, ms: now() - startedAt, result }, 'sweep finished');
    } catch (error) {
      // Its next run is still set below: a sweep that keeps failing must not spin after a restart.
      result = 'failed';
      log.error({ sweep: sweep.name, err: error }, 'sweep failed');
    }
    options.onRun?.(sweep.name, result, report);
    if (result === 'ok')
      await store.setLastSuccess(sweep.name, now()).catch((error: unknown) => {
        log.error({ sweep: sweep.name, err: error }, 'last success not stored');
      });
    // Stopped halfway: leave it due, so the next start does it again (redoing is harmless).
    if (controller.signal.aborted) return;
    const next = nextRunAfter(sweep.timing, startedAt);
    if (!Number.isFinite(next)) return;
    // Runs start from timers: nothing awaits them, so nothing here may reject. The next run first:
    // a crash between the two leaves the old fingerprint, and the sweep due at the next start.
    await store
      .setNextRun(sweep.name, undefined, next)
      .then(() => store.setNextRun(sweep.name, SETTING, settingFingerprint(sweep)))
      .then(() => settingChanged.delete(sweep.name))
      .catch((error: unknown) => {
        log.error({ sweep: sweep.name, err: error }, 'next run not stored');
      });
  }

  function trigger(name: string, fromTimer = false): Promise<void> {
    const sweep = sweeps.get(name);
    if (!sweep) return Promise.reject(new Error(`no sweep named ${name}`));
    const current = runs.get(name);
    if (current) {
      log.warn({ sweep: name }, 'sweep still running: this tick is skipped');
      return current.done;
    }
    if (stopping) return Promise.resolve();
    const next = storedNext(sweep);
    if (fromTimer && next !== undefined && next - now() > EARLY_TOLERANCE_MS) return Promise.resolve();
    const controller = new AbortController();
    const news = new AbortController();
    const done = (
      store.fleet
        ? runOnOneReplica(sweep, controller, news.signal, fromTimer)
        : runSweep(sweep, controller, news.signal)
    ).finally(() => runs.delete(name));
    runs.set(name, { controller, news, done });
    return done;
  }

  /**
   * Several replicas share the state (PostgreSQL): every replica's timer ticks, and the one that
   * takes the sweep's lease runs it; the others skip this tick. The lease expires if its holder
   * dies, and the next run time in the database is still past then, so the next tick of any
   * replica catches up. The schedule is read again under the lease: a replica whose tick comes
   * just after another one ran the sweep sees the new time and skips.
   */
  async function runOnOneReplica(
    sweep: ScheduledSweep,
    controller: AbortController,
    news: AbortSignal,
    fromTimer: boolean,
  ): Promise<void> {
    const fleet = store.fleet!;
    const lease = `sweep:${sweep.name}`;
    try {
      if (!(await fleet.tryLease(lease))) {
        log.info({ sweep: sweep.name }, 'sweep running on another replica: this tick is skipped');
        return;
      }
      await fleet.refresh();
    } catch (error) {
      log.warn({ sweep: sweep.name, err: error }, 'could not take the sweep lease: this tick is skipped');
      return;
    }
    try {
      const next = storedNext(sweep);
      if (fromTimer && next !== undefined && next - now() > EARLY_TOLERANCE_MS) return;
      await runSweep(sweep, controller, news);
    } finally {
      await fleet.releaseLease(lease).catch((error: unknown) => {
        log.warn(
          { sweep: sweep.name, err: error },
          'could not release the sweep lease (it expires by itself)',
        );
      });
    }
  }

  function wake(name: string): void {
    if (!bree || stopping || !sweeps.has(name)) return;
    const current = runs.get(name);
    if (!current) {
      void trigger(name);
      return;
    }
    // The run in progress hears of it (what it can leave to the next run, it leaves).
    current.news.abort();
    if (wokenDuringRun.has(name)) return;
    wokenDuringRun.add(name);
    // `done` settles after the run left `runs`: the wake then starts a new one.
    void current.done.then(() => {
      wokenDuringRun.delete(name);
      wake(name);
    });
  }

  function jobOf(sweep: ScheduledSweep): Bree.JobOptions {
    const fingerprint = store.nextRun(sweep.name, SETTING);
    if (fingerprint !== undefined && fingerprint !== settingFingerprint(sweep))
      settingChanged.add(sweep.name);
    const next = storedNext(sweep);
    const delay = next === undefined ? 0 : Math.max(0, next - now());
    log.info(
      {
        sweep: sweep.name,
        timing: describeTiming(sweep.timing),
        firstInMs: delay,
        ...(settingChanged.has(sweep.name) ? { settingChanged: true } : {}),
      },
      settingChanged.has(sweep.name)
        ? 'sweep scheduled: its setting changed since its next run was stored, so it runs now'
        : 'sweep scheduled',
    );
    if (sweep.timing.kind === 'every')
      return {
        name: sweep.name,
        path: TICK,
        worker: { eval: true },
        timeout: delay,
        interval: sweep.timing.ms,
      };
    // A cron sweep keeps its cron times; only an overdue one also fires once at start.
    return {
      name: sweep.name,
      path: TICK,
      worker: { eval: true },
      cron: sweep.timing.line,
      ...(next === undefined || next <= now() ? { timeout: 0 } : {}),
    };
  }

  return {
    async start() {
      if (bree) return;
      stopping = false;
      // Turned off: no setting's fingerprint, so that turned on again the sweep runs at start.
      for (const sweep of disabled)
        if (store.nextRun(sweep.name, SETTING) !== TURNED_OFF)
          await store.setNextRun(sweep.name, SETTING, TURNED_OFF).catch((error: unknown) => {
            log.error({ sweep: sweep.name, err: error }, 'a sweep turned off: its setting not stored');
          });
      bree = new Bree({
        root: false,
        doRootCheck: false,
        // Bree logs each worker's start and exit at info: per tick, noise. Problems still show.
        logger: {
          info: () => undefined,
          warn: (...args: unknown[]) => log.warn({ bree: args }, 'bree'),
          error: (...args: unknown[]) => log.error({ bree: args }, 'bree'),
        },
        errorHandler: (error, data) => log.error({ sweep: data.name, err: error }, 'sweep timer failed'),
        workerMessageHandler: ({ name, message }) => {
          if (message === 'due') void trigger(name, true);
        },
        jobs: enabled.map(jobOf),
      });
      await bree.start();
    },

    async stop() {
      stopping = true;
      await bree?.stop();
      bree = undefined;
      for (const run of runs.values()) run.controller.abort();
      await Promise.all([...runs.values()].map((run) => run.done));
    },

    trigger: (name) => trigger(name),
    wake,
    running: () => [...runs.keys()],
  };
}
