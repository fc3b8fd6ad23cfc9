/**
 * Whether a push to a merge request's source branch came after a comment: the gate of merge-like
 * actions asks it of the comment that approves a merge (docs/rules.md#members-commands).
 *
 * The v3 API has no push events per merge request, but the server writes a system note on the
 * merge request for every push to its source branch (8.x `MergeRequests::RefreshService`,
 * `SystemNoteService.add_commits`): `Added 1 commit:`, `Added 3 commits:`, and `Added 0 commits:`
 * for a push that adds none (a reset to an older commit); 7.x wrote `Added 2 new commits:`. Note
 * ids grow with time, so such a note with an id greater than the comment's means the head changed
 * after the comment. Only system notes count: a person's comment cannot pose as one.
 */
const ADDED_COMMITS = /^\s*Added \d+ (?:new )?commits?\b/;

/** Whether `note` is the server's record of a push to the source branch made after note `after`. */
export function pushedAfter(note: { id: number; system: boolean; body: string }, after: number): boolean {
  return note.system && note.id > after && ADDED_COMMITS.test(note.body);
}
