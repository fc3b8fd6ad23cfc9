/** `Issue Hook` payloads. */
import type { SandboxContext } from '../context.ts';
import type { IssueRec, UserRec } from '../db.ts';
import {
  assigneeOf,
  payloadTime,
  projectHookAttrs,
  projectOf,
  repositoryAttrs,
  userHookAttrs,
  webUrl,
  type Payload,
} from './hook-attrs.ts';

export type IssueAction = 'open' | 'update' | 'close' | 'reopen';

/** The issue's own attributes, as in the samples (`position` and `branch_name` are columns of that era). */
export function issueAttrs(issue: IssueRec) {
  return {
    id: issue.id,
    title: issue.title,
    assignee_id: issue.assignee_id,
    author_id: issue.author_id,
    project_id: issue.project_id,
    created_at: payloadTime(issue.created_at),
    updated_at: payloadTime(issue.updated_at),
    position: 0,
    branch_name: null as string | null,
    description: issue.description,
    milestone_id: issue.milestone_id,
    state: issue.state,
    iid: issue.iid,
  };
}

/** `Issue Hook` (or `Confidential Issue Hook` content: same shape). No `labels`, no `changes` (that era). */
export function issuePayload(
  ctx: SandboxContext,
  issue: IssueRec,
  user: UserRec,
  action: IssueAction,
): Record<string, unknown> {
  const project = projectOf(ctx, issue.project_id);
  const payload: Payload = {
    object_kind: 'issue',
    user: userHookAttrs(user),
    project: projectHookAttrs(ctx, project),
    repository: repositoryAttrs(ctx, project),
    object_attributes: {
      ...issueAttrs(issue),
      url: `${webUrl(ctx, project)}/issues/${issue.iid}`,
      action,
    },
  };
  const assignee = assigneeOf(ctx, issue.assignee_id);
  if (assignee) payload.assignee = userHookAttrs(assignee);
  return payload;
}
