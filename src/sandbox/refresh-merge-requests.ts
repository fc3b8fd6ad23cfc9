/**
 * The part of real 8.x `MergeRequests::RefreshService` that runs first on every push to a branch
 * (git over HTTP or SSH, a file commit, a merge, a new branch: whatever tells `ctx.on.push`):
 *
 * 1. `close_merge_requests`: every open merge request into the pushed branch of this project whose
 *    head is among the commits the push brought (`commits_between(oldrev, newrev)`) has been merged by
 *    that push (merged by hand, or a bot landing the commit it tested): it goes through the post-merge
 *    path as the pusher (post-merge.ts: state `merged`, issues closed, event, note, `Merge Request
 *    Hook` `merge`), with no merge commit of its own.
 * 2. `reload_merge_requests`' `fetch_ref`: the open merge requests from the pushed branch get their
 *    `refs/merge-requests/<iid>/head` moved to the new head in their target repository
 *    (merge-request-refs.ts), before the `update` hook of routes/merge-requests.ts tells anyone.
 * 3. `reload_merge_requests` itself: the merge requests around the pushed branch get a new version
 *    when 8.x makes one (merge-request-versions.ts).
 * 4. The system notes on the open merge requests from the pushed branch: `Deleted source branch` /
 *    `Restored source branch`, `Added N commits` (source-branch-notes.ts).
 *
 * It is registered before the merge requests' own listener (routes/index.ts), which then refreshes
 * the open ones left and fires their `update` hooks, in 8.x's order.
 */
import type { Router } from 'express';
import type { GitCommit, PushEvent, SandboxContext } from './context.ts';
import type { MergeRequestRec } from './db.ts';
import { inStateScope } from './issuables.ts';
import { commitsBetween, keepMergeRequestRef, mergeRequestRefHead } from './merge-request-refs.ts';
import { latestVersion, recordVersionsOnPush } from './merge-request-versions.ts';
import { closesIssues, postMerge } from './post-merge.ts';
import { noteSourceBranchPush, sourceMergeRequests } from './source-branch-notes.ts';

const NULL_SHA = '0000000000000000000000000000000000000000';

const isOpen = (mr: MergeRequestRec) => !mr.deleted && inStateScope(mr.state, 'opened');

/** 1: the open merge requests into the pushed branch whose head the push brought are merged. */
async function closeMergedByPush(ctx: SandboxContext, push: PushEvent, branch: string): Promise<void> {
  const db = ctx.db;
  const into = db.data.mergeRequests.filter(
    (mr) => isOpen(mr) && mr.target_project_id === push.project.id && mr.target_branch === branch,
  );
  if (into.length === 0) return;
  const pushed = await commitsBetween(ctx, push.project.id, push.before, push.after);
  if (pushed.size === 0) return;
  // The source heads: one ref read per source branch (not a read of every branch of the project,
  // which cost a merge into a project of some hundred branches a few hundred milliseconds).
  const heads = new Map<string, Promise<GitCommit | undefined>>();
  const headOf = (projectId: number, branch: string) => {
    const key = `${projectId}\0${branch}`;
    let read = heads.get(key);
    if (!read) {
      read = ctx.git.branch(projectId, branch);
      heads.set(key, read);
    }
    return read;
  };
  // What each one needs read (its head, the issues it closes), all read at once; then merged in order.
  const reads = into.map(async (mr) => {
    // 8.x skips merge requests whose source project is gone (`select(&:source_project)`).
    if (!db.data.projects.some((p) => p.id === mr.source_project_id)) return undefined;
    // The head 8.x compares is the one of the merge request's last diff: the source branch's head, or
    // where its ref was left when the branch is gone.
    const head = await headOf(mr.source_project_id, mr.source_branch);
    const sha = head?.id ?? (await mergeRequestRefHead(ctx, mr));
    if (!sha || !pushed.has(sha)) return undefined;
    const commit = head ?? (await ctx.git.commit(mr.target_project_id, sha));
    if (!commit) return undefined;
    const closing = await closesIssues(ctx, mr, push.user, { base: push.before, head: sha });
    return { commit, closing };
  });
  // A read that fails fails the loop where it is awaited, as before; the others are never unhandled.
  for (const read of reads) read.catch(() => undefined);
  for (const [i, mr] of into.entries()) {
    const read = await reads[i]!;
    // Still open after the reads (a merge through the API may have won meanwhile): merged once.
    if (read && isOpen(mr)) await postMerge(ctx, mr, push.user, { head: read.commit, closing: read.closing });
  }
}

/** 2: the open merge requests from the pushed branch keep their ref at its new head. */
async function keepRefs(ctx: SandboxContext, push: PushEvent, branch: string): Promise<void> {
  if (push.after === NULL_SHA) return;
  for (const mr of ctx.db.data.mergeRequests)
    if (isOpen(mr) && mr.source_project_id === push.project.id && mr.source_branch === branch)
      await keepMergeRequestRef(ctx, mr);
}

export function registerRefreshMergeRequests(_router: Router, ctx: SandboxContext): void {
  ctx.on.push.push(async (push) => {
    if (!push.ref.startsWith('refs/heads/')) return;
    const branch = push.ref.slice('refs/heads/'.length);
    await closeMergedByPush(ctx, push, branch);
    await keepRefs(ctx, push, branch);
    // 8.x reads the versions' heads before it makes new ones (`find_new_commits` comes first).
    const from = sourceMergeRequests(ctx, push, branch);
    const priorHeads = new Map(from.map((mr) => [mr.id, latestVersion(ctx, mr)?.head_commit_sha ?? null]));
    await recordVersionsOnPush(ctx, push, branch);
    await noteSourceBranchPush(ctx, push, from, priorHeads);
  });
}
