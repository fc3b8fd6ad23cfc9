/** PLACEHOLDER: hook payloads of that era are being written (issue 3); the signatures are final. */
import type { SandboxContext } from './context.ts';
import type { IssueRec, MergeRequestRec, NoteRec, ProjectRec, StatusRec, UserRec } from './db.ts';

export type IssueAction = 'open' | 'update' | 'close' | 'reopen';
export type MergeRequestAction = 'open' | 'update' | 'close' | 'reopen' | 'merge';

/** `Issue Hook` (or `Confidential Issue Hook` content: same shape). */
export function issuePayload(
  _ctx: SandboxContext,
  issue: IssueRec,
  _user: UserRec,
  action: IssueAction,
): Record<string, unknown> {
  return { object_kind: 'issue', object_attributes: { id: issue.id, action } };
}

/** `Merge Request Hook`; `oldrev` is set when a push to the source branch caused the update. */
export function mergeRequestPayload(
  _ctx: SandboxContext,
  mr: MergeRequestRec,
  _user: UserRec,
  action: MergeRequestAction,
  _extra: { oldrev?: string } = {},
): Record<string, unknown> {
  return { object_kind: 'merge_request', object_attributes: { id: mr.id, action } };
}

/** `Note Hook` for a note on an issue, a merge request or a commit. */
export function notePayload(_ctx: SandboxContext, note: NoteRec, _user: UserRec): Record<string, unknown> {
  return { object_kind: 'note', object_attributes: { id: note.id } };
}

/** `Push Hook` (branches) or `Tag Push Hook` (refs/tags/...). */
export async function pushPayload(
  _ctx: SandboxContext,
  _project: ProjectRec,
  push: { ref: string; before: string; after: string; user: UserRec },
): Promise<Record<string, unknown>> {
  return { object_kind: push.ref.startsWith('refs/tags/') ? 'tag_push' : 'push', ref: push.ref };
}

/** `Pipeline Hook` for the combined status of one commit. */
export function pipelinePayload(
  _ctx: SandboxContext,
  _project: ProjectRec,
  sha: string,
  _statuses: StatusRec[],
  _user: UserRec,
): Record<string, unknown> {
  return { object_kind: 'pipeline', object_attributes: { sha } };
}
