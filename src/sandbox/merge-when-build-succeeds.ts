/**
 * Merge when build succeeds (real 8.x `MergeRequests::MergeWhenBuildSucceedsService`): accepting a
 * merge request with `merge_when_build_succeeds` while the build of its head commit is still pending
 * or running arms it; when every status of its current head commit has succeeded, the sandbox merges
 * it as the user who armed it. A failed status leaves it armed but unmerged (8.x did not cancel it).
 *
 * The build of a merge request is what 8.x calls its pipeline: the statuses of the source project at
 * the head commit, on the source branch.
 */
import type { SandboxContext } from './context.ts';
import type { MergeRequestRec, UserRec } from './db.ts';
import { inStateScope } from './issuables.ts';
import { isWorkInProgress, sourceHead } from './merge-request-view.ts';
import { combinedStatus, latestStatuses, type CombinedStatus } from './routes/statuses.ts';

/** The combined status of the merge request's build at `sha`; `none` when no status was posted. */
export function buildStatus(ctx: SandboxContext, mr: MergeRequestRec, sha: string): CombinedStatus {
  return combinedStatus(latestStatuses(ctx.db, mr.source_project_id, sha, mr.source_branch));
}

/** 8.x `pipeline.active?`: the build is still pending or running, so there is something to wait for. */
export function buildActive(status: CombinedStatus): boolean {
  return status === 'pending' || status === 'running';
}

/**
 * Listens to commit statuses and merges the armed merge requests whose build has succeeded. `merge`
 * is the merge requests family's own merge (it leaves the request armed when the merge fails).
 */
export function registerMergeWhenBuildSucceeds(
  ctx: SandboxContext,
  merge: (mr: MergeRequestRec, user: UserRec) => Promise<unknown>,
): void {
  ctx.on.status.push(async (event) => {
    const armed = ctx.db.data.mergeRequests.filter(
      (mr) =>
        mr.merge_when_build_succeeds &&
        !mr.deleted &&
        inStateScope(mr.state, 'opened') &&
        mr.source_project_id === event.project.id &&
        (event.ref === null || event.ref === mr.source_branch),
    );
    for (const mr of armed) {
      const head = await sourceHead(ctx, mr);
      // Only the current head's build counts: a status of an older commit merges nothing.
      if (head?.id !== event.sha || buildStatus(ctx, mr, head.id) !== 'success') continue;
      if (isWorkInProgress(mr)) continue; // 8.x checks `mergeable?` again before merging
      const user =
        ctx.db.data.users.find((u) => u.id === mr.merge_user_id) ??
        ctx.db.data.users.find((u) => u.id === mr.author_id);
      if (user) await merge(mr, user);
    }
  });
}
