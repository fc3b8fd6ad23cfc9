/**
 * The ways a merge request leaves a merge queue (docs/merge-queue.md#leaving-the-queue), shared by the
 * serial queue (serial-step.ts) and the train (merge-train.ts): out at once (`drop`), out after a push
 * by someone else and evaluated again (`pushedOut`), out with one comment and remembered at the head it
 * left at (`remove`); and the planned calls they make, through the executor's outbox.
 */
import type { QueueEntry } from '../../state/index.ts';
import {
  runOutbox as runQueued,
  toOutbox as queueOutbox,
  type CallReport,
  type PlannedCall,
  type StatusBucket,
  type StoredCall,
  type Trigger,
  type QueueEvents,
  type RemovalCode,
} from '../../rules/index.ts';
import type { MergeRequest } from '../../api/index.ts';
import { messageOf } from '../types.ts';
import type { QueueItemReport } from './merge-queue-report.ts';
import type { MergeQueueDeps } from './merge-queue-deps.ts';

const REENTER =
  'It leaves the merge queue; it enters again at the end once the rule matches it again (push a fix, or remove and add the label again).';

export interface QueueExits {
  base(entry: QueueEntry): Pick<QueueItemReport, 'itemKey' | 'project' | 'queue' | 'targetBranch'>;
  drop(entry: QueueEntry, code: RemovalCode, why: string): Promise<QueueItemReport>;
  pushedOut(entry: QueueEntry, why: string): Promise<QueueItemReport>;
  remove(
    entry: QueueEntry,
    mr: MergeRequest,
    code: RemovalCode,
    why: string,
    at: string,
    statuses?: Record<string, StatusBucket>,
  ): Promise<QueueItemReport>;
  viaExecutor(entry: QueueEntry, planned: PlannedCall, extra: Partial<StoredCall>): Promise<CallReport>;
  /** The project's clone URL (HTTP(S), or SSH where `ssh`), read once per run. */
  cloneUrl(projectId: number): Promise<string>;
}

export function queueExits(deps: MergeQueueDeps, events: QueueEvents): QueueExits {
  const { client, store, executor, log } = deps;
  const dryRun = executor.dryRun;
  const urls = new Map<number, string>();
  return { base, drop, pushedOut, remove, viaExecutor, cloneUrl };

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
      carAfter: _after,
      carsBefore: _before,
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
    // The comment is in the outbox before the entry is marked as left: a process killed after both
    // writes leaves a comment the retry sweep sends; killed between them, an entry the next run judges
    // again (the retry withdraws the comment: `queueExit`), removing it with its comment or not (a
    // retry of its car, say). The other order lost the comment.
    const id = await toOutbox(entry, planned, { origin: 'merge_queue', queueExit: true });
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
}
