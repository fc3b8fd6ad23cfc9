/**
 * `mergeQueue.dequeue`: takes the merge request out of its merge queue on a member's command
 * (the `dequeue` action, docs/rules.md#dequeue). No API call: the entry stays as the memory of the
 * head it left at (reason code `dequeue_command`), so a queue rule that still matches does not put
 * it back at this head; a push, the rule matching anew, or a member's new queue command does. A
 * command older than the member's comment that queued the merge request, or written before its stay
 * in the queue began, takes nothing out (the action's plan already refuses one a push or a reopen
 * came after).
 */
import type { CallHandler } from '../types.ts';
import { done, skipped } from '../types.ts';
import { leaveAt } from '../queue-removal.ts';
import { argsKey } from './keys.ts';

export const mergeQueueDequeue: CallHandler<'mergeQueue.dequeue'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  effects: () => ['would take {items} out of its merge queue'],
  perform: async (ctx, call) => {
    const entry = ctx.store.queued().find((one) => one.itemKey === ctx.itemKey);
    if (!entry) return skipped('not in a merge queue');
    if (entry.left)
      return skipped(`not in a merge queue: it left the ${entry.queue} queue (${entry.left.reason})`);
    const a = call.args;
    // A member's command older than the comment that queued it (a replayed delivery of a command the
    // new approval answered): it speaks of an entry that is gone.
    if (a.note !== undefined && entry.approval !== undefined && a.note < entry.approval.noteId)
      return skipped(
        `the comment of @${a.by} is older than the comment of @${entry.approval.by} that queued it: it takes out nothing now`,
      );
    // A member's command written before this stay in the queue began (the server's time of the
    // comment against the entry's arrival): a replayed delivery of a command that took out an earlier
    // stay, the label since taken off and put back, which leaves no note to compare with.
    const written = a.noteAt === undefined ? NaN : Date.parse(a.noteAt);
    if (written < entry.enqueuedAt)
      return skipped(
        `the comment of @${a.by} (${new Date(written).toISOString()}) is older than this stay of the merge request in the ${entry.queue} queue (since ${new Date(entry.enqueuedAt).toISOString()}): it takes out nothing now`,
      );
    const reason = `taken out on the /hookbot dequeue command of @${a.by}`;
    const at = ctx.now();
    await leaveAt(ctx.store, entry, a.sha, reason, at);
    ctx.log.info(
      { itemKey: ctx.itemKey, queue: entry.queue, code: 'dequeue_command', by: a.by },
      `merge queue: removed: ${reason}`,
    );
    return done(`taken out of the ${entry.queue} queue for ${entry.targetBranch}`);
  },
};
