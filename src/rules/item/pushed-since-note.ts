/**
 * Whether a merge request changed after a comment, in what its code or its target is: the gate of
 * merge-like actions asks it of the comment that approves a merge (docs/rules.md#members-commands).
 *
 * The v3 API has no push events per merge request, but the server writes system notes on the merge
 * request, and note ids grow with time:
 *
 * - for every push to its source branch while it is open (8.x `MergeRequests::RefreshService`,
 *   `SystemNoteService.add_commits`): `Added 1 commit:`, `Added 3 commits:` (early 8.x wrote
 *   `Added 0 commits:` for a push that adds none, a reset; the last 8.x releases write nothing then);
 *   7.x wrote `Added 2 new commits:`. The
 *   bot's own pushes (the merge queue bringing the source branch up to its target) do not count:
 *   they add the target's commits to the approved head, nothing of the author's;
 * - `Status changed to closed` / `reopened`: a push while it is closed leaves no note at all (the
 *   server refreshes open merge requests only), so a close after the comment may hide one;
 * - `Target branch changed from ...`: the comment approved a merge into another branch.
 *
 * - `Deleted source branch` / `Restored source branch`: the branch deleted and made again (at any
 *   commit: the last 8.x releases write no `Added` note then).
 *
 * Such a note with an id greater than the comment's means the comment does not speak of the merge
 * request as it is now (red team of issue 36: close, push, reopen; a retarget to a protected
 * branch). Only system notes count: a person's comment cannot pose as one. This is what a server
 * without merge request versions (before 8.12) leaves the bot; with versions, the head the comment
 * was written on is read from them (read-snapshot.ts `changedSince`), and of the notes only a
 * retarget counts.
 */
import { isBotUser, type BotIdentity } from '../engine/snapshot.ts';

const ADDED_COMMITS = /^\s*Added \d+ (?:new )?commits?\b/;
const CLOSED_OR_REOPENED = /^\s*Status changed to (?:closed|reopened)\b/;
const RETARGET_NOTE = /^\s*Target branch changed from\b/i;
const BRANCH_PRESENCE = /^\s*(?:Deleted|Restored) source branch\b/i;

/** What `changeAfter` says of a change of target branch. */
export const RETARGETED = 'a change of its target branch';

interface SystemNote {
  id: number;
  system: boolean;
  body: string;
  author?: { id?: number; username?: string };
}

/**
 * What changed the merge request after note `after`, in words (`a push to its source branch`...), or
 * undefined when `note` is no such change.
 */
export function changeAfter(note: SystemNote, after: number, bot?: BotIdentity): string | undefined {
  if (!note.system || note.id <= after) return undefined;
  if (ADDED_COMMITS.test(note.body))
    return note.author && isBotUser(bot, note.author) ? undefined : 'a push to its source branch';
  if (CLOSED_OR_REOPENED.test(note.body)) return 'a close or reopen';
  if (BRANCH_PRESENCE.test(note.body)) return 'a deletion or restore of its source branch';
  if (RETARGET_NOTE.test(note.body)) return RETARGETED;
  return undefined;
}
