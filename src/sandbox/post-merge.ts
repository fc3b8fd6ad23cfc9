/**
 * What follows a merge, whichever way it happened (real 8.x `MergeRequests::PostMergeService`): the
 * issues the merge request closes are closed (into the default branch only, by a user who may update
 * them), the state becomes `merged`, the event `accepted` and the system note `Status changed to
 * merged` are recorded, and `Merge Request Hook` fires with action `merge`.
 *
 * Two paths lead here, as on 8.x: the merge API (`MergeService`, which made the merge commit) and a
 * push to the target branch that contains the merge request's head (`RefreshService#close_merge_requests`:
 * someone merged by hand, or a bot landed the very commit it tested; refresh-merge-requests.ts).
 */
import type { GitCommit, SandboxContext } from './context.ts';
import type { IssueRec, MergeRequestRec, UserRec } from './db.ts';
import { recordEvent } from './events.ts';
import { canReadIssue, canUpdateIssue } from './issuables.ts';
import { mergeRequestChanges } from './merge-request-view.ts';
import { mergeRequestPayload } from './payloads/index.ts';
import { canRead, pathWithNamespace } from './permissions.ts';
import { setIssueState } from './routes/issues.ts';
import { addSystemNote } from './routes/notes.ts';

/**
 * 8.x closing references: `Closes #1`, `fixes #2, #3 and group/project#4`, `Resolves: issue #5`
 * (its default `issue_closing_pattern`).
 */
const CLOSING =
  /\b(?:[Cc]los(?:e[sd]?|ing)|[Ff]ix(?:e[sd]|ing)?|[Rr]esolv(?:e[sd]?|ing)):? +(?:(?:issues? +)?(?:[\w./-]+)?#\d+(?:, *| +and +)?)+/g;
const ISSUE_REF = /([\w./-]+)?#(\d+)/g;

/**
 * The open issues that merging would close (only into the default branch, as on real servers), visible
 * to `viewer`. Their references are read in the description and the merge request's commits: those of
 * its source not on its target, or with `between`, those of `head` not on the target commit `base`
 * (a push merged it: its commits are the target's by now, 8.x reads the ones it had recorded).
 */
export async function closesIssues(
  ctx: SandboxContext,
  mr: MergeRequestRec,
  viewer: UserRec,
  between?: { base: string; head: string },
): Promise<IssueRec[]> {
  const db = ctx.db;
  const target = db.data.projects.find((p) => p.id === mr.target_project_id);
  if (!target || mr.target_branch !== target.default_branch) return [];
  const { commits } = between
    ? await ctx.git.compare(mr.target_project_id, between.base, mr.source_project_id, between.head)
    : await mergeRequestChanges(ctx, mr, { diffs: false });
  const text = [mr.description ?? '', ...commits.map((c) => c.message)].join('\n');
  const found: IssueRec[] = [];
  for (const phrase of text.matchAll(CLOSING))
    for (const [, path, iid] of phrase[0].matchAll(ISSUE_REF)) {
      const project = path
        ? db.data.projects.find((p) => pathWithNamespace(db, p).toLowerCase() === path.toLowerCase())
        : target;
      if (!project || !canRead(db, project, viewer)) continue;
      const issue = db.data.issues.find(
        (i) => i.project_id === project.id && i.iid === Number(iid) && !i.deleted,
      );
      if (issue && canReadIssue(ctx, project, issue, viewer) && !found.includes(issue)) found.push(issue);
    }
  return found;
}

export interface PostMerge {
  /** The source head that was merged (the hook's `last_commit`; kept as `last_head_sha`). */
  head: GitCommit;
  /** The merge commit the merge API made; none when a push merged it (8.x leaves it empty then). */
  mergeCommitSha?: string;
  /** The issues to close, read before the merge (once merged, the merge request's commits are the target's). */
  closing: IssueRec[];
}

/** 8.x `PostMergeService#execute` for `mr`, as `user` (who merged, or who pushed the merge). */
export async function postMerge(
  ctx: SandboxContext,
  mr: MergeRequestRec,
  user: UserRec,
  merge: PostMerge,
): Promise<void> {
  const db = ctx.db;
  const project = db.data.projects.find((p) => p.id === mr.project_id);
  if (!project) return;
  for (const issue of merge.closing) {
    const issueProject = db.data.projects.find((p) => p.id === issue.project_id);
    // 8.x closes only what the user may update (`can?(current_user, :update_issue, issue)`).
    if (issueProject && canUpdateIssue(ctx, issueProject, issue, user))
      setIssueState(ctx, issueProject, issue, user, 'close', `!${mr.iid}`);
  }
  mr.state = 'merged';
  mr.merge_when_build_succeeds = false;
  mr.last_head_sha = merge.head.id;
  if (merge.mergeCommitSha !== undefined) mr.merge_commit_sha = merge.mergeCommitSha;
  mr.updated_at = db.now();
  recordEvent(db, {
    project_id: mr.project_id,
    author_id: user.id,
    action_name: 'accepted',
    target_id: mr.id,
    target_type: 'MergeRequest',
    target_title: mr.title,
  });
  addSystemNote(ctx, project, 'MergeRequest', mr, user, 'Status changed to merged');
  db.changed();
  ctx.hooks.emit(
    mr.target_project_id,
    'Merge Request Hook',
    mergeRequestPayload(ctx, mr, user, 'merge', { lastCommit: merge.head }),
  );
}
