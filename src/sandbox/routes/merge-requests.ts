/**
 * Merge requests (docs/api-v3.md#merge-requests and its state table): list, read, commits, changes,
 * create, edit (close, reopen, merge), soft delete, closes_issues, subscriptions, accept (merge) and
 * cancel merge-when-build-succeeds. Every route on one merge request answers on the plural
 * `/merge_requests/:merge_request_id` and on the deprecated singular `/merge_request/:merge_request_id`
 * (docs/server-behaviour.md#paths-and-ids). Merges are real git merges; a push to a source branch refreshes its merge requests.
 * Where docs/api-v3.md#merge-requests is silent the behaviour follows real 8.x `lib/api/merge_requests.rb` and the merge
 * request services, as the comments say.
 */
import type { Router } from 'express';
import { notify, type Caller, type GitCommit, type SandboxContext } from '../context.ts';
import type { MergeRequestRec, ProjectRec, UserRec } from '../db.ts';
import { recordEvent } from '../events.ts';
import { GitError, NULL_SHA } from '../git.ts';
import {
  conflict,
  flag,
  forbidden,
  HttpError,
  int,
  notAllowed,
  requiredStr,
  sendPage,
  str,
  unauthorized,
} from '../http.ts';
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
import {
  checkMergeStatus,
  isWorkInProgress,
  markUnchecked,
  mergeRequestChanges,
  mergeRequestCommitView,
  mergeRequestView,
  sourceHead,
} from '../merge-request-view.ts';
import { keepMergeRequestRef } from '../merge-request-refs.ts';
import { recordVersion } from '../merge-request-versions.ts';
import { buildActive, buildStatus, registerMergeWhenBuildSucceeds } from '../merge-when-build-succeeds.ts';
import { mergeRequestPayload, type MergeRequestAction } from '../payloads/index.ts';
import {
  accessLevel,
  canAdminMergeRequests,
  DEVELOPER,
  findProject,
  OWNER,
  pathWithNamespace,
} from '../permissions.ts';
import { closesIssues, postMerge } from '../post-merge.ts';
import { canMergeToBranch, canPushToBranch, isProtectedBranch } from '../protected-branches.ts';
import { ensureLabels, labelsParam } from './labels.ts';
import { addSystemNote } from './notes.ts';
import { projectRoute, type ProjectRouteCall } from '../route.ts';

/** The merge options a caller gives, kept with an armed merge request to merge with later. */
type MergeOptions = MergeRequestRec['merge_params'];

/** The real 8.x duplicate check's answer, worded as later 8.x servers word it. */
const duplicate = () => conflict('Another open merge request already exists for this source branch');
/** docs/api-v3.md#merge-requests: 405 `Branch cannot be merged` on conflicts (real 8.3+ servers answer 406 here, docs/server-behaviour.md#merging). */
const cannotBeMerged = () => new HttpError(405, { message: 'Branch cannot be merged' });

export function registerMergeRequestRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;
  /** Merge requests being merged right now (real servers `lock` them): a second merge answers 405. */
  const merging = new Set<number>();

  const projectById = (id: number) => db.data.projects.find((p) => p.id === id);
  const isOpen = (mr: MergeRequestRec) => inStateScope(mr.state, 'opened');

  /**
   * Real 8.x `can_be_merged_by?`: whoever may push or merge to the target branch (developers on an
   * unprotected one; on a protected one masters, and developers when it lets them push or merge).
   */
  const canMergeBy = (project: ProjectRec, who: Caller, mr: MergeRequestRec) =>
    canPushToBranch(db, project, who.user, mr.target_branch) ||
    canMergeToBranch(db, project, who.user, mr.target_branch);

  /** `merge_status` goes stale (a branch moved, the MR reopened or retargeted): worked out when read. */
  function refreshMergeStatus(mr: MergeRequestRec): void {
    if (!isOpen(mr)) return;
    markUnchecked(mr);
    db.changed();
  }

  async function emit(
    mr: MergeRequestRec,
    user: UserRec,
    action: MergeRequestAction,
    extra: { oldrev?: string; lastCommit?: GitCommit } = {},
  ): Promise<void> {
    const lastCommit = extra.lastCommit ?? (await sourceHead(ctx, mr));
    await checkMergeStatus(ctx, mr);
    ctx.hooks.emit(
      mr.target_project_id,
      'Merge Request Hook',
      mergeRequestPayload(ctx, mr, user, action, { ...extra, lastCommit }),
    );
  }

  function event(mr: MergeRequestRec, user: UserRec, action: string): void {
    recordEvent(db, {
      project_id: mr.project_id,
      author_id: user.id,
      action_name: action,
      target_id: mr.id,
      target_type: 'MergeRequest',
      target_title: mr.title,
    });
  }

  /** Another open merge request from the same source branch into the same target branch. */
  const hasDuplicate = (
    mr: Pick<MergeRequestRec, 'source_project_id' | 'source_branch' | 'target_project_id' | 'target_branch'>,
    except?: number,
  ) =>
    db.data.mergeRequests.some(
      (m) =>
        m.id !== except &&
        !m.deleted &&
        isOpen(m) &&
        m.source_project_id === mr.source_project_id &&
        m.source_branch === mr.source_branch &&
        m.target_project_id === mr.target_project_id &&
        m.target_branch === mr.target_branch,
    );

  /** Close or reopen; false when the state machine refuses (closing a merged one, reopening an open one). */
  async function setState(mr: MergeRequestRec, user: UserRec, action: 'close' | 'reopen'): Promise<boolean> {
    const project = projectById(mr.project_id)!;
    if (action === 'close' ? !isOpen(mr) : mr.state !== 'closed') return false;
    if (action === 'reopen' && hasDuplicate(mr, mr.id)) throw duplicate();
    if (action === 'close') mr.last_head_sha = (await sourceHead(ctx, mr))?.id ?? mr.last_head_sha;
    // A reopened merge request answers `reopened`, as real 8.x does (docs/api-v3.md#merge-requests: the value appears).
    mr.state = action === 'close' ? 'closed' : 'reopened';
    mr.updated_at = db.now();
    if (action === 'reopen') refreshMergeStatus(mr);
    const status = action === 'close' ? 'closed' : 'reopened';
    addSystemNote(ctx, project, 'MergeRequest', mr, user, `Status changed to ${status}`);
    event(mr, user, status);
    db.changed();
    // 8.x `ReopenService` reloads the diff (a new version), which fetches `refs/merge-requests/<iid>/head` again.
    if (action === 'reopen') {
      await keepMergeRequestRef(ctx, mr);
      await recordVersion(ctx, mr);
    }
    await emit(mr, user, action);
    return true;
  }

  async function removeSourceBranch(mr: MergeRequestRec, user: UserRec, head: string): Promise<void> {
    const source = projectById(mr.source_project_id);
    // Real `DeleteBranchService` refuses the default branch, a protected one and a caller who cannot push.
    if (
      !source ||
      source.default_branch === mr.source_branch ||
      isProtectedBranch(db, source.id, mr.source_branch) ||
      accessLevel(db, source, user) < DEVELOPER
    )
      return;
    try {
      await ctx.git.deleteBranch(source.id, mr.source_branch);
    } catch (error) {
      if (error instanceof GitError) return;
      throw error;
    }
    await notify(ctx.on.push, {
      project: source,
      ref: `refs/heads/${mr.source_branch}`,
      before: head,
      after: NULL_SHA,
      user,
    });
  }

  /**
   * Merges for real (a merge commit on the target branch); false on a conflict. Then what real 8.x
   * `PostMergeService` does: state `merged`, the closing issues closed, event `accepted`, a system note,
   * `Merge Request Hook` `merge`, the push of the target branch, and the source branch removed when asked.
   * `busy` when it is being merged already or no longer open (a concurrent merge won).
   */
  async function mergeNow(
    mr: MergeRequestRec,
    user: UserRec,
    options: MergeOptions,
  ): Promise<'merged' | 'conflict' | 'busy'> {
    if (merging.has(mr.id) || !isOpen(mr)) return 'busy';
    merging.add(mr.id);
    try {
      const project = projectById(mr.project_id)!;
      const source = projectById(mr.source_project_id);
      const head = await sourceHead(ctx, mr);
      const before = await ctx.git.branch(project.id, mr.target_branch);
      if (!head || !before || !source) return 'conflict';
      const closing = await closesIssues(ctx, mr, user);
      const fromFork = source.id === project.id ? '' : ` of ${pathWithNamespace(db, source)}`;
      // Real 8.x `MergeRequest#merge_commit_message`.
      const message =
        options.merge_commit_message ??
        [
          `Merge branch '${mr.source_branch}'${fromFork} into '${mr.target_branch}'`,
          mr.title,
          ...(mr.description ? [mr.description] : []),
          `See merge request !${mr.iid}`,
        ].join('\n\n');
      let result;
      try {
        result = await ctx.git.merge(project.id, {
          target: mr.target_branch,
          sourceProjectId: mr.source_project_id,
          source: mr.source_branch,
          message,
          author: { name: user.name, email: user.email },
        });
      } catch (error) {
        if (error instanceof GitError) return 'conflict'; // a branch vanished meanwhile
        throw error;
      }
      if (!result.ok) {
        mr.merge_status = 'cannot_be_merged';
        db.changed();
        return 'conflict';
      }
      await postMerge(ctx, mr, user, { head, mergeCommitSha: result.sha, closing });
      await notify(ctx.on.push, {
        project,
        ref: `refs/heads/${mr.target_branch}`,
        before: before.id,
        after: result.sha,
        user,
      });
      if (options.should_remove_source_branch) await removeSourceBranch(mr, user, head.id);
      return 'merged';
    } finally {
      merging.delete(mr.id);
    }
  }

  /**
   * `PUT .../merge` (and `state_event=merge`): the checks in real 8.x order (401 permission, 405 state
   * or work in progress, conflict, 409 sha), then arm merge-when-build-succeeds or merge now.
   */
  async function accept(project: ProjectRec, mr: MergeRequestRec, who: Caller, p: Record<string, unknown>) {
    if (!canMergeBy(project, who, mr)) throw unauthorized();
    if (!isOpen(mr) || isWorkInProgress(mr) || merging.has(mr.id)) throw notAllowed();
    refreshMergeStatus(mr);
    await checkMergeStatus(ctx, mr);
    // 8.x's `check_if_can_be_merged` always ends on a verdict. Here a push to the target while the
    // check ran (another merge into it, at once) leaves the status unchecked: only a conflict found
    // refuses, and the merge itself, a real three-way merge, is the last word (a conflict: 405).
    if (mr.merge_status === 'cannot_be_merged') throw cannotBeMerged();
    const head = await sourceHead(ctx, mr);
    const sha = given(p, 'sha');
    if (sha !== undefined && head?.id !== sha)
      throw new HttpError(409, { message: `SHA does not match HEAD of source branch: ${head?.id ?? ''}` });
    const options: MergeOptions = {};
    const message = given(p, 'merge_commit_message');
    if (message !== undefined) options.merge_commit_message = message;
    const remove = flag(p, 'should_remove_source_branch');
    if (remove !== undefined) options.should_remove_source_branch = remove;
    // docs/api-v3.md#merge-requests spells it `merged_when_build_succeeds`; real servers read `merge_when_build_succeeds`.
    const whenBuilt = flag(p, 'merge_when_build_succeeds') ?? flag(p, 'merged_when_build_succeeds') ?? false;
    // With no build at all (no status on the head) 8.x merges at once, as it does when the build is over.
    if (whenBuilt && head && buildActive(buildStatus(ctx, mr, head.id))) {
      mr.merge_params = { ...mr.merge_params, ...options };
      if (!mr.merge_when_build_succeeds) {
        mr.merge_when_build_succeeds = true;
        mr.merge_user_id = who.user.id;
        addSystemNote(
          ctx,
          project,
          'MergeRequest',
          mr,
          who.user,
          `Enabled an automatic merge when the build for ${head.id} succeeds`,
        );
      }
      mr.updated_at = db.now();
      db.changed();
      return;
    }
    const outcome = await mergeNow(mr, who.user, options);
    if (outcome === 'busy') throw notAllowed();
    if (outcome === 'conflict') throw cannotBeMerged();
  }

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
