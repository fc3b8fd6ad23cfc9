/** `Note Hook` payloads: a comment on an issue, a merge request or a commit. */
import { createHash } from 'node:crypto';
import type { SandboxContext } from '../context.ts';
import type { MergeRequestRec, NoteRec, UserRec } from '../db.ts';
import {
  assigneeOf,
  commitHookAttrsBySha,
  payloadTime,
  projectHookAttrs,
  projectOf,
  repositoryAttrs,
  userHookAttrs,
  webUrl,
  type Payload,
} from './hook-attrs.ts';
import { issueAttrs } from './issue.ts';
import { lastCommitAttrs, sourceAttrs, WIP_PATTERN } from './merge-request.ts';

/** The merge request as the note sample embeds it: its columns (`position`, `locked_at`) and no url/action. */
export function noteMergeRequestAttrs(ctx: SandboxContext, mr: MergeRequestRec) {
  const target = projectOf(ctx, mr.target_project_id);
  const attrs: Payload = {
    id: mr.id,
    target_branch: mr.target_branch,
    source_branch: mr.source_branch,
    source_project_id: mr.source_project_id,
    author_id: mr.author_id,
    assignee_id: mr.assignee_id,
    title: mr.title,
    created_at: payloadTime(mr.created_at),
    updated_at: payloadTime(mr.updated_at),
    milestone_id: mr.milestone_id,
    state: mr.state,
    merge_status: mr.merge_status,
    target_project_id: mr.target_project_id,
    iid: mr.iid,
    description: mr.description,
    position: 0,
    locked_at: null,
    source: sourceAttrs(ctx, mr),
    target: projectHookAttrs(ctx, target),
    last_commit: lastCommitAttrs(ctx, mr, undefined),
    work_in_progress: WIP_PATTERN.test(mr.title),
  };
  const assignee = assigneeOf(ctx, mr.assignee_id);
  if (assignee) attrs.assignee = userHookAttrs(assignee);
  return attrs;
}

/**
 * 8.x line codes are `<sha1 of the path>_<old line>_<new line>`; the other side's number comes from the
 * diff, which this synchronous builder cannot read, so it is 0 here.
 */
export function lineCode(note: NoteRec): string | null {
  if (note.path === null || note.line === null) return null;
  const hash = createHash('sha1').update(note.path).digest('hex');
  return note.line_type === 'old' ? `${hash}_${note.line}_0` : `${hash}_0_${note.line}`;
}

/** `Note Hook` for a note on an issue, a merge request or a commit (8.x `NoteDataBuilder`). */
export function notePayload(ctx: SandboxContext, note: NoteRec, user: UserRec): Record<string, unknown> {
  const project = projectOf(ctx, note.project_id);
  const web = webUrl(ctx, project);
  const issue =
    note.noteable_type === 'Issue' ? ctx.db.data.issues.find((i) => i.id === note.noteable_id) : undefined;
  const mr =
    note.noteable_type === 'MergeRequest'
      ? ctx.db.data.mergeRequests.find((m) => m.id === note.noteable_id)
      : undefined;
  const anchor = `#note_${note.id}`;
  const url =
    note.noteable_type === 'Commit'
      ? `${web}/commit/${note.commit_id ?? ''}${anchor}`
      : note.noteable_type === 'Issue'
        ? `${web}/issues/${issue?.iid ?? ''}${anchor}`
        : `${web}/merge_requests/${mr?.iid ?? ''}${anchor}`;
  const payload: Payload = {
    object_kind: 'note',
    user: userHookAttrs(user),
    project_id: project.id,
    project: projectHookAttrs(ctx, project),
    repository: repositoryAttrs(ctx, project),
    object_attributes: {
      id: note.id,
      note: note.body,
      noteable_type: note.noteable_type,
      author_id: note.author_id,
      created_at: payloadTime(note.created_at),
      updated_at: payloadTime(note.updated_at),
      project_id: note.project_id,
      attachment: null,
      line_code: note.noteable_type === 'Commit' ? lineCode(note) : null,
      // Real servers store "" rather than null for notes that are not on a commit (see the samples).
      commit_id: note.commit_id ?? '',
      noteable_id: note.noteable_id,
      system: note.system,
      // The diff of a commit line note needs git (asynchronous): not given here.
      st_diff: null,
      url,
    },
  };
  if (note.noteable_type === 'Commit' && note.commit_id)
    payload.commit = commitHookAttrsBySha(ctx, project, note.commit_id);
  else if (issue) payload.issue = issueAttrs(issue);
  else if (mr) payload.merge_request = noteMergeRequestAttrs(ctx, mr);
  return payload;
}
