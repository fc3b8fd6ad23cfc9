/** Issues (docs/api-v3.md#issues): list, read, create, edit, close/reopen, delete, move, subscribe. */
import { z } from 'zod';
import type { Change, Http } from './http.ts';
import {
  commaList,
  milestoneSchema,
  userSummarySchema,
  type CallOptions,
  type ListOptions,
  type OrderSort,
  type ProjectRef,
} from './types.ts';

export const issueSchema = z.looseObject({
  id: z.number(),
  iid: z.number(),
  project_id: z.number(),
  title: z.string(),
  description: z.string().nullable(),
  state: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  labels: z.array(z.string()),
  milestone: milestoneSchema.nullable(),
  assignee: userSummarySchema.nullable(),
  author: userSummarySchema,
  subscribed: z.boolean().optional(),
  /** Present on later 8.x servers only. */
  confidential: z.boolean().optional(),
});
export type Issue = z.infer<typeof issueSchema>;

export interface IssueFilter {
  state?: 'opened' | 'closed';
  labels?: readonly string[] | string;
  order_by?: 'created_at' | 'updated_at';
  sort?: OrderSort;
}

export interface ProjectIssueFilter extends IssueFilter {
  iid?: number;
  milestone?: string;
}

export interface NewIssue {
  title: string;
  description?: string;
  assignee_id?: number;
  milestone_id?: number;
  labels?: readonly string[] | string;
  created_at?: string;
}

export interface IssueEdit {
  title?: string;
  description?: string;
  /** `0` or `null` unassigns. */
  assignee_id?: number | null;
  milestone_id?: number | null;
  /** Replaces the whole set (a server of that era has no add/remove): read, change, write back. */
  labels?: readonly string[] | string;
  state_event?: 'close' | 'reopen';
  updated_at?: string;
}

const ISSUE = '/projects/:id/issues/:issue_id';

export function createIssuesApi(http: Http) {
  return {
    /** Issues created by the authenticated user, across projects (`GET /issues`). */
    listMine(filter: IssueFilter = {}, options: ListOptions = {}): AsyncIterable<Issue> {
      return http.paginate({
        method: 'GET',
        route: '/issues',
        query: { ...filter, labels: commaList(filter.labels) },
        schema: issueSchema,
        ...options,
      });
    },

    list(
      project: ProjectRef,
      filter: ProjectIssueFilter = {},
      options: ListOptions = {},
    ): AsyncIterable<Issue> {
      return http.paginate({
        method: 'GET',
        route: '/projects/:id/issues',
        params: { id: project },
        query: { ...filter, labels: commaList(filter.labels) },
        schema: issueSchema,
        ...options,
      });
    },

    /** `issueId` is the global `id`, never the per-project `iid`. */
    get(project: ProjectRef, issueId: number, options: CallOptions = {}): Promise<Issue> {
      return http.request({
        method: 'GET',
        route: ISSUE,
        params: { id: project, issue_id: issueId },
        schema: issueSchema,
        ...options,
      });
    },

    async create(project: ProjectRef, issue: NewIssue, options: CallOptions = {}): Promise<Issue> {
      return http.request({
        method: 'POST',
        route: '/projects/:id/issues',
        params: { id: project },
        body: { ...issue, labels: commaList(issue.labels) },
        schema: issueSchema,
        ...options,
      });
    },

    async update(
      project: ProjectRef,
      issueId: number,
      edit: IssueEdit,
      options: CallOptions = {},
    ): Promise<Issue> {
      return http.request({
        method: 'PUT',
        route: ISSUE,
        params: { id: project, issue_id: issueId },
        body: { ...edit, labels: commaList(edit.labels) },
        schema: issueSchema,
        ...options,
      });
    },

    close(project: ProjectRef, issueId: number, options: CallOptions = {}): Promise<Issue> {
      return this.update(project, issueId, { state_event: 'close' }, options);
    },

    reopen(project: ProjectRef, issueId: number, options: CallOptions = {}): Promise<Issue> {
      return this.update(project, issueId, { state_event: 'reopen' }, options);
    },

    /** Admins and project owners only; 404 when absent (not idempotent, as docs/api-v3.md#issues states). */
    async remove(project: ProjectRef, issueId: number, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'DELETE',
        route: ISSUE,
        params: { id: project, issue_id: issueId },
        ...options,
      });
    },

    /** Moves the issue; the answer is the new issue in the target project (the old one is closed). */
    move(
      project: ProjectRef,
      issueId: number,
      toProjectId: number,
      options: CallOptions = {},
    ): Promise<Issue> {
      return http.request({
        method: 'POST',
        route: `${ISSUE}/move`,
        params: { id: project, issue_id: issueId },
        body: { to_project_id: toProjectId },
        schema: issueSchema,
        ...options,
      });
    },

    /** 304 (already subscribed) is `{ changed: false }`, not an error. */
    subscribe(project: ProjectRef, issueId: number, options: CallOptions = {}): Promise<Change<Issue>> {
      return http.requestChange({
        method: 'POST',
        route: `${ISSUE}/subscription`,
        params: { id: project, issue_id: issueId },
        schema: issueSchema,
        idempotent: true,
        ...options,
      });
    },

    unsubscribe(project: ProjectRef, issueId: number, options: CallOptions = {}): Promise<Change<Issue>> {
      return http.requestChange({
        method: 'DELETE',
        route: `${ISSUE}/subscription`,
        params: { id: project, issue_id: issueId },
        schema: issueSchema,
        ...options,
      });
    },
  };
}
