/**
 * The six sweeps over one set of parts (client, store, rules, executor): what both the
 * scheduler's timers and `hookbot sweep --once` run. Each sweep is a plain async function in
 * sweeps/; this wires their dependencies once and resolves the projects they walk.
 */
import type { SweepName } from '../config/index.ts';
import { currentLogContext, runInNewLogContext } from '../ops/index.ts';
import type { StateStore } from '../state/index.ts';
import type { BreakerLimits } from './breaker.ts';
import { sweepJobId } from './job-id.ts';
import { runHookCheck, type HookCheckReport } from './sweeps/hook-check.ts';
import { createListedSnapshots } from './sweeps/listed-snapshot.ts';
import { runMergeQueue, type MergeQueueReport } from './sweeps/merge-queue.ts';
import { createTrainTails } from './sweeps/train-tail.ts';
import { runMergeWatch, type MergeWatchReport } from './sweeps/merge-watch.ts';
import { runReconcile, type ReconcileReport } from './sweeps/reconcile.ts';
import { runRetries, type RetryReport } from './sweeps/retries.ts';
import { runRuleSweep, type RuleSweepReport } from './sweeps/rule-sweep.ts';
import { quietLog, type SweepLog, type SweepRunOptions } from './types.ts';
import {
  type BotIdentity,
  createEchoBrake,
  createItemProcessor,
  createSnapshotReader,
  type EchoBrake,
  type EchoLimits,
  eventMatches,
  outsideItemRuns,
  type Executor,
  type ItemProcessorFn,
  type ItemRetryFn,
  type ProjectRules,
  type QueueEvents,
  type QueueMetricsSink,
  type SnapshotReader,
} from '../rules/index.ts';
import type { Client } from '../api/index.ts';
import type { BranchUpdater } from '../git/index.ts';

export type { SweepName };

/** In the order `hookbot sweep --once` runs them: finish old work first, then look for new. */
export const SWEEP_NAMES: readonly SweepName[] = [
  'retries',
  'merge_watch',
  'merge_queue',
  'rules',
  'reconcile',
  'hook_check',
];

export type SweepReport =
  RuleSweepReport | MergeWatchReport | MergeQueueReport | RetryReport | ReconcileReport | HookCheckReport;

export interface SweepSetDeps {
  client: Client;
  store: StateStore;
  rules: ProjectRules;
  /** The bot's executor (a dry-run one for `--dry-run`). */
  executor: Executor;
  /** Default: a reader over `client`. */
  reader?: SnapshotReader;
  /** The bot's own user: comment markers count only in its notes. */
  bot?: BotIdentity;
  /**
   * Default: the item processor of rules/item/process-item.ts over the same parts. One given with its
   * `retry` (createItemProcessor's) is also the retry sweep's, as the default one is.
   */
  processItem?: ItemProcessorFn & { retry?: ItemRetryFn };
  /** The echo brake shared with the hook runs (counts are per process); default: one over `store`. */
  brake?: EchoBrake;
  now?: () => number;
  log?: SweepLog;
  /** The merge queue's branch updater; absent: no git credentials, queued merge requests wait. */
  updater?: BranchUpdater;
  /** The merge queue clones over SSH (`ssh_url_to_repo`). */
  gitSsh?: boolean;
  /** Each evaluation's duration in the default item processor (metrics). */
  onEvaluated?: (seconds: number) => void;
  /** Where the merge queue tells its landings, removals, cars and rounds (explain, metrics). */
  queueEvents?: QueueEvents;
  /** Counts a merge request its rule took out of its queue, in the default item processor (metrics). */
  queueMetrics?: Pick<QueueMetricsSink, 'removed'>;
}

export interface SweepSettings {
  /** `hooks.projects`; empty: every project the bot's user can see. */
  projects: readonly string[];
  /** `scheduler.budget_per_rule`. */
  budget: number;
  breaker: BreakerLimits;
  /** `scheduler.breaker.echo_writes` and `echo_window`; default rules/item/echo-brake.ts's. */
  echo?: EchoLimits;
  /** How far reconciliation looks back the first time: its interval. */
  reconcileLookbackMs: number;
  /** `api.push_note_lag_ms`: how long a fork's approval settles before its head rides a train. */
  pushNoteLagMs?: number;
  hooks: { url: string | undefined; manage: boolean; token: string | undefined };
}

export interface SweepFilter extends SweepRunOptions {
  /** Only this `namespace/project`. */
  project?: string;
  /** Only this rule (rule sweep). */
  rule?: string;
  /** Scheduled rules run now, due or not. */
  force?: boolean;
  /** Rules treated as approved (a dry run previewing `--approve`). */
  assumeApproved?: ReadonlySet<string>;
}

export interface SweepSet {
  run(name: SweepName, filter?: SweepFilter): Promise<SweepReport>;
  /** The projects a run walks. */
  projects(filter?: Pick<SweepFilter, 'project'>): Promise<string[]>;
}

export function createSweepSet(deps: SweepSetDeps, settings: SweepSettings): SweepSet {
  const { client, store, rules, executor } = deps;
  const now = deps.now ?? (() => Date.now());
  const log = deps.log ?? quietLog;
  const reader =
    deps.reader ??
    createSnapshotReader(client, {
      now,
      ...(deps.bot ? { bot: deps.bot } : {}),
      watching: (itemKey) => store.watched().some((entry) => entry.itemKey === itemKey),
    });
  // A dry run records no decision either: it writes nothing to the store.
  const decisions = executor.dryRun ? { recordDecision: async () => undefined } : store;
  const processor = deps.processItem
    ? undefined
    : createItemProcessor({
        client,
        // A dry run records no decision and withdraws nothing.
        store: decisions,
        rules,
        executor,
        reader,
        now,
        log,
        brake:
          deps.brake ??
          createEchoBrake({ store, now, log, ...(settings.echo ? { limits: settings.echo } : {}) }),
        ...(deps.onEvaluated ? { onEvaluated: deps.onEvaluated } : {}),
        ...(deps.queueMetrics ? { queueMetrics: deps.queueMetrics } : {}),
      });
  const processItem: ItemProcessorFn = deps.processItem ?? processor!;
  const retryItem = processor?.retry ?? deps.processItem?.retry;
  const snapshots = createListedSnapshots(client, reader, deps.bot);
  const dryRun = executor.dryRun;

  async function projects(filter: Pick<SweepFilter, 'project'> = {}): Promise<string[]> {
    if (filter.project !== undefined) return [filter.project];
    if (settings.projects.length > 0) return [...settings.projects];
    const visible: string[] = [];
    for await (const project of client.projects.list({ archived: false })) {
      visible.push(project.path_with_namespace);
      // The server's own description: the sweep's snapshots need not read each project again.
      snapshots.rememberProject(project);
    }
    return visible;
  }

  /**
   * Does any rule of these projects listen to status changes, or queue merge requests (the merge
   * queue is woken by its heads' status hooks), so the hook needs build events?
   */
  function statusEvents(paths: readonly string[]): boolean {
    return paths.some((path) =>
      rules
        .forProject(path)
        .rules.some(
          (rule) =>
            rule.events?.some((pattern) => eventMatches(pattern, 'status.changed')) ||
            rule.actions.some((action) => action.name === 'queue'),
        ),
    );
  }

  // Runs started here rather than by the scheduler (`hookbot sweep --once`, the demo) get a job id
  // of their own, so their lines carry one too; the scheduler's runs already have theirs.
  let directRuns = 0;
  // What a merge train's run left to the next run of its queue when a wake came (train-tail.ts).
  const trainTails = createTrainTails();

  return {
    projects,
    run(name, filter = {}) {
      if (currentLogContext()?.job !== undefined) return runSweep(name, filter);
      const job = sweepJobId(name, now(), ++directRuns);
      // Outside any item run of the caller: the sweep's work on an item waits for it (executor/lock.ts).
      return outsideItemRuns(() => runInNewLogContext({ job }, () => runSweep(name, filter)));
    },
  };

  async function runSweep(name: SweepName, filter: SweepFilter): Promise<SweepReport> {
    const base: SweepRunOptions = {
      ...(filter.signal ? { signal: filter.signal } : {}),
      ...(filter.news ? { news: filter.news } : {}),
      ...(filter.onProgress ? { onProgress: filter.onProgress } : {}),
    };
    switch (name) {
      case 'rules':
        return runRuleSweep(
          { client, snapshots, store, rules, executor, now, log },
          {
            ...base,
            projects: await projects(filter),
            budget: settings.budget,
            breaker: settings.breaker,
            ...(filter.rule !== undefined ? { rule: filter.rule } : {}),
            ...(filter.force ? { force: true } : {}),
            ...(filter.assumeApproved ? { assumeApproved: filter.assumeApproved } : {}),
          },
        );
      case 'merge_watch':
        return runMergeWatch(
          { client, store, executor, processItem, now, log },
          { ...base, ...(filter.project !== undefined ? { projects: [filter.project] } : {}) },
        );
      case 'merge_queue':
        return runMergeQueue(
          {
            client,
            store,
            executor,
            updater: deps.updater,
            ssh: deps.gitSsh ?? false,
            processItem,
            now,
            log,
            ...(settings.pushNoteLagMs !== undefined ? { pushNoteLagMs: settings.pushNoteLagMs } : {}),
            ...(deps.queueEvents ? { events: deps.queueEvents } : {}),
            tails: trainTails,
          },
          { ...base, ...(filter.project !== undefined ? { projects: [filter.project] } : {}) },
        );
      case 'retries':
        return runRetries({ store, executor, now, log, ...(retryItem ? { retryItem } : {}) }, base);
      case 'reconcile': {
        const paths = await projects(filter);
        // Repository rules: each project's .hookbot.yml is looked at again (a push missed).
        if (rules.refresh)
          for (const path of paths)
            await rules
              .refresh(path)
              .catch((error: unknown) =>
                log.warn(
                  { sweep: 'reconcile', project: path, err: error },
                  'reconcile: cannot read the repository rules',
                ),
              );
        return runReconcile(
          { client, store, processItem, now, log },
          { ...base, projects: paths, lookbackMs: settings.reconcileLookbackMs, dryRun },
        );
      }
      case 'hook_check': {
        const paths = await projects(filter);
        return runHookCheck(
          { client, log },
          { ...base, projects: paths, ...settings.hooks, statusEvents: statusEvents(paths), dryRun },
        );
      }
    }
  }
}
