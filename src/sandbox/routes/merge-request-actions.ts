/**
 * What the merge request routes (merge-requests.ts) do to a merge request beyond reading it: close
 * and reopen it, fire its hooks and events, and merge it for real (docs/api-v3.md#merge-requests),
 * following real 8.x `lib/api/merge_requests.rb` and the merge request services where the docs are
 * silent, as the comments say.
 */
import { notify, type Caller, type GitCommit, type SandboxContext } from '../context.ts';
import type { MergeRequestRec, ProjectRec, UserRec } from '../db.ts';
import { recordEvent } from '../events.ts';
import { GitError, NULL_SHA } from '../git.ts';
import { conflict, flag, HttpError, notAllowed, unauthorized } from '../http.ts';
import { given, inStateScope } from '../issuables.ts';
import { checkMergeStatus, isWorkInProgress, markUnchecked, sourceHead } from '../merge-request-view.ts';
import { keepMergeRequestRef } from '../merge-request-refs.ts';
import { recordVersion } from '../merge-request-versions.ts';
import { buildActive, buildStatus } from '../merge-when-build-succeeds.ts';
import { mergeRequestPayload, type MergeRequestAction } from '../payloads/index.ts';
import { accessLevel, DEVELOPER, pathWithNamespace } from '../permissions.ts';
import { closesIssues, postMerge } from '../post-merge.ts';
import { canMergeToBranch, canPushToBranch, isProtectedBranch } from '../protected-branches.ts';
import { addSystemNote } from './notes.ts';

/** The merge options a caller gives, kept with an armed merge request to merge with later. */
type MergeOptions = MergeRequestRec['merge_params'];

/** The real 8.x duplicate check's answer, worded as later 8.x servers word it. */
export const duplicate = () => conflict('Another open merge request already exists for this source branch');
/** docs/api-v3.md#merge-requests: 405 `Branch cannot be merged` on conflicts (real 8.3+ servers answer 406 here, docs/server-behaviour.md#merging). */
const cannotBeMerged = () => new HttpError(405, { message: 'Branch cannot be merged' });

/**
 * What the merge request routes do to a merge request, beside answering: its state, its hooks and
 * events, and merging it for real (merge-requests.ts registers the routes on these).
 */
export function createMergeRequestActions(ctx: SandboxContext) {
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

  return {
    isOpen,
    canMergeBy,
    refreshMergeStatus,
    emit,
    event,
    hasDuplicate,
    setState,
    mergeNow,
    accept,
  };
}
