/** The issue as the API answers it (docs/api-v3.md#issue), seen by one user (`subscribed` is theirs). */
import type { SandboxContext } from './context.ts';
import type { IssueRec, UserRec } from './db.ts';
import { isSubscribed } from './issuables.ts';
import { milestoneView, userSummary } from './views.ts';

export function issueView(ctx: SandboxContext, issue: IssueRec, viewer: UserRec) {
  return {
    id: issue.id,
    iid: issue.iid,
    project_id: issue.project_id,
    title: issue.title,
    description: issue.description,
    state: issue.state,
    created_at: issue.created_at,
    updated_at: issue.updated_at,
    // Real 8.x `label_names` come ordered by title.
    labels: [...issue.labels].sort((a, b) => a.localeCompare(b)),
    milestone: milestoneView(ctx, issue.milestone_id),
    assignee: userSummary(ctx, issue.assignee_id),
    author: userSummary(ctx, issue.author_id),
    subscribed: isSubscribed(ctx, 'Issue', issue, viewer),
    // Not among the documented fields of docs/api-v3.md#issue; real 8.x servers (8.6 and later) show it, and the sandbox honours it.
    confidential: issue.confidential,
  };
}
