/**
 * Merge requests (docs/api-v3.md#merge-requests and its state table): list, read, commits, changes,
 * create, edit (close, reopen, merge), soft delete, closes_issues, subscriptions, accept (merge) and
 * cancel merge-when-build-succeeds. Every route on one merge request answers on the plural
 * `/merge_requests/:merge_request_id` and on the deprecated singular `/merge_request/:merge_request_id`
 * (docs/server-behaviour.md#paths-and-ids). Merges are real git merges; a push to a source branch refreshes its merge requests.
 * Where docs/api-v3.md#merge-requests is silent the behaviour follows real 8.x `lib/api/merge_requests.rb` and the merge
 * request services, as the comments say. What the routes do to a merge request (close, reopen, its
 * hooks, a real merge) is in merge-request-actions.ts.
 */
import type { Router } from 'express';
import { type Caller, type SandboxContext } from '../context.ts';
import type { MergeRequestRec, ProjectRec } from '../db.ts';
import { NULL_SHA } from '../git.ts';
import { forbidden, HttpError, int, notAllowed, requiredStr, sendPage, str, unauthorized } from '../http.ts';
import {
  assigneeParam,
  canReadMergeRequest,
  canReadMergeRequests,
  canUpdateMergeRequest,
  checkTitle,
  findMergeRequest,
  given,
  inStateScope,
  milestoneParam,
  orderIssuables,
  setSubscribed,
} from '../issuables.ts';
import { issueView } from '../issue-view.ts';
import { mergeRequestChanges, mergeRequestCommitView, mergeRequestView } from '../merge-request-view.ts';
import { keepMergeRequestRef } from '../merge-request-refs.ts';
import { recordVersion } from '../merge-request-versions.ts';
import { registerMergeWhenBuildSucceeds } from '../merge-when-build-succeeds.ts';
import { accessLevel, canAdminMergeRequests, DEVELOPER, findProject, OWNER } from '../permissions.ts';
import { closesIssues } from '../post-merge.ts';
import { ensureLabels, labelsParam } from './labels.ts';
import { addSystemNote } from './notes.ts';
import { projectRoute, type ProjectRouteCall } from '../route.ts';
import { createMergeRequestActions, duplicate } from './merge-request-actions.ts';

export function registerMergeRequestRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;
  const { isOpen, canMergeBy, refreshMergeStatus, emit, event, hasDuplicate, setState, mergeNow, accept } =
    createMergeRequestActions(ctx);

  registerMergeWhenBuildSucceeds(ctx, (mr, user) => mergeNow(mr, user, mr.merge_params));

  /**
   * A push to a branch refreshes the `merge_status` of the open merge requests from or into it; one to
   * a source branch also fires `Merge Request Hook` `update` with `oldrev` (real 8.x
   * `MergeRequests::RefreshService`; its versions and system notes: refresh-merge-requests.ts).
   */
  ctx.on.push.push(async (push) => {
    if (!push.ref.startsWith('refs/heads/')) return;
    const branch = push.ref.slice('refs/heads/'.length);
    for (const mr of db.data.mergeRequests) {
      if (mr.deleted || !isOpen(mr)) continue;
      const fromIt = mr.source_project_id === push.project.id && mr.source_branch === branch;
      const intoIt = mr.target_project_id === push.project.id && mr.target_branch === branch;
      if (!fromIt && !intoIt) continue;
      refreshMergeStatus(mr);
      if (!fromIt) continue;
      // Real servers (8.3 on, `RefreshService#reset_merge_when_build_succeeds`): a push to the source
      // branch disarms merge-when-build-succeeds, quietly, its deletion included; whoever wants it
      // must accept again.
      if (mr.merge_when_build_succeeds) {
        mr.merge_when_build_succeeds = false;
        mr.merge_user_id = null;
        mr.merge_params = {};
      }
      // Its version and its system notes were made before (refresh-merge-requests.ts), as in 8.x.
      mr.updated_at = db.now();
      db.changed();
      // A deletion sends no `update` (8.x notes the branch's presence instead of running the hooks).
      if (push.after !== NULL_SHA) await emit(mr, push.user, 'update', { oldrev: push.before });
    }
  });

  const view = (mr: MergeRequestRec, who: Caller) => mergeRequestView(ctx, mr, who.user);

  // 8.x `authorize! :read_merge_request, user_project`: 403 for a guest of a private project.
  const requireReadMergeRequests = (_db: unknown, project: ProjectRec, who: Caller) => {
    if (!canReadMergeRequests(ctx, project, who.user)) throw forbidden();
  };

  router.get(
    '/projects/:id/merge_requests',
    projectRoute(db, requireReadMergeRequests, async ({ req, res, who, p, project }) => {
      const iid = int(p, 'iid');
      const state = str(p, 'state');
      const items = db.data.mergeRequests.filter(
        (mr) =>
          mr.project_id === project.id &&
          !mr.deleted &&
          (iid === undefined || mr.iid === iid) &&
          inStateScope(mr.state, state === 'all' ? undefined : state),
      );
      const ordered = orderIssuables(items, str(p, 'order_by'), str(p, 'sort'));
      sendPage(req, res, await Promise.all(ordered.map((mr) => view(mr, who))));
    }),
  );

  /** 8.x `create_merge_request` on the source project: developers and up, never from an archived project. */
  const requireCreateMergeRequest = (_db: unknown, project: ProjectRec, who: Caller) => {
    if (accessLevel(db, project, who.user) < DEVELOPER || project.archived) throw forbidden();
  };

  // docs/api-v3.md#merge-requests: merge request create answers 200 (real servers answer 201).
  router.post(
    '/projects/:id/merge_requests',
    projectRoute(db, requireCreateMergeRequest, async ({ res, who, p, project: source }) => {
      const sourceBranch = requiredStr(p, 'source_branch');
      const targetBranch = requiredStr(p, 'target_branch');
      const title = requiredStr(p, 'title');
      checkTitle(title);
      const labels = labelsParam(p) ?? [];
      const targetId = int(p, 'target_project_id');
      const target =
        targetId === undefined || targetId === source.id ? source : findProject(db, String(targetId), who);
      // Real 8.x `validate_fork` (422 with the errors array, docs/api-v3.md#merge-requests shows no condition for 422).
      if (target.id !== source.id && source.forked_from_id !== target.id)
        throw new HttpError(422, { message: ['Source project is not a fork of target project'] });
      const branches = {
        source_project_id: source.id,
        source_branch: sourceBranch,
        target_project_id: target.id,
        target_branch: targetBranch,
      };
      await checkBranches(branches);
      if (hasDuplicate(branches)) throw duplicate();
      // Labels, assignee and milestone need `admin_merge_request` (developer) on the TARGET project
      // (8.x `MergeRequests::CreateService` judges `filter_params` there): from anyone else the three
      // are dropped, and no label is created (docs/server-behaviour.md#labels-assignee-and-milestone-from-users-without-rights).
      const canAdmin = canAdminMergeRequests(db, target, who.user);
      const now = db.now();
      const mr: MergeRequestRec = {
        id: db.nextId('mergeRequests'),
        iid: db.nextIid('mergeRequests', target.id),
        project_id: target.id,
        title,
        description: given(p, 'description') ?? null,
        state: 'opened',
        ...branches,
        author_id: who.user.id,
        assignee_id: canAdmin ? (assigneeParam(ctx, p) ?? null) : null,
        milestone_id: canAdmin ? (milestoneParam(ctx, target, p) ?? null) : null,
        labels: canAdmin ? ensureLabels(ctx, target, labels, who.user) : [],
        upvotes: 0,
        downvotes: 0,
        merge_status: 'unchecked',
        merge_when_build_succeeds: false,
        merge_user_id: null,
        merge_params: {},
        last_head_sha: null,
        merge_commit_sha: null,
        deleted: false,
        created_at: now,
        updated_at: now,
      };
      db.data.mergeRequests.push(mr);
      refreshMergeStatus(mr);
      event(mr, who.user, 'opened');
      db.changed();
      // 8.x makes the first diff (version) on create, which fetches `refs/merge-requests/<iid>/head`.
      await keepMergeRequestRef(ctx, mr);
      await recordVersion(ctx, mr);
      await emit(mr, who.user, 'open');
      res.status(200).json(await view(mr, who));
    }),
  );

  /** Both branches must exist, and differ within one project (400, in the model-validation form). */
  async function checkBranches(
    b: Pick<MergeRequestRec, 'source_project_id' | 'source_branch' | 'target_project_id' | 'target_branch'>,
  ): Promise<void> {
    // Real 8.x answers the model's `branch_conflict` error as 422 with its messages (the API's
    // `handle_merge_request_errors!`), like the fork check above.
    if (b.source_project_id === b.target_project_id && b.source_branch === b.target_branch)
      throw new HttpError(422, { message: ['You can not use same project/branch for source and target'] });
    const errors: Record<string, string[]> = {};
    if (!(await ctx.git.branch(b.source_project_id, b.source_branch)))
      errors.source_branch = ['does not exist'];
    if (!(await ctx.git.branch(b.target_project_id, b.target_branch)))
      errors.target_branch = ['does not exist'];
    if (Object.keys(errors).length) throw new HttpError(400, { message: errors });
  }

  for (const segment of ['merge_requests', 'merge_request']) {
    const one = `/projects/:id/${segment}/:merge_request_id`;
    /**
     * The merge request `:merge_request_id` of the route's project (404 when absent), which the
     * caller may read (8.x `authorize! :read_merge_request`: 403 otherwise).
     */
    const mergeRequestOf = ({ req, who, project }: ProjectRouteCall) => {
      const mr = findMergeRequest(ctx, project, String(req.params.merge_request_id));
      if (!canReadMergeRequest(ctx, project, mr, who.user)) throw forbidden();
      return mr;
    };

    router.get(
      one,
      projectRoute(db, 'visible', async (call) => {
        const { res, who } = call;
        const mr = mergeRequestOf(call);
        res.json(await view(mr, who));
      }),
    );

    router.get(
      `${one}/commits`,
      projectRoute(db, 'visible', async (call) => {
        const { req, res } = call;
        const mr = mergeRequestOf(call);
        const { commits } = await mergeRequestChanges(ctx, mr, { diffs: false });
        sendPage(req, res, commits.map(mergeRequestCommitView));
      }),
    );

    router.get(
      `${one}/changes`,
      projectRoute(db, 'visible', async (call) => {
        const { res, who } = call;
        const mr = mergeRequestOf(call);
        const { diffs } = await mergeRequestChanges(ctx, mr);
        res.json({ ...(await view(mr, who)), changes: diffs });
      }),
    );

    router.get(
      `${one}/closes_issues`,
      projectRoute(db, 'visible', async (call) => {
        const { req, res, who } = call;
        const mr = mergeRequestOf(call);
        const issues = await closesIssues(ctx, mr, who.user);
        sendPage(
          req,
          res,
          issues.map((i) => issueView(ctx, i, who.user)),
        );
      }),
    );

    // docs/api-v3.md#merge-requests: merge request update answers 200.
    router.put(
      one,
      projectRoute(db, 'visible', async (call) => {
        const { res, who, project, p } = call;
        const mr = mergeRequestOf(call);
        if (!canUpdateMergeRequest(ctx, project, mr, who.user)) throw forbidden();
        // Labels, assignee and milestone: `admin_merge_request` only (8.x `filter_params`); the
        // author without it edits the rest and those three are dropped.
        const canAdmin = canAdminMergeRequests(db, project, who.user);
        const title = given(p, 'title');
        checkTitle(title);
        const labels = labelsParam(p);
        const targetBranch = given(p, 'target_branch');
        const edits = {
          title,
          description: given(p, 'description'),
          target_branch: targetBranch,
          assignee_id: canAdmin ? assigneeParam(ctx, p) : undefined,
          milestone_id: canAdmin ? milestoneParam(ctx, project, p) : undefined,
          labels: canAdmin ? labels : undefined,
        };
        if (targetBranch !== undefined && targetBranch !== mr.target_branch) {
          const moved = { ...mr, target_branch: targetBranch };
          await checkBranches(moved);
          if (isOpen(mr) && hasDuplicate(moved, mr.id)) throw duplicate();
        }

        // The state change first (its own hook), then the other fields (`update`), as real `UpdateService`.
        const stateEvent = given(p, 'state_event');
        if (stateEvent === 'close' || stateEvent === 'reopen') await setState(mr, who.user, stateEvent);
        // `merge` behaves as `PUT .../merge` does, errors included.
        if (stateEvent === 'merge') await accept(project, mr, who, p);

        if (Object.values(edits).some((v) => v !== undefined)) {
          if (edits.title !== undefined) mr.title = edits.title;
          if (edits.description !== undefined) mr.description = edits.description;
          if (edits.target_branch !== undefined && edits.target_branch !== mr.target_branch) {
            addSystemNote(
              ctx,
              project,
              'MergeRequest',
              mr,
              who.user,
              `Target branch changed from \`${mr.target_branch}\` to \`${edits.target_branch}\``,
            );
            mr.target_branch = edits.target_branch;
            refreshMergeStatus(mr);
            // 8.x `reload_diff_if_branch_changed`: a new version, while it is open.
            if (isOpen(mr)) await recordVersion(ctx, mr);
          }
          if (edits.assignee_id !== undefined && edits.assignee_id !== mr.assignee_id) {
            const assignee = db.data.users.find((u) => u.id === edits.assignee_id);
            addSystemNote(
              ctx,
              project,
              'MergeRequest',
              mr,
              who.user,
              assignee ? `Reassigned to @${assignee.username}` : 'Assignee removed',
            );
            mr.assignee_id = edits.assignee_id;
          }
          if (edits.milestone_id !== undefined) mr.milestone_id = edits.milestone_id;
          if (edits.labels !== undefined) mr.labels = ensureLabels(ctx, project, edits.labels, who.user);
          mr.updated_at = db.now();
          db.changed();
          await emit(mr, who.user, 'update');
        }
        res.json(await view(mr, who));
      }),
    );

    // docs/api-v3.md#merge-requests: admins and project owners only; 404 when absent; soft delete.
    router.delete(
      one,
      projectRoute(db, 'visible', async (call) => {
        const { res, who, level } = call;
        const mr = mergeRequestOf(call);
        if (level < OWNER) throw forbidden();
        mr.deleted = true;
        db.changed();
        res.json(await view(mr, who));
      }),
    );

    router.put(
      `${one}/merge`,
      projectRoute(db, 'visible', async (call) => {
        const { res, who, project, p } = call;
        const mr = mergeRequestOf(call);
        await accept(project, mr, who, p);
        res.json(await view(mr, who));
      }),
    );

    // docs/api-v3.md#merge-requests routes cancel as PUT, real servers as POST: both answer.
    for (const method of ['put', 'post'] as const)
      router[method](
        `${one}/cancel_merge_when_build_succeeds`,
        projectRoute(db, 'visible', async (call) => {
          const { res, who, project } = call;
          const mr = mergeRequestOf(call);
          // Real 8.x `can_cancel_merge_when_build_succeeds?`: whoever may merge, and the author.
          if (!canMergeBy(project, who, mr) && mr.author_id !== who.user.id) throw unauthorized();
          if (!isOpen(mr)) throw notAllowed();
          if (!mr.merge_when_build_succeeds) throw new HttpError(406, { message: '406 Not Acceptable' });
          mr.merge_when_build_succeeds = false;
          mr.merge_user_id = null;
          mr.merge_params = {};
          mr.updated_at = db.now();
          addSystemNote(ctx, project, 'MergeRequest', mr, who.user, 'Canceled the automatic merge');
          db.changed();
          res.json(await view(mr, who));
        }),
      );

    for (const [method, subscribe] of [
      ['post', true],
      ['delete', false],
    ] as const)
      router[method](
        `${one}/subscription`,
        projectRoute(db, 'visible', async (call) => {
          const { res, who } = call;
          const mr = mergeRequestOf(call);
          // 304 (empty body) when already subscribed / not subscribed, as for issues.
          if (!setSubscribed(ctx, 'MergeRequest', mr, who.user, subscribe)) return void res.status(304).end();
          res.status(subscribe ? 201 : 200).json(await view(mr, who));
        }),
      );
  }
}
