import { z } from 'zod';
import { ACCESS_LEVELS, DEVELOPER_ACCESS, showAccess } from '../engine/access-levels.ts';
import { defineAction } from '../engine/define-action.ts';
import { mergeRequestTarget, skip } from '../engine/planned-call.ts';

/**
 * Takes the merge request out of its merge queue (docs/merge-queue.md#steering-the-queue). Made for
 * a member's `/hookbot dequeue` comment: on a comment it acts only when the commenter has developer
 * access or more (`commenters: anyone` waives that). On any other event the rule alone decides
 * (taking a merge request out merges nothing).
 */
export const dequeue = defineAction({
  name: 'dequeue',
  // A project's rules could let anyone who comments take others' merge requests out: the operator's call.
  inRepositories: 'operator',
  summary:
    "Takes the merge request out of its merge queue, remembered at its head (reason `dequeue_command`): a `queue` rule that still matches does not put it back at this head; a push, the rule matching anew (it stopped matching, then matched), or a member's new comment command lets it in. On a comment, only when the commenter has developer access or more ([Members' commands](#members-commands)), and only the head it was written on: a push, a close and reopen or a retarget after the comment voids it, and so does a member's `/hookbot queue` written after it that queued the merge request again; nothing when it is in no queue.",
  example: { commenters: 'members' },
  bareParams: {},
  params: z.strictObject({
    commenters: z.enum(['members', 'anyone']).optional().meta({
      description:
        '`members` (default): on a comment, only a commenter with developer access or more takes it out; `anyone`: any commenter the rule lets through',
    }),
  }),
  itemKinds: ['merge_request'],
  describe: (p) => `take out of its merge queue${p.commenters === 'anyone' ? ', whoever comments' : ''}`,
  plan: (p, { snapshot: mr }, { rule }) => {
    if (mr.kind !== 'merge_request') return [];
    if (mr.sha === null) return skip('the head commit is unknown');
    const trigger = mr.trigger;
    const comment = trigger.kind === 'note' && !trigger.system;
    if (comment && trigger.byBot) return skip("the comment is the bot's own");
    if (comment && p.commenters !== 'anyone') {
      const who = `@${trigger.actor?.username ?? 'someone'}`;
      if (trigger.actorAccess === undefined) return skip(`the access of ${who}, who commented, was not read`);
      if (trigger.actorAccess < DEVELOPER_ACCESS)
        return skip(
          `${who}, who commented, has ${trigger.actorAccess > 0 ? `${showAccess(trigger.actorAccess)} access` : 'no access'}: taking a merge request out of its queue asks ${showAccess(ACCESS_LEVELS.developer)} or more`,
        );
    }
    if (comment) {
      // A command speaks of the head it was written on: a push (a close and reopen, a retarget)
      // after it, and a replayed delivery of it would take out a head nobody asked to take out.
      const who = `@${trigger.actor?.username ?? 'someone'}`;
      if (trigger.changedSinceNote === undefined)
        return skip(`what changed the merge request after the comment of ${who} was not read`);
      if (trigger.changedSinceNote)
        return skip(
          `${trigger.changedSinceNote} came after the comment of ${who}: the command takes out only the head it was written on`,
        );
    }
    const by = comment && trigger.actor ? trigger.actor.username : `rule ${rule}`;
    const note = comment ? trigger.noteId : undefined;
    // When the server says the comment was written: a command older than the merge request's stay
    // in its queue speaks of an earlier stay (merge-queue-dequeue.ts).
    const noteAt = comment ? trigger.noteAt : undefined;
    return [
      {
        call: {
          op: 'mergeQueue.dequeue',
          args: {
            ...mergeRequestTarget(mr),
            sha: mr.sha,
            by,
            ...(note !== undefined ? { note } : {}),
            ...(noteAt !== undefined ? { noteAt } : {}),
          },
        },
        reason: comment
          ? `take out of its merge queue on the comment of @${by}`
          : 'take out of its merge queue',
      },
    ];
  },
});
