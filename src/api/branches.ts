/**
 * Branches (docs/api-v3.md#branches): list, read, protect, unprotect, and create. Branch names go in the
 * path URL-encoded, so `feature/x` is sent as `feature%2Fx`.
 */
import type { Http } from './http.ts';
import type { CallOptions, ListOptions, ProjectRef, Timestamp } from './types.ts';

export interface BranchCommit {
  id: string;
  parents: { id: string }[];
  tree: string;
  message: string;
  author: { name: string; email: string };
  committer: { name: string; email: string };
  authored_date: Timestamp;
  committed_date: Timestamp;
}

export interface Branch {
  name: string;
  protected: boolean;
  commit: BranchCommit;
  /** Later 8.x servers only. */
  developers_can_push?: boolean;
  developers_can_merge?: boolean;
}

export interface NewBranch {
  branch_name: string;
  /** A branch name, tag or commit sha to start from. */
  ref: string;
}

const BRANCH = '/projects/:id/repository/branches/:branch';

export function createBranchesApi(http: Http) {
  return {
    /** Real servers do not paginate this list: paginate() reads it as one page. */
    list(project: ProjectRef, options: ListOptions = {}): AsyncIterable<Branch> {
      return http.paginate({
        method: 'GET',
        route: '/projects/:id/repository/branches',
        params: { id: project },
        ...options,
      });
    },

    get(project: ProjectRef, branch: string, options: CallOptions = {}): Promise<Branch> {
      return http.request({ method: 'GET', route: BRANCH, params: { id: project, branch }, ...options });
    },

    /** The answer is not shown in docs/api-v3.md#branches; real servers answer the branch. Protecting twice is harmless. */
    protect(project: ProjectRef, branch: string, options: CallOptions = {}): Promise<Branch> {
      return http.request({
        method: 'PUT',
        route: `${BRANCH}/protect`,
        params: { id: project, branch },
        ...options,
      });
    },

    unprotect(project: ProjectRef, branch: string, options: CallOptions = {}): Promise<Branch> {
      return http.request({
        method: 'PUT',
        route: `${BRANCH}/unprotect`,
        params: { id: project, branch },
        ...options,
      });
    },

    /**
     * Not in docs/api-v3.md#branches ("Repositories (other than branches and commits)" is not shown); this is the
     * 8.x call, which the sandbox implements too: 201 with the branch, 400 with a message when the
     * name is invalid or taken or the ref unknown.
     */
    create(project: ProjectRef, branch: NewBranch, options: CallOptions = {}): Promise<Branch> {
      return http.request({
        method: 'POST',
        route: '/projects/:id/repository/branches',
        params: { id: project },
        body: { ...branch },
        ...options,
      });
    },
  };
}
