/**
 * Merge request versions (8.12 and later; docs/api-v3.md#merge-request-versions): the list of a merge
 * request's versions, newest first and paginated as the last 8.x releases paginate it, and one version
 * with its commits and diff. Read access is the merge request's own (8.x `authorize!
 * :read_merge_request`): 404 when the project or the merge request is not there for the caller, 403
 * when the caller may not read the merge requests of a private project.
 *
 * Only the plural `/merge_requests/:merge_request_id` path answers: real 8.x servers serve these two
 * routes from a file of their own (`lib/api/merge_request_diffs.rb`), outside the loop over the
 * deprecated singular `/merge_request/` paths of `lib/api/merge_requests.rb`, so the singular paths
 * answer the unknown route's 404 there too.
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import type { MergeRequestDiffRec, MergeRequestRec } from '../db.ts';
import { forbidden, HttpError, notFound, sendPage } from '../http.ts';
import { canReadMergeRequest, findMergeRequest } from '../issuables.ts';
import { mergeRequestCommitView } from '../merge-request-view.ts';
import { versionContent, versionFacts, versionsOf } from '../merge-request-versions.ts';
import { projectRoute, type ProjectRouteCall } from '../route.ts';

const ONE = '/projects/:id/merge_requests/:merge_request_id';

/** The entity 8.x answers (`Entities::MergeRequestDiff`), its fields in its order. */
async function versionView(ctx: SandboxContext, mr: MergeRequestRec, v: MergeRequestDiffRec) {
  const facts = await versionFacts(ctx, mr, v);
  return {
    id: v.id,
    head_commit_sha: v.head_commit_sha,
    base_commit_sha: facts.base_commit_sha,
    start_commit_sha: v.start_commit_sha,
    created_at: v.created_at,
    merge_request_id: v.merge_request_id,
    state: facts.state,
    real_size: facts.real_size,
  };
}

export function registerMergeRequestVersionRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  /** The merge request, readable by the caller (8.x `find_merge_request_with_access`). */
  const mergeRequestOf = ({ req, who, project }: ProjectRouteCall) => {
    const mr = findMergeRequest(ctx, project, String(req.params.merge_request_id));
    if (!canReadMergeRequest(ctx, project, mr, who.user)) throw forbidden();
    return mr;
  };

  router.get(
    `${ONE}/versions`,
    projectRoute(db, 'visible', async (call) => {
      const mr = mergeRequestOf(call);
      const views = [];
      for (const v of versionsOf(ctx, mr)) views.push(await versionView(ctx, mr, v));
      sendPage(call.req, call.res, views);
    }),
  );

  router.get(
    `${ONE}/versions/:version_id`,
    projectRoute(db, 'visible', async (call) => {
      const mr = mergeRequestOf(call);
      const ref = String(call.req.params.version_id);
      // grape's `requires :version_id, type: Integer`.
      if (!/^\d+$/.test(ref)) throw new HttpError(400, { error: 'version_id is invalid' });
      // 8.x `merge_request.merge_request_diffs.find`: another merge request's version is not found.
      const v = versionsOf(ctx, mr).find((x) => x.id === Number(ref));
      if (!v) throw notFound();
      const { commits, diffs } = await versionContent(ctx, mr, v);
      call.res.json({
        ...(await versionView(ctx, mr, v)),
        commits: commits.map(mergeRequestCommitView),
        diffs,
      });
    }),
  );
}
