/**
 * The merge queue driver (docs/merge-queue.md): one merge request at a time per project, target
 * branch and queue name, each tested on top of the target's current head before it is merged.
 *
 * For the head of each queue, every run:
 *   1. re-reads the merge request (gone, closed or merged: out at once);
 *   2. not started yet: brings its source branch up to the target's head with the branch updater
 *      (src/git: a merge commit made without a working tree, pushed with a lease) and pins the
 *      pushed head, or the head as it is when it already holds the target (whose statuses are
 *      then read in the same run: no hook would come for statuses already in);
 *   3. started: the source head must still be the pinned one (a push by someone else: out at
 *      once); the required statuses of the pinned head are read: a failure, or a wait past the
 *      status timeout, takes it out with one comment; when all passed and the target has not moved,
 *      the merge is made through the executor pinned to that head (with its fresh re-evaluation: the
 *      rule must still hold); when the target moved, the branch is brought up again, at most
 *      `max_updates` times in all.
 * A merge request that leaves the queue lets the next one start in the same run.
 *
 * The push uses the bot's own credentials, so it is made only where the merge request's author could
 * push (queue-push-rule.ts: its own source branch in the target project, neither the default branch
 * nor a protected one, an author with developer access), asked before the update and again right
 * before the push; a fork's branch is never pushed (tested only when it already holds the target).
 * Steps that keep failing are counted on the entry and said on the status page, explain and, after a
 * while, in one comment (queue-trouble.ts).
 *
 * Comments and the merge are planned calls carried out by the executor (the only writer of the
 * API); the push is the updater's. merge-when-build-succeeds is never used: servers cancel it on
 * every push to the source branch.
 */
import type { QueueEntry } from '../../state/index.ts';
import { queueShape, queuesOf } from '../../state/index.ts';
import { messageOf, type SweepRunOptions } from '../types.ts';
import { type PlannedCall, noQueueEvents } from '../../rules/index.ts';
import { noteTrouble, clearTrouble } from './queue-trouble.ts';
import { driveTrain } from './merge-train.ts';
import { finishLeftTail } from './train-tail.ts';
import type { CarriedTail, TrainDeps, TrainStep } from './train-deps.ts';
import type { BranchUpdater } from '../../git/index.ts';
import { dismantleTrain } from './train-cleanup.ts';
import { emptyCounts, type MergeQueueReport, type QueueItemReport } from './merge-queue-report.ts';
import { pausedStep } from './queue-controls.ts';
import { queueExits } from './queue-exits.ts';
import { serialStep } from './serial-step.ts';

export type { MergeQueueReport } from './merge-queue-report.ts';
export type { MergeQueueDeps } from './merge-queue-deps.ts';
import type { MergeQueueDeps } from './merge-queue-deps.ts';

export interface MergeQueueOptions extends SweepRunOptions {
  projects?: readonly string[];
}

export async function runMergeQueue(
  deps: MergeQueueDeps,
  options: MergeQueueOptions = {},
): Promise<MergeQueueReport> {
  const { client, store, executor, log } = deps;
  const dryRun = executor.dryRun;
  const events = dryRun ? noQueueEvents : (deps.events ?? noQueueEvents);
  const wanted = options.projects && new Set(options.projects.map((p) => p.toLowerCase()));
  const groups = queuesOf(store.queued().filter((e) => !wanted || wanted.has(e.project.toLowerCase())));
  const report: MergeQueueReport = {
    sweep: 'merge_queue',
    dryRun,
    queues: groups.size,
    items: [],
    counts: emptyCounts(),
    aborted: false,
  };
  const exits = queueExits(deps, events);
  const { base, drop, pushedOut, remove, viaExecutor, cloneUrl } = exits;
  const step = serialStep(deps, events, exits);
  // The tails earlier runs left (train-tail.ts): the ones no train takes over in this run are
  // finished at its end.
  const tails = dryRun ? undefined : deps.tails;
  const tailsBefore = new Map(tails);
  const trainDeps = (updater: BranchUpdater): TrainDeps => ({
    client,
    store,
    updater,
    ...(deps.processItem ? { processItem: deps.processItem } : {}),
    now: deps.now,
    log,
    ...(deps.pushNoteLagMs !== undefined ? { pushNoteLagMs: deps.pushNoteLagMs } : {}),
    cloneUrl,
    remove: (entry, mr, code, why, at) => remove(entry, mr, code, why, at),
    drop,
    pushedOut,
    events,
    ...(tails ? { tails } : {}),
    ...(options.news ? { news: options.news } : {}),
  });

  for (const [key, queued] of groups) {
    let initial = queued;
    // Paused by an operator (queue-controls.ts): nothing is pushed, landed or taken out.
    const pausedHead = pausedStep(store, key, initial[0]!);
    if (pausedHead) {
      report.items.push(pausedHead);
      report.counts.waiting++;
      continue;
    }
    // The next merge request starts only when the one before left the queue, in the same run. The
    // queue is read again after each one that left: one pushed by someone else enters again at the
    // end during the run, and when the ones before it are merged it is the head, with no hook or
    // tick left to come for it (the bot's own merge wakes nothing). A dry run changes nothing, so
    // it walks the queue as it was. At most two steps per entry: a queue changing under the sweep
    // cannot hold it.
    // A merge train (depth or batch above 1, as the head asks): its own driver (merge-train.ts).
    // The queue's shape is the smallest depth and batch its entries ask (state/queue-order.ts).
    const shape = queueShape(initial);
    if (shape.train) {
      if (options.signal?.aborted) {
        report.aborted = true;
        break;
      }
      await train(key, initial);
      continue;
    }
    // A train that became serial: its cars are given up (train-cleanup.ts), its entries start afresh.
    if (!dryRun && initial.some((e) => e.car !== undefined || e.carCap !== undefined)) {
      await dismantleTrain({ updater: deps.updater, store, log }, initial, () =>
        cloneUrl(initial[0]!.projectId),
      );
      initial = queuesOf(store.queued()).get(key) ?? [];
    }
    if (!dryRun) events.round('serial');
    const limit = initial.length * 2 + 1;
    let entry: QueueEntry | undefined = initial[0];
    for (let steps = 1; entry !== undefined; steps++) {
      if (options.signal?.aborted) {
        report.aborted = true;
        break;
      }
      const current: QueueEntry = entry;
      // One run of the item at a time: its hook runs wait for the step, and the step for them.
      const item = await executor.runs
        .run(current.itemKey, async () => pausedStep(store, key, current) ?? step(current))
        .catch((error: unknown): QueueItemReport => ({
          ...base(current),
          outcome: 'error',
          detail: messageOf(error),
        }));
      push(item);
      // A queue that cannot move says so where people look (the status page, explain, one comment).
      if (!dryRun) {
        const tell = (body: string) => {
          const planned: PlannedCall = {
            action: 'comment',
            rule: current.rule,
            reason: 'merge queue: its steps keep failing',
            call: {
              op: 'notes.createMergeRequestNote',
              args: { project: current.projectId, merge_request_id: current.mrId, body },
            },
          };
          return viaExecutor(current, planned, { origin: 'merge_queue' });
        };
        await (
          item.outcome === 'error'
            ? noteTrouble({ store, now: deps.now, tell }, current, item.detail)
            : clearTrouble(store, current.itemKey)
        ).catch((error: unknown) =>
          log.warn(
            { sweep: 'merge_queue', itemKey: item.itemKey, err: messageOf(error) },
            'merge queue: could not record the state of its steps',
          ),
        );
      }
      if (!['merged', 'dropped', 'removed'].includes(item.outcome) || steps >= limit) break;
      entry = dryRun ? initial[steps] : queuesOf(store.queued()).get(key)?.[0];
    }
  }
  for (const [key, carried] of tailsBefore) if (tails?.get(key) === carried) await leftTail(key, carried);
  return report;

  /** A tail an earlier run left that no train took over in this run (train-tail.ts). */
  async function leftTail(key: string, carried: CarriedTail): Promise<void> {
    const updater = deps.updater;
    if (!updater) return;
    try {
      const steps = await executor.runs.run(`merge-train:${key}`, () =>
        tails?.get(key) === carried ? finishLeftTail(trainDeps(updater), carried) : Promise.resolve([]),
      );
      for (const one of steps) reportStep(one);
    } catch (error) {
      // Dropped, not tried at every run from now on (a target branch deleted would fail each time):
      // the queue's next landing run lists the folder, as after a restart.
      if (tails?.get(key) === carried) tails.delete(key);
      log.warn(
        { sweep: 'merge_queue', queue: key, err: messageOf(error) },
        'merge train: could not finish the tail an earlier run left; dropped',
      );
    }
  }

  /** A train's step in the report, and in the log. */
  function reportStep(one: TrainStep): void {
    push({
      ...base(one.entry),
      outcome: one.outcome,
      detail: one.detail,
      ...(one.statuses ? { statuses: one.statuses } : {}),
    });
  }

  function push(item: QueueItemReport): void {
    report.items.push(item);
    report.counts[item.outcome]++;
    if (item.outcome === 'error')
      log.warn({ sweep: 'merge_queue', itemKey: item.itemKey, err: item.detail }, 'merge queue: step failed');
    else log.info({ sweep: 'merge_queue', itemKey: item.itemKey, outcome: item.outcome }, item.detail);
  }

  async function train(key: string, initial: QueueEntry[]): Promise<void> {
    const head = initial[0]!;
    if (dryRun) {
      push({
        ...base(head),
        outcome: 'would-update',
        detail: `would drive the merge train of ${initial.length}`,
      });
      return;
    }
    const updater = deps.updater;
    let steps;
    try {
      if (!updater)
        throw new Error(
          'no git credentials are configured (git.password or git.ssh_key_file): the merge train cannot build cars',
        );
      // One driver per queue at a time (fleet-wide where the item runs are). It works from the queue
      // as the store holds it, read once it holds the lock: every replica's entries in the one order
      // (priority, then arrival), whichever replica received which hook, never a partial view it
      // would build cars from and then rebuild in another order when its view reloads.
      steps = await executor.runs.run(`merge-train:${key}`, async () => {
        await store.fleet?.reloadQueue();
        const queue = queuesOf(store.queued()).get(key) ?? [];
        const now = queueShape(queue);
        // Emptied, paused or serial meanwhile: the next run takes it as it is now.
        if (!now.train || pausedStep(store, key, queue[0]!)) return [];
        return driveTrain(trainDeps(updater), queue, now);
      });
    } catch (error) {
      steps = [{ entry: head, outcome: 'error' as const, detail: messageOf(error) }];
    }
    events.round('train');
    const errors = steps.filter((s) => s.outcome === 'error');
    for (const one of steps) reportStep(one);
    // A train that cannot move says so on its head, as the serial queue does.
    const front = queuesOf(store.queued()).get(key)?.[0];
    if (!front) return;
    const tell = (body: string) =>
      viaExecutor(
        front,
        {
          action: 'comment',
          rule: front.rule,
          reason: 'merge queue: its steps keep failing',
          call: {
            op: 'notes.createMergeRequestNote',
            args: { project: front.projectId, merge_request_id: front.mrId, body },
          },
        },
        { origin: 'merge_queue' },
      );
    await (
      errors.length > 0
        ? noteTrouble({ store, now: deps.now, tell }, front, errors[0]!.detail)
        : front.trouble
          ? clearTrouble(store, front.itemKey)
          : Promise.resolve()
    ).catch((error: unknown) =>
      log.warn(
        { sweep: 'merge_queue', itemKey: front.itemKey, err: messageOf(error) },
        'merge queue: could not record the state of its steps',
      ),
    );
  }
}
