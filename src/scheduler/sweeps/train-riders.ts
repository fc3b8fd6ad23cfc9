/**
 * Whether a merge request may ride a car of a merge train (docs/merge-queue.md#merge-trains,
 * #outsiders-and-forks), from a fresh read of it: still open, into the same target, at the head the
 * train tested, at the head a member approved, and, for a fork's, only at an approved head. The
 * driver (merge-train.ts) takes out those that may not.
 */
import { isOpenState, type Client, type MergeRequest } from '../../api/index.ts';
import { changeAfter } from '../../rules/index.ts';
import type { QueueEntry } from '../../state/index.ts';

/**
 * How long a fork's approval settles before its head rides a car (`api.push_note_lag_ms`, this by
 * default). The server moves a merge request's head in its post-receive job a moment before it
 * writes the `Added N commits` note that says so (8.x `RefreshService`): a push made right after a
 * member's comment, evaluated in that gap, reads as the approved head. Before its first car, the
 * member's notes are read again once this long has passed since the approval, so such a push is seen
 * before the project's CI builds the fork's code (red team of issue 36). A server whose background
 * jobs lag more than this is the gap left (the landing still refuses it: it replays the comment).
 */
export const FORK_APPROVAL_SETTLE_MS = 10_000;

export type RiderVerdict =
  | { kind: 'rides' }
  /** Closed, merged, retargeted, its branch gone: out at once. */
  | { kind: 'gone'; why: string }
  /** Another head than the tested or approved one: out at once, evaluated again. */
  | { kind: 'pushed'; why: string }
  /** A fork's head nobody approved: out with one comment. */
  | { kind: 'unapproved'; why: string };

const short = (sha: string | undefined | null): string => (sha ? sha.slice(0, 7) : 'none');
const isFork = (entry: QueueEntry, mr: MergeRequest): boolean => mr.source_project_id !== entry.projectId;

/** A fork's member whose approval was recorded less than `settleMs` ago. */
export function forkSettling(
  entry: QueueEntry,
  mr: MergeRequest | undefined,
  now: number,
  settleMs: number,
): boolean {
  const at = entry.approval?.at;
  return mr !== undefined && isFork(entry, mr) && at !== undefined && now - at < settleMs;
}

/**
 * What the merge request `mr` (read now; undefined: gone) says of `entry` riding. `headWanted`: the
 * head its car merged, for a car already pushed; absent for a car about to be built, when a fork's
 * notes since its approval are read again (the last look before the project's CI builds it).
 */
export async function riderVerdict(
  client: { notes: Pick<Client['notes'], 'listMergeRequestNotes'> },
  entry: QueueEntry,
  mr: MergeRequest | undefined,
  headWanted?: string,
): Promise<RiderVerdict> {
  if (!mr) return { kind: 'gone', why: 'the merge request is gone (404)' };
  if (!isOpenState(mr.state)) return { kind: 'gone', why: `the merge request is ${mr.state}` };
  if (mr.target_branch !== entry.targetBranch)
    return { kind: 'gone', why: `its target branch is ${mr.target_branch} now` };
  if (!mr.sha) return { kind: 'gone', why: 'its source branch is gone' };
  if (headWanted !== undefined && mr.sha !== headWanted)
    return {
      kind: 'pushed',
      why: `pushed by someone else: the train tested ${short(headWanted)}, the branch is at ${short(mr.sha)}`,
    };
  const approved = entry.approval;
  if (approved !== undefined && approved.sha !== mr.sha)
    return {
      kind: 'pushed',
      why: `pushed after @${approved.by} approved ${short(approved.sha)}: now ${short(mr.sha)}`,
    };
  if (!isFork(entry, mr)) return { kind: 'rides' };
  // A fork's head is built in this project's CI only when a member approved that very head.
  if (approved === undefined)
    return {
      kind: 'unapproved',
      why: `its source branch is in another project (a fork): a merge train builds its cars in this project, whose CI (its secret variables, its runners) would run the fork's code, so a fork's merge request rides only at a head a developer approved by a comment (docs/merge-queue.md#outsiders-and-forks), and nobody approved ${short(mr.sha)}`,
    };
  if (headWanted === undefined)
    for await (const note of client.notes.listMergeRequestNotes(entry.projectId, entry.mrId)) {
      const change = changeAfter(note, approved.noteId);
      if (change)
        return {
          kind: 'pushed',
          why: `${change} came after @${approved.by} approved ${short(approved.sha)}`,
        };
    }
  return { kind: 'rides' };
}
