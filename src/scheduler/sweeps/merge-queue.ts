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
import type { QueueEntry, StateStore } from '../../state/index.ts';
import { queueShape, queuesOf } from '../../state/index.ts';
import { messageOf, type SweepLog, type SweepRunOptions } from '../types.ts';
import { counted } from '../../text/index.ts';
import {
  runOutbox as runQueued,
  toOutbox as queueOutbox,
  type CallReport,
  type Executor,
  type PlannedCall,
  type StatusBucket,
  type StoredCall,
  type ItemProcessorFn,
  type Trigger,
  noQueueEvents,
  type QueueEvents,
  type RemovalCode,
} from '../../rules/index.ts';
import { ApiError, isOpenState, type Client, type MergeRequest } from '../../api/index.ts';
import { requiredBuckets, sourceHead } from './head-statuses.ts';
import type { BranchUpdater } from '../../git/index.ts';
import { pushRefusal } from './queue-push-rule.ts';
import { noteTrouble, clearTrouble } from './queue-trouble.ts';
import { driveTrain } from './merge-train.ts';
import { dismantleTrain } from './train-cleanup.ts';
import { goneCode, serialLanded } from './queue-told.ts';
import { emptyCounts, type MergeQueueReport, type QueueItemReport } from './merge-queue-report.ts';
import { pausedStep } from './queue-controls.ts';

export type { MergeQueueReport } from './merge-queue-report.ts';

export interface MergeQueueDeps {
  client: {
    mergeRequests: Pick<Client['mergeRequests'], 'get'>;
    branches: Pick<Client['branches'], 'get'>;
    statuses: Pick<Client['statuses'], 'list'>;
    projects: Pick<Client['projects'], 'get'>;
    members: Pick<Client['members'], 'get' | 'getInGroup'>;
    notes: Pick<Client['notes'], 'listMergeRequestNotes'>;
  };
  store: Pick<StateStore, 'queued' | 'enqueue' | 'dequeue' | 'putAction' | 'getAction' | 'queueControls'>;
  executor: Executor;
  /** Absent: no git credentials are configured, and the queue cannot update branches. */
  updater: BranchUpdater | undefined;
  /** Clone over SSH (`ssh_url_to_repo`) rather than HTTP(S). */
  ssh?: boolean;
  /**
   * Evaluates a merge request again (the item processor), after someone else pushed to it: on its
   * new head its rule puts it back at the end of the queue, or not, whichever hook came first.
   */
  processItem?: ItemProcessorFn;
  now: () => number;
  log: SweepLog;
  /** How long a fork's approval settles before its head rides a train (merge-train.ts). */
  pushNoteLagMs?: number;
  /** Where each landing, removal, car and round is told (explain, metrics); default: nowhere. */
  events?: QueueEvents;
}

export interface MergeQueueOptions extends SweepRunOptions {
  projects?: readonly string[];
}

const short = (sha: string | undefined | null): string => (sha ? sha.slice(0, 7) : 'none');

/**
 * The comment that queued `entry`, to replay before its merge: with the head the queue pushed itself
 * from the approved one (the source branch brought up to the target), which is the bot's own work on
 * the approved head, not a change of the author's (rules/item/read-snapshot.ts `changedSince`).
 */
function replayed(entry: QueueEntry): Trigger {
  const { approval, pinnedSha } = entry;
  return {
    ...entry.trigger!,
    ...(approval && pinnedSha !== undefined && pinnedSha !== approval.sha
      ? { queueHead: { made: pinnedSha, from: approval.sha } }
      : {}),
  };
}

const REENTER =
  'It leaves the merge queue; it enters again at the end once the rule matches it again (push a fix, or remove and add the label again).';

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
  const urls = new Map<number, string>();

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
      await train(key, initial, shape);
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
      report.items.push(item);
      report.counts[item.outcome]++;
      if (item.outcome === 'error')
        log.warn(
          { sweep: 'merge_queue', itemKey: item.itemKey, err: item.detail },
          'merge queue: step failed',
        );
      else log.info({ sweep: 'merge_queue', itemKey: item.itemKey, outcome: item.outcome }, item.detail);
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
  return report;

  async function train(
    key: string,
    initial: QueueEntry[],
    shape: { depth: number; batch: number },
  ): Promise<void> {
    const head = initial[0]!;
    const push = (item: QueueItemReport) => {
      report.items.push(item);
      report.counts[item.outcome]++;
      if (item.outcome === 'error')
        log.warn(
          { sweep: 'merge_queue', itemKey: item.itemKey, err: item.detail },
          'merge queue: step failed',
        );
      else log.info({ sweep: 'merge_queue', itemKey: item.itemKey, outcome: item.outcome }, item.detail);
    };
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
      // One driver per queue at a time (fleet-wide where the item runs are).
      steps = await executor.runs.run(`merge-train:${key}`, () =>
        driveTrain(
          {
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
          },
          initial,
          shape,
        ),
      );
    } catch (error) {
      steps = [{ entry: head, outcome: 'error' as const, detail: messageOf(error) }];
    }
    events.round('train');
    const errors = steps.filter((s) => s.outcome === 'error');
    for (const one of steps)
      push({
        ...base(one.entry),
        outcome: one.outcome,
        detail: one.detail,
        ...(one.statuses ? { statuses: one.statuses } : {}),
      });
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

  function base(entry: QueueEntry): Pick<QueueItemReport, 'itemKey' | 'project' | 'queue' | 'targetBranch'> {
    return {
      itemKey: entry.itemKey,
      project: entry.project,
      queue: entry.queue,
      targetBranch: entry.targetBranch,
    };
  }

  async function drop(entry: QueueEntry, code: RemovalCode, why: string): Promise<QueueItemReport> {
    if (!dryRun) await store.dequeue(entry.itemKey);
    await events.dropped(entry, { code, reason: why });
    return { ...base(entry), outcome: 'dropped', detail: why };
  }

  /**
   * Out at once after a push by someone else, then evaluated again on the new head: it enters
   * again at the end if its rule still matches. Without this, the outcome would hang on the order
   * of two hooks: the merge request's own update evaluated before the drop would leave it out.
   */
  async function pushedOut(entry: QueueEntry, why: string): Promise<QueueItemReport> {
    const report = await drop(entry, 'pushed', why);
    if (dryRun || !deps.processItem) return report;
    const trigger: Trigger = { kind: 'merge_request', action: 'update', byBot: false };
    try {
      await deps.processItem({ type: 'merge_request', projectId: entry.projectId, id: entry.mrId }, [
        trigger,
      ]);
    } catch (error) {
      // Its own hook, or the reconcile sweep, evaluates it again later.
      log.warn(
        { sweep: 'merge_queue', itemKey: entry.itemKey, err: messageOf(error) },
        'merge queue: could not evaluate a merge request pushed by someone else again',
      );
    }
    const back = store.queued().find((one) => one.itemKey === entry.itemKey && !one.left);
    return back ? { ...report, detail: `${why}; it enters again at the end of the queue` } : report;
  }

  /**
   * Out with one comment. The entry stays as a memory of `at`, the head it left at (queue-order.ts
   * keeps it out of every queue): the rule, evaluated again on that head, does not put it back.
   */
  async function remove(
    entry: QueueEntry,
    mr: MergeRequest,
    code: RemovalCode,
    why: string,
    at: string,
    statuses?: Record<string, StatusBucket>,
  ): Promise<QueueItemReport> {
    if (dryRun) return { ...base(entry), outcome: 'removed', detail: `would remove: ${why}` };
    const {
      pinnedSha: _pinned,
      targetSha: _target,
      testingSince: _since,
      trouble: _trouble,
      car: _car,
      carCap: _cap,
      ...kept
    } = entry;
    const body = `Removed from the ${entry.queue} merge queue for \`${entry.targetBranch}\`: ${why}. ${REENTER}`;
    const planned: PlannedCall = {
      action: 'comment',
      rule: entry.rule,
      reason: `merge queue: ${why}`,
      call: {
        op: 'notes.createMergeRequestNote',
        args: { project: mr.project_id, merge_request_id: mr.id, body },
      },
    };
    // The comment is in the outbox before the entry is marked as left: a process killed between the
    // two writes leaves a comment the retry sweep sends and an entry the next run removes again (the
    // same comment then, which the executor finds posted and skips); the other order lost the comment.
    const id = await toOutbox(entry, planned, { origin: 'merge_queue' });
    // The approval it left with is remembered: only a new one (another comment) lets it in at `at`.
    const noteId = entry.approval?.noteId;
    await store.enqueue({
      ...kept,
      updates: 0,
      left: { at: deps.now(), sha: at, reason: why, ...(noteId !== undefined ? { noteId } : {}) },
    });
    const call = await runOutbox(id);
    const posted = call.status === 'done' || call.status === 'skipped';
    await events.removed(entry, { code, reason: why, comment: { body, posted } }, mr);
    return {
      ...base(entry),
      outcome: 'removed',
      detail: why,
      call,
      ...(statuses ? { statuses } : {}),
    };
  }

  /** A planned call carried out by the executor under its outbox id (a crash leaves it to the retry sweep). */
  async function viaExecutor(
    entry: QueueEntry,
    planned: PlannedCall,
    extra: Partial<StoredCall>,
  ): Promise<CallReport> {
    return runOutbox(await toOutbox(entry, planned, extra));
  }

  /** Puts a planned call in the outbox under its id (the retry sweep sends it if this process cannot). */
  function toOutbox(entry: QueueEntry, planned: PlannedCall, extra: Partial<StoredCall>): Promise<string> {
    return queueOutbox({ store, executor, now: deps.now }, entry.itemKey, {
      v: 1,
      planned,
      project: entry.project,
      trigger: { kind: 'merge_request', action: 'update', byBot: false },
      ...extra,
    });
  }

  function runOutbox(id: string): Promise<CallReport> {
    return runQueued({ store, executor, now: deps.now }, id);
  }

  async function cloneUrl(projectId: number): Promise<string> {
    const known = urls.get(projectId);
    if (known) return known;
    const project = (await client.projects.get(projectId)) as Record<string, unknown>;
    const url = project[deps.ssh ? 'ssh_url_to_repo' : 'http_url_to_repo'];
    if (typeof url !== 'string' || url === '') throw new Error(`project ${projectId} has no clone URL`);
    urls.set(projectId, url);
    return url;
  }

  async function step(entry: QueueEntry): Promise<QueueItemReport> {
    let mr: MergeRequest;
    try {
      mr = await client.mergeRequests.get(entry.projectId, entry.mrId);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        return drop(entry, 'gone', 'the merge request is gone (404)');
      throw error;
    }
    if (!isOpenState(mr.state)) return drop(entry, goneCode(mr, ''), `the merge request is ${mr.state}`);
    if (mr.target_branch !== entry.targetBranch)
      return drop(entry, 'target_changed', `its target branch is ${mr.target_branch} now`);
    const head = await sourceHead(client, mr);
    if (head === null) return drop(entry, 'gone', 'its source branch is gone');
    // A head a member approved (docs/rules.md#members-commands): another head than the approved one,
    // or than the queue's own push of it brought up to the target (`pinnedSha`), is a push after
    // the approval, which it does not cover; on a fork or not (a developer's push after a master's
    // command while she waited her turn: red team of issue 36).
    const approved = entry.approval;
    if (approved && head !== approved.sha && head !== entry.pinnedSha)
      return pushedOut(
        entry,
        `pushed after @${approved.by} approved ${short(approved.sha)}: now ${short(head)}`,
      );
    if (entry.pinnedSha === undefined) return update(entry, mr, head);
    if (head !== entry.pinnedSha)
      return pushedOut(
        entry,
        `pushed by someone else: the queue tested ${short(entry.pinnedSha)}, the branch is at ${short(head)}`,
      );
    return test(entry, mr, head, true);
  }

  /**
   * The pinned head's required statuses: out on a failure or past the timeout, waiting, or (all
   * passed) merged, or brought up again when the target moved (`mayUpdate`: not twice in one step).
   * `head` is the pinned sha.
   */
  async function test(
    entry: QueueEntry,
    mr: MergeRequest,
    head: string,
    mayUpdate: boolean,
  ): Promise<QueueItemReport> {
    const statuses = await requiredBuckets(client, mr, head, entry.required);
    const failed = Object.entries(statuses).filter(([, bucket]) => bucket === 'failed');
    if (failed.length > 0)
      return remove(
        entry,
        mr,
        'status_failed',
        `${failed.map(([name]) => name).join(', ')} failed on ${short(entry.pinnedSha)} (the source branch merged with ${entry.targetBranch} at ${short(entry.targetSha)})`,
        entry.pinnedSha!,
        statuses,
      );
    const waiting = Object.entries(statuses).filter(([, bucket]) => bucket !== 'passed');
    if (waiting.length > 0) {
      const since = entry.testingSince ?? deps.now();
      if (deps.now() - since >= entry.statusTimeoutMs)
        return remove(
          entry,
          mr,
          'status_timeout',
          `${waiting.map(([name, bucket]) => `${name} (${bucket})`).join(', ')} did not succeed on ${short(entry.pinnedSha)} within ${Math.round(entry.statusTimeoutMs / 1000)} s`,
          entry.pinnedSha!,
          statuses,
        );
      return {
        ...base(entry),
        outcome: 'waiting',
        statuses,
        detail: `waiting for ${waiting.map(([name, bucket]) => `${name} ${bucket}`).join(', ')} on ${short(entry.pinnedSha)}`,
      };
    }
    // Green on the pinned head. The target must still be what was merged into it.
    const target = (await client.branches.get(entry.projectId, entry.targetBranch)).commit.id;
    if (target !== entry.targetSha) {
      if (entry.updates >= entry.maxUpdates)
        return remove(
          entry,
          mr,
          'max_updates',
          `${entry.targetBranch} moved again after ${entry.updates} update${entry.updates === 1 ? '' : 's'} of the branch (max_updates)`,
          entry.pinnedSha!,
          statuses,
        );
      if (!mayUpdate)
        return {
          ...base(entry),
          outcome: 'waiting',
          statuses,
          detail: `${entry.targetBranch} moved to ${short(target)} meanwhile; brought up again next run`,
        };
      return update(entry, mr, head);
    }
    return merge(entry, mr, statuses);
  }

  async function update(entry: QueueEntry, mr: MergeRequest, head: string): Promise<QueueItemReport> {
    if (dryRun)
      return {
        ...base(entry),
        outcome: 'would-update',
        detail: `would bring ${mr.source_branch} up to ${entry.targetBranch}`,
      };
    if (!deps.updater)
      return {
        ...base(entry),
        outcome: 'error',
        detail:
          'no git credentials are configured (git.password or git.ssh_key_file): the queue cannot update branches',
      };
    if (entry.updates >= entry.maxUpdates)
      return remove(
        entry,
        mr,
        'max_updates',
        `${entry.targetBranch} moved ${counted(entry.updates, 'time')} while it was tested (max_updates)`,
        head,
      );
    // The bot pushes with its own power: only where the author could push (queue-push-rule.ts). A
    // fork's branch is never pushed; its merge request is tested when it already holds the target.
    const fork = mr.source_project_id !== entry.projectId;
    if (!fork) {
      const refused = await pushRefusal(client, mr);
      if (refused !== undefined) return remove(entry, mr, 'not_allowed', refused, head);
    }
    const targetUrl = await cloneUrl(entry.projectId);
    const sourceUrl = fork ? await cloneUrl(mr.source_project_id) : targetUrl;
    const outcome = await deps.updater.update({
      targetUrl,
      sourceUrl,
      sourceBranch: mr.source_branch,
      targetBranch: entry.targetBranch,
      expectedSourceSha: head,
      // Asked again right before the push: protection or membership may have changed meanwhile.
      beforePush: () => pushRefusal(client, mr),
    });
    switch (outcome.kind) {
      case 'up-to-date':
      case 'updated': {
        const pushed = outcome.kind === 'updated';
        const pinned: QueueEntry = {
          ...entry,
          pinnedSha: outcome.sha,
          targetSha: outcome.targetSha,
          testingSince: deps.now(),
          updates: entry.updates + (pushed ? 1 : 0),
        };
        await store.enqueue(pinned);
        if (pushed)
          return {
            ...base(entry),
            outcome: 'updated',
            detail: `pushed ${short(outcome.sha)} (${mr.source_branch} merged with ${entry.targetBranch} at ${short(outcome.targetSha)}); waiting for ${entry.required.join(', ')}`,
          };
        // Nothing pushed: its statuses may all be in already (no hook will come for them), so they
        // are read now, and a green head is merged in this run rather than at the next tick.
        const tested = await test(pinned, mr, outcome.sha, false);
        return tested.outcome === 'waiting'
          ? {
              ...tested,
              detail: `${mr.source_branch} already holds ${entry.targetBranch} at ${short(outcome.targetSha)}; ${tested.detail}`,
            }
          : tested;
      }
      case 'conflict':
        return remove(
          entry,
          mr,
          'conflict',
          `${mr.source_branch} conflicts with ${entry.targetBranch} at ${short(outcome.targetSha)} in ${outcome.files.map((f) => `\`${f}\``).join(', ')}`,
          head,
        );
      case 'moved':
        return pushedOut(
          entry,
          `pushed by someone else while the queue updated it${outcome.sha ? ` (now ${short(outcome.sha)})` : ''}`,
        );
      case 'missing':
        return drop(entry, 'gone', `the ${outcome.branch} branch is gone`);
      case 'not-pushed':
        return remove(
          entry,
          mr,
          'not_allowed',
          outcome.fork
            ? `its source branch \`${mr.source_branch}\` is in another project (a fork) and does not hold ${entry.targetBranch} at ${short(outcome.targetSha)}: the queue never pushes to a fork, it tests a fork's merge request only when its branch already holds the target (merge ${entry.targetBranch} into it and push)`
            : outcome.reason,
          head,
        );
      case 'refused':
        log.error(
          { sweep: 'merge_queue', itemKey: entry.itemKey, err: outcome.message },
          'merge queue: git refused the bot',
        );
        return remove(
          entry,
          mr,
          'push_refused',
          `the bot could not update the branch (${outcome.message})`,
          head,
        );
    }
  }

  async function merge(
    entry: QueueEntry,
    mr: MergeRequest,
    statuses: Record<string, StatusBucket>,
  ): Promise<QueueItemReport> {
    const sha = entry.pinnedSha!;
    if (dryRun)
      return { ...base(entry), outcome: 'would-merge', statuses, detail: `would merge at ${short(sha)}` };
    const planned: PlannedCall = {
      action: 'queue',
      rule: entry.rule,
      reason: `merge queue: ${entry.required.join(', ')} passed at ${short(sha)} on top of ${entry.targetBranch} at ${short(entry.targetSha)}`,
      call: {
        op: 'mergeRequests.merge',
        args: {
          project: mr.project_id,
          merge_request_id: mr.id,
          sha,
          ...(entry.removeSourceBranch !== undefined
            ? { should_remove_source_branch: entry.removeSourceBranch }
            : {}),
          ...(entry.mergeCommitMessage !== undefined
            ? { merge_commit_message: entry.mergeCommitMessage }
            : {}),
        },
      },
    };
    // Queued on a member's comment: the fresh check before the merge replays that comment (read
    // again, its author's access read again, no push after it), so a note-only rule still applies.
    const call = await viaExecutor(entry, planned, {
      required: entry.required,
      origin: 'merge_queue',
      ...(entry.trigger ? { trigger: replayed(entry) } : {}),
    });
    if (call.status === 'done') {
      await store.dequeue(entry.itemKey);
      await serialLanded(client, events, entry, mr, sha);
      return { ...base(entry), outcome: 'merged', statuses, call, detail: call.detail };
    }
    if (call.status === 'withdrawn' || call.status === 'skipped') {
      // The rule no longer holds, the head moved, or it was merged or closed by another hand.
      await store.dequeue(entry.itemKey);
      await events.dropped(entry, { code: 'rule_stopped', reason: call.detail }, mr);
      return { ...base(entry), outcome: 'dropped', statuses, call, detail: call.detail };
    }
    if (call.status === 'failed' && !call.retryable)
      return remove(
        entry,
        mr,
        'merge_refused',
        `the server refused the merge: ${call.detail}`,
        entry.pinnedSha!,
        statuses,
      );
    return {
      ...base(entry),
      outcome: 'waiting',
      statuses,
      call,
      detail: `merge not done: ${call.detail}; tried again next run`,
    };
  }
}
