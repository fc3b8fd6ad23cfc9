/**
 * One step of the serial merge queue's head (docs/merge-queue.md#what-happens-to-the-head-of-a-queue):
 * re-read it; not started: bring its source branch up to the target (the branch updater, only where
 * its author could push: queue-push-rule.ts) and pin the head; started: the pinned head's required
 * statuses decide: out on a failure or past the timeout, brought up again when the target moved (at
 * most `max_updates`), merged through the executor pinned to that head when all passed.
 */
import type { QueueEntry } from '../../state/index.ts';
import { counted } from '../../text/index.ts';
import type { PlannedCall, StatusBucket, Trigger, QueueEvents } from '../../rules/index.ts';
import { ApiError, isOpenState, type MergeRequest } from '../../api/index.ts';
import { requiredBuckets, sourceHead } from './head-statuses.ts';
import { pushRefusal } from './queue-push-rule.ts';
import { goneCode, serialLanded } from './queue-told.ts';
import type { QueueItemReport } from './merge-queue-report.ts';
import type { MergeQueueDeps } from './merge-queue-deps.ts';
import type { QueueExits } from './queue-exits.ts';

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

/** The serial queue's step for the head of a queue. */
export function serialStep(
  deps: MergeQueueDeps,
  events: QueueEvents,
  exits: QueueExits,
): (entry: QueueEntry) => Promise<QueueItemReport> {
  const { client, store, executor, log } = deps;
  const dryRun = executor.dryRun;
  const { base, drop, pushedOut, remove, viaExecutor, cloneUrl } = exits;
  return step;

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
