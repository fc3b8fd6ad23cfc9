/**
 * The checks every merge-like action shares, after Kodiak and marge-bot: act only on an open,
 * non-WIP merge request whose head commit is known, only on statuses of that very commit, and only
 * on the authority of a member (`mergeAuthority`).
 */
import { z } from 'zod';
import { DEVELOPER_ACCESS, showAccess } from '../engine/access-levels.ts';
import type { Authority } from '../engine/define-action.ts';
import type { Guarantee } from '../engine/define-condition.ts';
import type { EvalInput } from '../engine/eval-input.ts';
import type { Approval } from '../engine/planned-call.ts';
import type { MergeRequestSnapshot } from '../engine/snapshot.ts';
import { classifyStatus, type StatusBucket } from '../engine/status-buckets.ts';
import { isOpenState } from '../../api/index.ts';

/** Why the merge request cannot be merged at all, or undefined. */
export function mergeBlocker(mr: MergeRequestSnapshot): string | undefined {
  if (!isOpenState(mr.state)) return `the merge request is ${mr.state}`;
  if (mr.work_in_progress) return 'the merge request is work in progress';
  if (mr.sha === null) return 'the head commit is unknown';
  if (mr.merge_status === 'cannot_be_merged') return 'the merge request has conflicts (cannot_be_merged)';
  return undefined;
}

/** Required status names of the rule's `statuses` conditions with `state` that held. */
export function requiredStatuses(
  guarantees: readonly Guarantee[],
  state: Guarantee['state'],
): string[] | undefined {
  const names = new Set<string>();
  for (const guarantee of guarantees)
    if (guarantee.kind === 'statuses' && guarantee.state === state)
      for (const name of guarantee.required) names.add(name);
  return names.size > 0 ? [...names] : undefined;
}

/** Each required status of the head commit, by bucket. */
export function bucketsOf(mr: MergeRequestSnapshot, required: readonly string[]): Map<string, StatusBucket> {
  return new Map(required.map((name) => [name, classifyStatus(mr.statuses?.find((s) => s.name === name))]));
}

/** The `authors` parameter of merge-like actions: `members` (the gate, by default) or `anyone`. */
export const authorsSchema = z.enum(['members', 'anyone']).optional().meta({
  description:
    "`members` (default): only for an author with developer access, or on a member's comment command; `anyone`: no such gate (docs/rules.md#members-commands)",
});

/** The check of `authors: members` for an action's compiled parameters, or none for `anyone`. */
export function authorityOf(
  authors: 'members' | 'anyone' | undefined,
): ((input: EvalInput) => Authority) | undefined {
  if (authors === 'anyone') return undefined;
  return (input) =>
    input.snapshot.kind === 'merge_request'
      ? mergeAuthority(input.snapshot)
      : { ok: false, reason: 'not a merge request' };
}

const GATE_DOC = 'docs/rules.md#members-commands';

/** Why a note trigger does not approve the head, or the approval it gives. */
function commentApproval(mr: MergeRequestSnapshot): Approval | string | undefined {
  const trigger = mr.trigger;
  if (trigger.kind !== 'note' || !trigger.actor) return undefined;
  const who = `@${trigger.actor.username}`;
  if (trigger.system) return undefined;
  if (trigger.byBot) return `the comment is the bot's own: the bot's power is no authority of its own`;
  if (trigger.actorAccess === undefined) return `the access of ${who}, who commented, was not read`;
  if (trigger.actorAccess < DEVELOPER_ACCESS)
    return `${who}, who commented, has ${accessText(trigger.actorAccess)}: a comment approves only from a member with developer access or more`;
  if (trigger.changedSinceNote === undefined)
    return `whether a push came after the comment of ${who} was not read`;
  if (trigger.changedSinceNote) return staleComment(trigger.changedSinceNote, who);
  if (mr.sha === null || trigger.noteId === undefined) return 'the head commit is unknown';
  return { by: trigger.actor.username, level: trigger.actorAccess, noteId: trigger.noteId, sha: mr.sha };
}

/** A comment the merge request changed after: it approves nothing of it now. */
const staleComment = (change: string, who: string): string =>
  `${change} came after the comment of ${who}: the comment approves an older head, not this one; a member comments again on the new head`;

const accessText = (level: number): string => (level > 0 ? `${showAccess(level)} access` : 'no access');

/**
 * The default gate of `merge`, `merge_when_build_succeeds` and `queue` (docs/rules.md#members-commands):
 * the bot merges with its own power (a master's, often), so it does so only on the authority of a
 * member who could decide it: (a) the merge request's author has developer access or more to the
 * target project, or (b) the evaluation's trigger is a comment, confirmed through the API, whose
 * author has developer access or more, and no push to the source branch came after it. A label is
 * no such proof: a server may let an author label her own merge request, the bot's own rules may
 * label it, and the v3 API cannot say who set a label. (b) is preferred when both hold, so that the
 * approval (who, which note, which head) is recorded. `authors: anyone` waives it (`authorityOf`).
 */
export function mergeAuthority(mr: MergeRequestSnapshot): Authority {
  const byComment = commentApproval(mr);
  if (typeof byComment === 'object') return { ok: true, by: 'comment', approval: byComment };
  // An evaluation a comment set off stands on that comment: changed after it (a push, a close and
  // reopen, a retarget), the rule's facts about the comment speak of an older merge request, so
  // not even its author's own access lets it through (a master's command replayed on a developer's
  // later push, red team of issue 36). The author comments again, or her label rule decides.
  const trigger = mr.trigger;
  if (
    trigger.kind === 'note' &&
    !trigger.system &&
    !trigger.byBot &&
    trigger.changedSinceNote &&
    trigger.actor
  )
    return {
      ok: false,
      reason: `${staleComment(trigger.changedSinceNote, `@${trigger.actor.username}`)} (${GATE_DOC})`,
    };
  const level = mr.authorAccess;
  if (level !== undefined && level >= DEVELOPER_ACCESS) return { ok: true, by: 'author' };
  const author = `its author ${mr.author.username}`;
  const project = mr.project.path_with_namespace;
  const seen =
    level === undefined
      ? `the access of ${author} to ${project} was not read`
      : `${author} has ${accessText(level)} to ${project}, less than developer`;
  if (byComment !== undefined) return { ok: false, reason: `${seen}, and ${byComment} (${GATE_DOC})` };
  return {
    ok: false,
    reason: `${seen}: a label is no proof that a member decided (a server may let an author label her own merge request, and the bot's own rules may label it); a comment command by a member with developer access, such as /hookbot merge where a rule takes it, is needed (${GATE_DOC})`,
  };
}
