/** Repository commits (docs/api-v3.md#commits): list, read, diff, comments. */
import { z } from 'zod';
import type { Http } from './http.ts';
import type { CallOptions, ListOptions, ProjectRef, Timestamp, UserSummary } from './types.ts';

/** A commit in list form (`GET .../repository/commits`). */
export interface Commit {
  /** The full hash. */
  id: string;
  short_id: string;
  title: string;
  message: string;
  author_name: string;
  author_email: string;
  /** With a numeric offset, e.g. `2012-09-20T11:50:22+03:00`. */
  created_at: Timestamp;
  allow_failure?: boolean;
}

/** A commit in single form (`GET .../repository/commits/:sha`): no `allow_failure`, more dates and the parents. */
export interface CommitDetail extends Omit<Commit, 'allow_failure'> {
  committed_date: Timestamp;
  authored_date: Timestamp;
  parent_ids: string[];
  /** The build status of the commit, e.g. `running`; null when it has none. */
  status: string | null;
}

/** The changed paths of a diff are what rules act on (e.g. "files under docs/ changed"): checked at the boundary. */
export const diffEntrySchema = z.looseObject({
  diff: z.string(),
  old_path: z.string(),
  new_path: z.string(),
  a_mode: z.string().nullable().optional(),
  b_mode: z.string().nullable().optional(),
  new_file: z.boolean(),
  renamed_file: z.boolean(),
  deleted_file: z.boolean(),
});
export type DiffEntry = z.infer<typeof diffEntrySchema>;

export interface CommitComment {
  note: string;
  /** A list answer embeds a longer author (with email and created_at). */
  author: UserSummary;
  path: string | null;
  line: number | null;
  line_type: 'new' | 'old' | null;
  /** In the create answer. */
  created_at?: Timestamp;
}

export interface CommitFilter {
  /** Branch or tag; the default branch when omitted. */
  ref_name?: string;
}

export interface NewCommitComment {
  note: string;
  /**
   * A comment lands on a file line only with the full commit SHA, `path`, `line` and `line_type: 'new'`;
   * otherwise the server adds it to the end of the commit and answers with those fields null.
   */
  path?: string;
  line?: number;
  line_type?: 'new' | 'old';
}

const COMMIT = '/projects/:id/repository/commits/:sha';

export function createCommitsApi(http: Http) {
  return {
    list(project: ProjectRef, filter: CommitFilter = {}, options: ListOptions = {}): AsyncIterable<Commit> {
      return http.paginate<Commit>({
        method: 'GET',
        route: '/projects/:id/repository/commits',
        params: { id: project },
        query: { ...filter },
        ...options,
      });
    },

    /** `sha` may also be a branch or tag name (sent URL-encoded). */
    get(project: ProjectRef, sha: string, options: CallOptions = {}): Promise<CommitDetail> {
      return http.request<CommitDetail>({
        method: 'GET',
        route: COMMIT,
        params: { id: project, sha },
        ...options,
      });
    },

    /**
     * The whole diff of one commit. Collected through the pager: docs/api-v3.md#commits pages every GET list,
     * while real 8.x servers answer it in one piece without pagination headers (one page).
     */
    diff(project: ProjectRef, sha: string, options: ListOptions = {}): Promise<DiffEntry[]> {
      return http.all({
        method: 'GET',
        route: `${COMMIT}/diff`,
        params: { id: project, sha },
        schema: diffEntrySchema,
        ...options,
      });
    },

    listComments(project: ProjectRef, sha: string, options: ListOptions = {}): AsyncIterable<CommitComment> {
      return http.paginate<CommitComment>({
        method: 'GET',
        route: `${COMMIT}/comments`,
        params: { id: project, sha },
        ...options,
      });
    },

    /** A POST, never retried: a repeated comment would show twice. */
    createComment(
      project: ProjectRef,
      sha: string,
      comment: NewCommitComment,
      options: CallOptions = {},
    ): Promise<CommitComment> {
      return http.request<CommitComment>({
        method: 'POST',
        route: `${COMMIT}/comments`,
        params: { id: project, sha },
        body: { ...comment },
        ...options,
      });
    },
  };
}
