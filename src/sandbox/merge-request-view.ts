/**
 * The merge request as the API answers it (docs/api-v3.md#merge-request), seen by one user, and what
 * its branches hold (the commits and the diff it brings), read from the real git repositories.
 */
import type { GitCommit, SandboxContext } from './context.ts';
import type { MergeRequestRec, UserRec } from './db.ts';
import { isSubscribed } from './issuables.ts';
import { commitListView } from './routes/commits.ts';
import { milestoneView, userSummaryMr } from './views.ts';

/** Real 8.x `MergeRequest::WIP_REGEX`: a title starting with `WIP:`, `[WIP]` or `WIP ` marks work in progress. */
const WIP = /^\s*(\[WIP\]\s*|WIP:\s*|WIP\s+)+\s*/i;

export function isWorkInProgress(mr: Pick<MergeRequestRec, 'title'>): boolean {
  return WIP.test(mr.title);
}

/** Bumped each time a merge request's `merge_status` goes stale (a push to one of its branches). */
const staleness = new WeakMap<MergeRequestRec, number>();

/**
 * `merge_status` is worked out when it is first needed after a change, not on every push (8.x marks
 * it `unchecked` when a branch moves and checks it later): a push to a target branch with many open
 * merge requests costs no merge at all until one of them is read. Whoever reads it (the API's view,
 * a payload, a merge) calls `checkMergeStatus` first, so nobody sees `unchecked`.
 */
export function markUnchecked(mr: MergeRequestRec): void {
  staleness.set(mr, (staleness.get(mr) ?? 0) + 1);
  mr.merge_status = 'unchecked';
}

/** Works out an open merge request's `merge_status` when it is `unchecked` (a real three-way merge, nothing written). */
export async function checkMergeStatus(ctx: SandboxContext, mr: MergeRequestRec): Promise<void> {
  const open = mr.state === 'opened' || mr.state === 'reopened';
  if (!open || mr.merge_status !== 'unchecked') return;
  const generation = staleness.get(mr) ?? 0;
  const clean = await ctx.git.canMerge(
    mr.target_project_id,
    mr.target_branch,
    mr.source_project_id,
    mr.source_branch,
  );
  // A push while the merge was tried made this answer stale: it stays unchecked for the next reader.
  if ((staleness.get(mr) ?? 0) !== generation || mr.merge_status !== 'unchecked') return;
  mr.merge_status = clean ? 'can_be_merged' : 'cannot_be_merged';
  ctx.db.changed();
}

/** The source branch's head commit, or undefined once the branch is gone. */
export function sourceHead(ctx: SandboxContext, mr: MergeRequestRec): Promise<GitCommit | undefined> {
  return ctx.git.branch(mr.source_project_id, mr.source_branch);
}

/**
 * What the merge request brings: its commits (newest first) and its diff. A merged one is read
 * from its merge commit (its first parent against the source head it merged), since the branches
 * have moved on or gone; a closed one whose branch is gone from the head it had when it closed.
 */
export async function mergeRequestChanges(
  ctx: SandboxContext,
  mr: MergeRequestRec,
  options: { diffs?: boolean } = {},
) {
  if (mr.state === 'merged' && mr.merge_commit_sha && mr.last_head_sha)
    return ctx.git.compare(
      mr.target_project_id,
      `${mr.merge_commit_sha}^1`,
      mr.target_project_id,
      mr.last_head_sha,
      options,
    );
  const head = (await sourceHead(ctx, mr))?.id ?? mr.last_head_sha;
  if (!head) return { commits: [], diffs: [], mergeBase: undefined };
  return ctx.git.compare(mr.target_project_id, mr.target_branch, mr.source_project_id, head, options);
}

/**
 * Votes: the stored counts plus, as 8.x counts award emoji, one per user whose comment is only a
 * thumbs up (`+1`, `:+1:`, `:thumbsup:`) or down.
 */
function votes(ctx: SandboxContext, mr: MergeRequestRec) {
  const up = new Set<number>();
  const down = new Set<number>();
  for (const note of ctx.db.data.notes) {
    if (note.noteable_type !== 'MergeRequest' || note.noteable_id !== mr.id || note.system) continue;
    const body = note.body.trim();
    if (/^(\+1|:\+1:|:thumbsup:)$/.test(body)) up.add(note.author_id);
    if (/^(-1|:-1:|:thumbsdown:)$/.test(body)) down.add(note.author_id);
  }
  return { upvotes: mr.upvotes + up.size, downvotes: mr.downvotes + down.size };
}

export async function mergeRequestView(ctx: SandboxContext, mr: MergeRequestRec, viewer: UserRec) {
  await checkMergeStatus(ctx, mr);
  const open = mr.state === 'opened' || mr.state === 'reopened';
  const head = open ? (await sourceHead(ctx, mr))?.id : undefined;
  return {
    id: mr.id,
    iid: mr.iid,
    project_id: mr.project_id,
    title: mr.title,
    description: mr.description,
    state: mr.state,
    created_at: mr.created_at,
    updated_at: mr.updated_at,
    target_branch: mr.target_branch,
    source_branch: mr.source_branch,
    ...votes(ctx, mr),
    author: userSummaryMr(ctx, mr.author_id),
    assignee: userSummaryMr(ctx, mr.assignee_id),
    source_project_id: mr.source_project_id,
    target_project_id: mr.target_project_id,
    // Real 8.x `label_names` come ordered by title.
    labels: [...mr.labels].sort((a, b) => a.localeCompare(b)),
    work_in_progress: isWorkInProgress(mr),
    milestone: milestoneView(ctx, mr.milestone_id),
    merge_when_build_succeeds: mr.merge_when_build_succeeds,
    merge_status: mr.merge_status,
    // Not among the documented fields of docs/api-v3.md#merge-request; later 8.x servers show the source head and the merge commit.
    sha: head ?? mr.last_head_sha,
    merge_commit_sha: mr.merge_commit_sha,
    subscribed: isSubscribed(ctx, 'MergeRequest', mr, viewer),
  };
}

/** A merge request's commits: the list form of a commit without `allow_failure` (docs/api-v3.md#merge-requests). */
export function mergeRequestCommitView(commit: GitCommit) {
  const { allow_failure: _allowFailure, ...view } = commitListView(commit);
  return view;
}
