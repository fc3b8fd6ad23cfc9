/**
 * Merge requests (docs/api-v3.md#merge-requests): list, read, diff, versions (8.12+), create, edit,
 * delete, subscribe, accept (merge) and cancel merge-when-build-succeeds. Paths always use the plural
 * `/merge_requests/:merge_request_id` form with the global `id`, never the `iid` (the deprecated
 * singular `/merge_request/:id` path of real servers is never used).
 */
import { z } from 'zod';
import { ApiError } from './errors.ts';
import { isOpenState } from './types.ts';
import type { Change, Http, HttpMethod } from './http.ts';
import { diffEntrySchema, type Commit } from './commits.ts';
import { issueSchema, type Issue } from './issues.ts';
import {
  milestoneSchema,
  commaList,
  userSummarySchema,
  type BoundedCallOptions,
  type CallOptions,
  type ListOptions,
  type OrderSort,
  type ProjectRef,
} from './types.ts';

/** docs/api-v3.md#merge-requests: "integer (sometimes a numeric string)". Either way the bot compares numbers. */
const projectIdSchema = z.union([z.number(), z.string().regex(/^\d+$/).transform(Number)]);

export const mergeRequestSchema = z.looseObject({
  id: z.number(),
  iid: z.number(),
  project_id: z.number(),
  title: z.string(),
  description: z.string().nullable(),
  /** `opened`, `closed`, `merged`; `reopened` appears too, and real servers show `locked` mid-merge. */
  state: z.string(),
  source_branch: z.string(),
  target_branch: z.string(),
  source_project_id: projectIdSchema,
  target_project_id: projectIdSchema,
  author: userSummarySchema,
  assignee: userSummarySchema.nullable(),
  labels: z.array(z.string()),
  milestone: milestoneSchema.nullable().optional(),
  work_in_progress: z.boolean(),
  merge_when_build_succeeds: z.boolean(),
  /** `can_be_merged`, `cannot_be_merged`, `unchecked`. */
  merge_status: z.string(),
  upvotes: z.number(),
  downvotes: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
  subscribed: z.boolean().optional(),
  /** The source branch's head commit: present on later 8.x servers only (pass it to `merge` as a guard). */
  sha: z.string().nullish(),
});
export type MergeRequest = z.infer<typeof mergeRequestSchema>;

export const mergeRequestChangesSchema = mergeRequestSchema.extend({ changes: z.array(diffEntrySchema) });
/** A merge request with its diff (`GET .../changes`). */
export type MergeRequestChanges = z.infer<typeof mergeRequestChangesSchema>;

/**
 * One version of a merge request (servers 8.12 and later, docs/api-v3.md#merge-request-version): the
 * diff the server made of it at `created_at`. `head_commit_sha` is the source head then, null when the
 * branch was gone. Versions come newest first; the one current at a comment's `created_at` holds the
 * head its writer saw (docs/server-behaviour.md#merge-request-versions).
 */
export const mergeRequestVersionSchema = z.looseObject({
  id: z.number(),
  head_commit_sha: z.string().nullable(),
  base_commit_sha: z.string().nullable(),
  start_commit_sha: z.string().nullable(),
  created_at: z.string(),
  merge_request_id: z.number(),
  /** `collected`, `empty`, `overflow`. */
  state: z.string(),
  /** Files changed, as a string (`"1"`, `"100+"`); null without commits. */
  real_size: z.union([z.string(), z.number()]).nullish(),
});
export type MergeRequestVersion = z.infer<typeof mergeRequestVersionSchema>;

/** One version with its commits (newest first, the list form without `allow_failure`) and its diff. */
export const mergeRequestVersionDetailSchema = mergeRequestVersionSchema.extend({
  commits: z.array(z.looseObject({ id: z.string(), title: z.string(), created_at: z.string() })),
  diffs: z.array(diffEntrySchema),
});
export type MergeRequestVersionDetail = z.infer<typeof mergeRequestVersionDetailSchema>;

/** The commits of a merge request: the list form of a commit without `allow_failure`. */
export type MergeRequestCommit = Omit<Commit, 'allow_failure'>;

export interface MergeRequestFilter {
  iid?: number;
  state?: 'all' | 'merged' | 'opened' | 'closed';
  order_by?: 'created_at' | 'updated_at';
  sort?: OrderSort;
}

export interface NewMergeRequest {
  source_branch: string;
  target_branch: string;
  title: string;
  assignee_id?: number;
  description?: string;
  /** For a merge request from a fork into its upstream. */
  target_project_id?: number;
  labels?: readonly string[] | string;
  milestone_id?: number;
}

export interface MergeRequestEdit {
  target_branch?: string;
  /** `0` or `null` unassigns. */
  assignee_id?: number | null;
  title?: string;
  description?: string;
  /** `merge` here is as ambiguous as `merge()` after a lost answer; prefer `merge()`, which tells outcomes apart. */
  state_event?: 'close' | 'reopen' | 'merge';
  /** Replaces the whole set: read, change, write back. */
  labels?: readonly string[] | string;
  milestone_id?: number | null;
}

export interface MergeParams {
  /** Merge only if the source head is still this commit (else `sha_mismatch`). */
  sha?: string;
  merge_commit_message?: string;
  should_remove_source_branch?: boolean;
  /** Arm the merge to happen when the build succeeds, if a build is running (else it merges now). */
  merge_when_build_succeeds?: boolean;
}

/**
 * What a merge attempt came to. Every answer the server gives about the merge request itself is
 * an outcome; only answers about the caller or the call (401, 403, 404, 400, ...) throw.
 */
export type MergeOutcome =
  /** Merged now. */
  | { outcome: 'merged'; mr: MergeRequest }
  /** Set to merge when the build succeeds: still `opened`, `merge_when_build_succeeds: true`. */
  | { outcome: 'armed'; mr: MergeRequest }
  /**
   * 200, yet neither merged nor armed: the merge itself failed on the server (it answers 200 and
   * leaves the MR opened) or it is still in progress (`locked`). Re-read before acting again.
   */
  | { outcome: 'not_merged'; mr: MergeRequest }
  /** The branch does not merge cleanly. */
  | { outcome: 'conflict'; message: string }
  /** Closed, already merged, or work in progress. */
  | { outcome: 'not_mergeable'; message: string }
  /** `sha` was given and the source branch has moved on since. */
  | { outcome: 'sha_mismatch'; message: string }
  /** The request may or may not have taken effect (timeout, lost connection, 5xx): re-read the MR before anything else. */
  | { outcome: 'ambiguous'; error: ApiError };

const MR = '/projects/:id/merge_requests/:merge_request_id';
const CANCEL = `${MR}/cancel_merge_when_build_succeeds`;

type CancelMethod = Extract<HttpMethod, 'POST' | 'PUT'>;

export function createMergeRequestsApi(http: Http) {
  /**
   * Real servers route cancel as POST, docs/api-v3.md#merge-requests (and so the sandbox) as PUT. The first call finds
   * out which one this server has; later calls on this client go straight to it.
   */
  let cancelMethod: CancelMethod = 'POST';

  function mrParams(project: ProjectRef, mergeRequestId: number) {
    return { id: project, merge_request_id: mergeRequestId };
  }

  async function cancelWith(
    method: CancelMethod,
    project: ProjectRef,
    mergeRequestId: number,
    options: CallOptions,
  ): Promise<Change<MergeRequest>> {
    try {
      const mr = await http.request({
        method,
        route: CANCEL,
        params: mrParams(project, mergeRequestId),
        schema: mergeRequestSchema,
        // Repeating a cancel is harmless (the second one finds nothing to cancel: 406), so a
        // timeout or a 5xx may be retried even on the POST route.
        idempotent: true,
        ...options,
      });
      return { changed: true, value: mr };
    } catch (error) {
      // 406: not set to merge when the build succeeds: there was nothing to cancel.
      if (error instanceof ApiError && error.status === 406) return { changed: false };
      throw error;
    }
  }

  return {
    list(
      project: ProjectRef,
      filter: MergeRequestFilter = {},
      options: ListOptions = {},
    ): AsyncIterable<MergeRequest> {
      return http.paginate({
        method: 'GET',
        route: '/projects/:id/merge_requests',
        params: { id: project },
        query: { ...filter },
        schema: mergeRequestSchema,
        ...options,
      });
    },

    /** `mergeRequestId` is the global `id`, never the per-project `iid`. */
    get(project: ProjectRef, mergeRequestId: number, options: CallOptions = {}): Promise<MergeRequest> {
      return http.request({
        method: 'GET',
        route: MR,
        params: mrParams(project, mergeRequestId),
        schema: mergeRequestSchema,
        ...options,
      });
    },

    commits(
      project: ProjectRef,
      mergeRequestId: number,
      options: ListOptions = {},
    ): AsyncIterable<MergeRequestCommit> {
      return http.paginate<MergeRequestCommit>({
        method: 'GET',
        route: `${MR}/commits`,
        params: mrParams(project, mergeRequestId),
        ...options,
      });
    },

    /**
     * The merge request's versions, newest first (servers 8.12 and later; paginated from a later 8.x
     * release, whole on 8.12: both read as one list). A server without the endpoint answers 404
     * `{"error":"404 Not Found"}`: thrown as the ApiError it is (`kind` `not_found`, `messageKey`
     * `error`; a missing merge request says `message`), for the caller to fall back on what it has.
     */
    versions(
      project: ProjectRef,
      mergeRequestId: number,
      options: ListOptions = {},
    ): AsyncIterable<MergeRequestVersion> {
      return http.paginate({
        method: 'GET',
        route: `${MR}/versions`,
        params: mrParams(project, mergeRequestId),
        schema: mergeRequestVersionSchema,
        ...options,
      });
    },

    /** One version with its commits and diff (as large as the change: `maxBytes` bounds what is read). */
    version(
      project: ProjectRef,
      mergeRequestId: number,
      versionId: number,
      options: BoundedCallOptions = {},
    ): Promise<MergeRequestVersionDetail> {
      return http.request({
        method: 'GET',
        route: `${MR}/versions/:version_id`,
        params: { ...mrParams(project, mergeRequestId), version_id: versionId },
        schema: mergeRequestVersionDetailSchema,
        ...options,
      });
    },

    /** The diff of every file: as large as the change (`maxBytes` bounds what is read). */
    changes(
      project: ProjectRef,
      mergeRequestId: number,
      options: BoundedCallOptions = {},
    ): Promise<MergeRequestChanges> {
      return http.request({
        method: 'GET',
        route: `${MR}/changes`,
        params: mrParams(project, mergeRequestId),
        schema: mergeRequestChangesSchema,
        ...options,
      });
    },

    /** Answers 200 (not 201). */
    async create(project: ProjectRef, mr: NewMergeRequest, options: CallOptions = {}): Promise<MergeRequest> {
      return http.request({
        method: 'POST',
        route: '/projects/:id/merge_requests',
        params: { id: project },
        body: { ...mr, labels: commaList(mr.labels) },
        schema: mergeRequestSchema,
        ...options,
      });
    },

    async update(
      project: ProjectRef,
      mergeRequestId: number,
      edit: MergeRequestEdit,
      options: CallOptions = {},
    ): Promise<MergeRequest> {
      return http.request({
        method: 'PUT',
        route: MR,
        params: mrParams(project, mergeRequestId),
        body: { ...edit, labels: commaList(edit.labels) },
        schema: mergeRequestSchema,
        // A merge is never repeated blindly (see `merge`); close and reopen are safe to repeat.
        idempotent: edit.state_event !== 'merge',
        ...options,
      });
    },

    close(project: ProjectRef, mergeRequestId: number, options: CallOptions = {}): Promise<MergeRequest> {
      return this.update(project, mergeRequestId, { state_event: 'close' }, options);
    },

    reopen(project: ProjectRef, mergeRequestId: number, options: CallOptions = {}): Promise<MergeRequest> {
      return this.update(project, mergeRequestId, { state_event: 'reopen' }, options);
    },

    /** Admins and project owners only; 404 when absent or not destroyable (not idempotent, as docs/api-v3.md#merge-requests states). */
    async remove(project: ProjectRef, mergeRequestId: number, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'DELETE',
        route: MR,
        params: mrParams(project, mergeRequestId),
        ...options,
      });
    },

    /** The issues that merging would close ("Closes #12" in the description or commits). */
    closesIssues(
      project: ProjectRef,
      mergeRequestId: number,
      options: ListOptions = {},
    ): AsyncIterable<Issue> {
      return http.paginate({
        method: 'GET',
        route: `${MR}/closes_issues`,
        params: mrParams(project, mergeRequestId),
        schema: issueSchema,
        ...options,
      });
    },

    /** 304 (already subscribed: authors, assignees and commenters are) is `{ changed: false }`. */
    subscribe(
      project: ProjectRef,
      mergeRequestId: number,
      options: CallOptions = {},
    ): Promise<Change<MergeRequest>> {
      return http.requestChange({
        method: 'POST',
        route: `${MR}/subscription`,
        params: mrParams(project, mergeRequestId),
        schema: mergeRequestSchema,
        idempotent: true,
        ...options,
      });
    },

    unsubscribe(
      project: ProjectRef,
      mergeRequestId: number,
      options: CallOptions = {},
    ): Promise<Change<MergeRequest>> {
      return http.requestChange({
        method: 'DELETE',
        route: `${MR}/subscription`,
        params: mrParams(project, mergeRequestId),
        schema: mergeRequestSchema,
        ...options,
      });
    },

    /**
     * Accepts (merges) the merge request, or arms it to merge when the build succeeds. Sent once,
     * never retried: after a lost answer nobody knows whether it merged, so that is an outcome
     * (`ambiguous`) the caller must resolve by re-reading the MR, not something to repeat.
     */
    async merge(
      project: ProjectRef,
      mergeRequestId: number,
      params: MergeParams = {},
      options: CallOptions = {},
    ): Promise<MergeOutcome> {
      let mr: MergeRequest;
      try {
        mr = await http.request({
          method: 'PUT',
          route: `${MR}/merge`,
          params: mrParams(project, mergeRequestId),
          // `merge_when_build_succeeds` is what real servers read; docs/api-v3.md#merge-requests misspells it
          // `merged_when_build_succeeds`, a name real servers ignore.
          body: { ...params },
          schema: mergeRequestSchema,
          idempotent: false,
          ...options,
        });
      } catch (error) {
        const outcome = failedMergeOutcome(error);
        if (outcome) return outcome;
        throw error;
      }
      if (mr.state === 'merged') return { outcome: 'merged', mr };
      if (isOpenState(mr.state) && mr.merge_when_build_succeeds) return { outcome: 'armed', mr };
      return { outcome: 'not_merged', mr };
    },

    /**
     * Cancels merge-when-build-succeeds: `{ changed: true, value }` when cancelled, `{ changed: false }`
     * when it was not set (406). Closed or merged MRs throw ApiError (kind `not_allowed`, 405).
     * Tries this client's known route method first (POST until found otherwise); when the answer says
     * that route does not exist, tries the other method once and keeps whichever answered.
     */
    async cancelMergeWhenBuildSucceeds(
      project: ProjectRef,
      mergeRequestId: number,
      options: CallOptions = {},
    ): Promise<Change<MergeRequest>> {
      const first = cancelMethod;
      try {
        return await cancelWith(first, project, mergeRequestId, options);
      } catch (error) {
        if (!isMissingRoute(error)) throw error;
        const second: CancelMethod = first === 'POST' ? 'PUT' : 'POST';
        try {
          const result = await cancelWith(second, project, mergeRequestId, options);
          cancelMethod = second;
          return result;
        } catch (retryError) {
          // Neither route exists (or both answers are 404s about the MR): the first answer speaks.
          if (isMissingRoute(retryError)) throw error;
          cancelMethod = second;
          throw retryError;
        }
      }
    },
  };
}

/** Maps a failed merge to its outcome; `undefined` means the error is about the call, not the MR: rethrow. */
function failedMergeOutcome(error: unknown): MergeOutcome | undefined {
  if (!(error instanceof ApiError)) return undefined;
  // A timeout, a connection lost after sending, or a 5xx on this never-retried call.
  if (error.ambiguous) return { outcome: 'ambiguous', error };
  // A success whose body we could not read: the server did something, we cannot say what.
  if (error.kind === 'invalid_response' && error.status !== undefined && error.status < 300)
    return { outcome: 'ambiguous', error };
  const text = error.serverText ?? '';
  switch (error.status) {
    case 405:
      // docs/api-v3.md#merge-requests answers a conflict with 405 `Branch cannot be merged`, and a closed, merged or
      // WIP MR with 405 `Method Not Allowed`; real 8.3+ servers use 406 for the conflict.
      return /cannot be merged/i.test(text)
        ? { outcome: 'conflict', message: text }
        : { outcome: 'not_mergeable', message: text || '405 Method Not Allowed' };
    case 406:
      // Real 8.3+ servers: 406 on merge means only "Branch cannot be merged".
      return { outcome: 'conflict', message: text || 'Branch cannot be merged' };
    case 409:
      return { outcome: 'sha_mismatch', message: text || 'SHA does not match HEAD of source branch' };
    default:
      return undefined;
  }
}

/**
 * Whether a failed cancel means "no such route for this method" rather than an answer about the
 * merge request. grape answers an unknown route with `{"error":"404 Not Found"}` and a path known
 * only for other methods with 405 `{"error":"405 Not Allowed"}` plus `Allow`; an express-like
 * server answers an HTML page. The API's own answers are `{"message": ...}`: `404 Project Not
 * Found`, `405 Method Not Allowed` (closed or merged), and so on.
 *
 * ApiError carries neither the answer's headers nor which key held the message (see
 * `http.ts`: `toApiError` drops both), so the texts decide. A 404 about the MR itself whose text
 * is the bare `404 Not Found` also counts as missing; that costs one call to the other route,
 * whose answer then decides nothing (the first error is thrown).
 */
function isMissingRoute(error: unknown): boolean {
  if (!(error instanceof ApiError)) return false;
  // grape answers an unknown route with `{"error":"404 Not Found"}`; a missing MR is `{"message":...}`.
  if (error.status === 404) return error.messageKey !== 'message';
  // A route that exists for another method: 405 with an `Allow` header (grape sends one) that lacks
  // the method we tried. A 405 without it is the API's own "already merged or closed".
  if (error.status === 405) {
    const allow = error.responseHeaders.allow;
    const methods = (Array.isArray(allow) ? allow.join(',') : (allow ?? '')).toUpperCase();
    return methods.length > 0 && !(error.method && methods.includes(error.method));
  }
  return false;
}
