/** `Merge Request Hook` payloads. */
import type { GitCommit, SandboxContext } from '../context.ts';
import type { MergeRequestRec, UserRec } from '../db.ts';
import { knownHead, rememberCommits } from './commit-memo.ts';
import {
  assigneeOf,
  commitHookAttrs,
  commitHookAttrsBySha,
  payloadTime,
  projectHookAttrs,
  projectOf,
  userHookAttrs,
  webUrl,
  type Payload,
} from './hook-attrs.ts';
import { BLANK_SHA } from './hook-attrs.ts';

export type MergeRequestAction = 'open' | 'update' | 'close' | 'reopen' | 'merge';

/** 8.x `MergeRequest#work_in_progress?`. */
export const WIP_PATTERN = /^\s*(\[WIP\]\s*|WIP:\s*|WIP\s+)+\s*/i;

/**
 * 8.x `diff_head_commit`: the source head. Given by the caller when it could read git; otherwise the
 * head last pushed to the source branch (open merge requests) or `last_head_sha` (merged or closed
 * ones, whose branch may be gone); null when neither is known.
 */
export function lastCommitAttrs(ctx: SandboxContext, mr: MergeRequestRec, lastCommit: GitCommit | undefined) {
  const source =
    ctx.db.data.projects.find((p) => p.id === mr.source_project_id) ?? projectOf(ctx, mr.target_project_id);
  if (lastCommit) {
    rememberCommits(ctx, [lastCommit]);
    return commitHookAttrs(ctx, source, lastCommit);
  }
  const pushed = knownHead(ctx, mr.source_project_id, mr.source_branch);
  const open = mr.state === 'opened' || mr.state === 'reopened';
  const sha = open ? (pushed ?? mr.last_head_sha) : (mr.last_head_sha ?? pushed);
  return sha ? commitHookAttrsBySha(ctx, source, sha) : null;
}

export function sourceAttrs(ctx: SandboxContext, mr: MergeRequestRec) {
  const source = ctx.db.data.projects.find((p) => p.id === mr.source_project_id);
  // 8.x `source_project.try(:hook_attrs)`: null once a fork is gone.
  return source ? projectHookAttrs(ctx, source) : null;
}

/**
 * `Merge Request Hook`; `oldrev` is set when a push to the source branch caused the update.
 * `lastCommit` is the source branch's head (`ctx.git.branch(source_project_id, source_branch)`), which
 * the caller reads since this builder cannot wait; without it the head last pushed to the source branch
 * or `mr.last_head_sha` stands in (see `lastCommitAttrs`). Commit URLs use `/commit/<sha>` as 8.x builds
 * them (the merge request sample prints `/commits/`).
 */
export function mergeRequestPayload(
  ctx: SandboxContext,
  mr: MergeRequestRec,
  user: UserRec,
  action: MergeRequestAction,
  extra: { oldrev?: string; lastCommit?: GitCommit } = {},
): Record<string, unknown> {
  const target = projectOf(ctx, mr.target_project_id);
  const attributes: Payload = {
    id: mr.id,
    target_branch: mr.target_branch,
    source_branch: mr.source_branch,
    source_project_id: mr.source_project_id,
    author_id: mr.author_id,
    assignee_id: mr.assignee_id,
    title: mr.title,
    created_at: payloadTime(mr.created_at),
    updated_at: payloadTime(mr.updated_at),
    // Columns of that era that moved to merge_request_diffs: always null in payloads.
    st_commits: null,
    st_diffs: null,
    milestone_id: mr.milestone_id,
    state: mr.state,
    merge_status: mr.merge_status,
    target_project_id: mr.target_project_id,
    iid: mr.iid,
    description: mr.description,
    source: sourceAttrs(ctx, mr),
    target: projectHookAttrs(ctx, target),
    last_commit: lastCommitAttrs(ctx, mr, extra.lastCommit),
    work_in_progress: WIP_PATTERN.test(mr.title),
    url: `${webUrl(ctx, target)}/merge_requests/${mr.iid}`,
    action,
  };
  // 8.x sends `oldrev` only for a real previous head (never the blank sha).
  if (extra.oldrev && extra.oldrev !== BLANK_SHA) attributes.oldrev = extra.oldrev;
  const assignee = assigneeOf(ctx, mr.assignee_id);
  if (assignee) attributes.assignee = userHookAttrs(assignee);
  return { object_kind: 'merge_request', user: userHookAttrs(user), object_attributes: attributes };
}
