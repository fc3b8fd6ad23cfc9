/**
 * Notes: the comments on issues and merge requests. docs/api-v3.md#notes shows notes only in a pagination
 * example (`GET /projects/:id/issues/:issue_id/notes`) and says "not shown" for the rest; these
 * routes, the `body` field and the answer's shape follow the GitLab 8.x notes API.
 */
import { z } from 'zod';
import type { Http } from './http.ts';
import { userSummarySchema, type CallOptions, type ListOptions, type ProjectRef } from './types.ts';

export const noteSchema = z.looseObject({
  id: z.number(),
  body: z.string(),
  author: userSummarySchema,
  created_at: z.string(),
  /** System notes ("Status changed to closed", "mentioned in ...") are written by the server, not a person. */
  system: z.boolean(),
  noteable_id: z.number(),
  /** `Issue` or `MergeRequest` here. */
  noteable_type: z.string(),
  upvote: z.boolean().optional(),
  downvote: z.boolean().optional(),
  attachment: z.string().nullable().optional(),
});
export type Note = z.infer<typeof noteSchema>;

const ISSUE_NOTES = '/projects/:id/issues/:issue_id/notes';
const MR_NOTES = '/projects/:id/merge_requests/:merge_request_id/notes';

export function createNotesApi(http: Http) {
  return {
    /** `issueId` is the global `id`, never the per-project `iid`. */
    listIssueNotes(project: ProjectRef, issueId: number, options: ListOptions = {}): AsyncIterable<Note> {
      return http.paginate({
        method: 'GET',
        route: ISSUE_NOTES,
        params: { id: project, issue_id: issueId },
        schema: noteSchema,
        ...options,
      });
    },

    /** One note by id: what a note event is about, as the server has it (never the payload's copy). */
    getIssueNote(
      project: ProjectRef,
      issueId: number,
      noteId: number,
      options: CallOptions = {},
    ): Promise<Note> {
      return http.request({
        method: 'GET',
        route: `${ISSUE_NOTES}/:note_id`,
        params: { id: project, issue_id: issueId, note_id: noteId },
        schema: noteSchema,
        ...options,
      });
    },

    /** A POST, never retried: a repeated comment would show twice (and fire the note hook twice). */
    createIssueNote(
      project: ProjectRef,
      issueId: number,
      body: string,
      options: CallOptions = {},
    ): Promise<Note> {
      return http.request({
        method: 'POST',
        route: ISSUE_NOTES,
        params: { id: project, issue_id: issueId },
        body: { body },
        schema: noteSchema,
        ...options,
      });
    },

    /** `mergeRequestId` is the global `id`, never the per-project `iid`. */
    listMergeRequestNotes(
      project: ProjectRef,
      mergeRequestId: number,
      options: ListOptions = {},
    ): AsyncIterable<Note> {
      return http.paginate({
        method: 'GET',
        route: MR_NOTES,
        params: { id: project, merge_request_id: mergeRequestId },
        schema: noteSchema,
        ...options,
      });
    },

    getMergeRequestNote(
      project: ProjectRef,
      mergeRequestId: number,
      noteId: number,
      options: CallOptions = {},
    ): Promise<Note> {
      return http.request({
        method: 'GET',
        route: `${MR_NOTES}/:note_id`,
        params: { id: project, merge_request_id: mergeRequestId, note_id: noteId },
        schema: noteSchema,
        ...options,
      });
    },

    createMergeRequestNote(
      project: ProjectRef,
      mergeRequestId: number,
      body: string,
      options: CallOptions = {},
    ): Promise<Note> {
      return http.request({
        method: 'POST',
        route: MR_NOTES,
        params: { id: project, merge_request_id: mergeRequestId },
        body: { body },
        schema: noteSchema,
        ...options,
      });
    },

    /**
     * Edits a comment in place (8.x `PUT .../notes/:note_id` with `body`): only its author (or an
     * admin) may. Idempotent: the same body twice leaves the same note.
     */
    updateMergeRequestNote(
      project: ProjectRef,
      mergeRequestId: number,
      noteId: number,
      body: string,
      options: CallOptions = {},
    ): Promise<Note> {
      return http.request({
        method: 'PUT',
        route: `${MR_NOTES}/:note_id`,
        params: { id: project, merge_request_id: mergeRequestId, note_id: noteId },
        body: { body },
        schema: noteSchema,
        ...options,
      });
    },
  };
}
