/**
 * `mergeQueue.enqueue`: Puts the merge request in its merge queue (docs/merge-queue.md). No API call:
 * the queue lives in the store, and the merge queue driver (scheduler) takes it from there. Made again
 * on every evaluation that plans it: a merge request already in that queue keeps its place (and its
 * progress), a changed priority or option is taken over; one in another queue moves. One the queue
 * took out with a comment does not enter again at the head it left at (it would loop: test, fail,
 * enter, test...), only after a push, once the rule stopped matching and matches again, or on a new
 * approval (a member's comment other than the one it left with: docs/rules.md#members-commands).
 *
 * Queued on a member's comment, the entry keeps the approval (who, level, note, head) and the note
 * trigger of the evaluation: the queue's merge is checked again under that trigger.
 */
import type { QueueEntry } from '../../../state/index.ts';
import { commentTrigger } from '../comment-trigger.ts';
import type { CallHandler } from '../types.ts';
import { done, skipped } from '../types.ts';
import { argsKey } from './keys.ts';

/**
 * Why the merge request does not enter again, from the queue's memory alone (`entries`, the store's):
 * taken out with a comment at this very head, with no new approval. Undefined: it enters. The
 * handler says it on the bot; `simulate` and `plan` say the same from the bot's state (issue 37).
 */
export function notQueuedAgain(
  entries: readonly QueueEntry[],
  itemKey: string,
  args: { sha: string; approval?: { noteId: number } | undefined },
): string | undefined {
  const found = entries.find((entry) => entry.itemKey === itemKey);
  const newApproval = args.approval !== undefined && args.approval.noteId !== found?.left?.noteId;
  if (!found?.left || found.left.sha !== args.sha || newApproval) return undefined;
  return `not queued again: it left the ${found.queue} queue at ${args.sha.slice(0, 7)} (${found.left.reason}); a push, the rule matching anew, or a member's new comment command lets it in`;
}

export const mergeQueueEnqueue: CallHandler<'mergeQueue.enqueue'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  effects: (call) => [
    `would put {items} in the merge queue ${call.args.queue} for ${call.args.target_branch}`,
  ],
  dryRun: (store, itemKey, call) => {
    const why = notQueuedAgain(store.queued(), itemKey, call.args);
    return why === undefined ? undefined : skipped(why);
  },
  perform: async (ctx, call) => {
    const a = call.args;
    const found = ctx.store.queued().find((entry) => entry.itemKey === ctx.itemKey);
    const why = notQueuedAgain(ctx.store.queued(), ctx.itemKey, a);
    if (why !== undefined) return skipped(why);
    const trigger = commentTrigger(ctx.stored.trigger);
    // Taken out at another head: a push came since, it enters at the end as new.
    const held = found?.left ? undefined : found;
    const same =
      held !== undefined &&
      held.project === a.project_path &&
      held.targetBranch === a.target_branch &&
      held.queue === a.queue;
    const kept = same && held.approval?.sha === a.sha ? held.approval : undefined;
    const approval =
      a.approval === undefined
        ? kept
        : {
            ...a.approval,
            at: kept?.noteId === a.approval.noteId && kept.at !== undefined ? kept.at : ctx.now(),
          };
    const wanted: QueueEntry = {
      itemKey: ctx.itemKey,
      project: a.project_path,
      projectId: a.project,
      mrId: a.merge_request_id,
      iid: a.iid,
      targetBranch: a.target_branch,
      queue: a.queue,
      rule: ctx.stored.planned.rule,
      priority: a.priority,
      enqueuedAt: same ? held.enqueuedAt : ctx.now(),
      required: a.required,
      statusTimeoutMs: a.status_timeout_ms,
      maxUpdates: a.max_updates,
      ...(a.depth !== undefined ? { depth: a.depth } : {}),
      ...(a.depth_auto !== undefined ? { depthAuto: { ...a.depth_auto } } : {}),
      ...(a.batch !== undefined ? { batch: a.batch } : {}),
      ...(a.retries !== undefined ? { retries: a.retries } : {}),
      ...(a.should_remove_source_branch !== undefined
        ? { removeSourceBranch: a.should_remove_source_branch }
        : {}),
      ...(a.merge_commit_message !== undefined ? { mergeCommitMessage: a.merge_commit_message } : {}),
      // The head's progress stays: the evaluation that follows the queue's own push plans this again.
      ...(same && held.pinnedSha !== undefined ? { pinnedSha: held.pinnedSha } : {}),
      ...(same && held.targetSha !== undefined ? { targetSha: held.targetSha } : {}),
      ...(same && held.testingSince !== undefined ? { testingSince: held.testingSince } : {}),
      updates: same ? held.updates : 0,
      // A train's progress stays too: the car it rides in and its bisection cap (the train driver).
      ...(same && held.car !== undefined ? { car: held.car } : {}),
      ...(same && held.carCap !== undefined ? { carCap: held.carCap } : {}),
      ...(same && held.carAfter !== undefined ? { carAfter: held.carAfter } : {}),
      // And the window of a `depth: auto` train: the queue's, not this evaluation's.
      ...(same && held.trainWindow !== undefined ? { trainWindow: held.trainWindow } : {}),
      // Whose decision queued it: this evaluation's comment (replayed before its merge), and the
      // approval of the head: a member's approval of this very head stays when another rule plans
      // it again without a comment (a developer's label rule on her own fork: a merge train carries
      // a fork's head only with one), and goes with a new head.
      ...(approval !== undefined ? { approval } : {}),
      ...(trigger !== undefined ? { trigger } : {}),
    };
    if (same) {
      const next: QueueEntry = { ...held, ...wanted };
      if (wanted.approval === undefined) delete next.approval;
      if (wanted.trigger === undefined) delete next.trigger;
      if (JSON.stringify(held) === JSON.stringify(next))
        return skipped(`already in the ${a.queue} queue for ${a.target_branch}`);
    }
    await ctx.store.enqueue(wanted);
    // Back after the queue took it out with a comment: said, for explain's story of the queue.
    const back = found?.left ? ` (it had left at ${found.left.sha.slice(0, 7)}: ${found.left.reason})` : '';
    return done(
      same
        ? `queue entry updated (${a.queue} for ${a.target_branch})`
        : `queued ${back ? 'again ' : ''}in ${a.queue} for ${a.target_branch}${back}`,
    );
  },
};
