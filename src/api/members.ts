/** Project team members (docs/api-v3.md#project-team-members) and sharing a project with a group. */
import type { Http } from './http.ts';
import type { CallOptions, ListOptions, ProjectRef, Timestamp } from './types.ts';

/**
 * The numeric access levels. docs/api-v3.md#project-team-members does not show what the numbers mean (only 10, 40 and 50
 * appear in its samples); these are the levels of real v3-era servers.
 */
export const AccessLevel = { guest: 10, reporter: 20, developer: 30, master: 40, owner: 50 } as const;
export type AccessLevel = (typeof AccessLevel)[keyof typeof AccessLevel];

export interface ProjectMember {
  id: number;
  username: string;
  /** In the field list of docs/api-v3.md#project-team-member; real servers send it to administrators only. */
  email?: string;
  name: string;
  state: string;
  created_at?: Timestamp;
  access_level: number;
  avatar_url?: string | null;
  web_url?: string;
}

export interface MemberFilter {
  /** A search string on name or username. */
  query?: string;
}

export function createMembersApi(http: Http) {
  return {
    list(
      project: ProjectRef,
      filter: MemberFilter = {},
      options: ListOptions = {},
    ): AsyncIterable<ProjectMember> {
      return http.paginate({
        method: 'GET',
        route: '/projects/:id/members',
        params: { id: project },
        query: { ...filter },
        ...options,
      });
    },

    /**
     * The members of a group, with their access level in it (what its projects inherit). Not in
     * docs/api-v3.md ("Groups: not shown"); the real 8.x call (`GroupMembers`), paginated. A group the
     * caller may not see answers 404 `Group Not Found`, as an unknown one does.
     */
    listGroup(group: number, options: ListOptions = {}): AsyncIterable<ProjectMember> {
      return http.paginate({
        method: 'GET',
        route: '/groups/:id/members',
        params: { id: group },
        ...options,
      });
    },

    /** A member of the project itself (404 otherwise): members of its group are not listed here. */
    get(project: ProjectRef, userId: number, options: CallOptions = {}): Promise<ProjectMember> {
      return http.request({
        method: 'GET',
        route: '/projects/:id/members/:user_id',
        params: { id: project, user_id: userId },
        ...options,
      });
    },

    /**
     * A member of a group (`GET /groups/:id/members/:user_id`, 404 otherwise). Groups are "not shown"
     * in docs/api-v3.md; this is the 8.x call, which the sandbox implements too. A group is readable
     * by its members and by whoever can see one of its projects.
     */
    getInGroup(group: number, userId: number, options: CallOptions = {}): Promise<ProjectMember> {
      return http.request({
        method: 'GET',
        route: '/groups/:id/members/:user_id',
        params: { id: group, user_id: userId },
        ...options,
      });
    },

    /**
     * Idempotent per docs/api-v3.md#project-team-members (adding an existing member leaves the membership as it was), so it may
     * be retried. The answer is not shown there; real servers answer the member.
     */
    add(
      project: ProjectRef,
      userId: number,
      accessLevel: AccessLevel,
      options: CallOptions = {},
    ): Promise<ProjectMember> {
      return http.request({
        method: 'POST',
        route: '/projects/:id/members',
        params: { id: project },
        body: { user_id: userId, access_level: accessLevel },
        idempotent: true,
        ...options,
      });
    },

    /** The answer is not shown in docs/api-v3.md#project-team-members; real servers answer the member. */
    update(
      project: ProjectRef,
      userId: number,
      accessLevel: AccessLevel,
      options: CallOptions = {},
    ): Promise<ProjectMember> {
      return http.request({
        method: 'PUT',
        route: '/projects/:id/members/:user_id',
        params: { id: project, user_id: userId },
        body: { access_level: accessLevel },
        ...options,
      });
    },

    /**
     * Idempotent: removing a non-member succeeds; 403 when the caller lacks rights. The body differs
     * between the two cases (docs/api-v3.md#project-team-members: do not rely on it), so nothing is returned.
     */
    async remove(project: ProjectRef, userId: number, options: CallOptions = {}): Promise<void> {
      await http.request({
        method: 'DELETE',
        route: '/projects/:id/members/:user_id',
        params: { id: project, user_id: userId },
        ...options,
      });
    },

    /** Gives a group access to the project. The answer is not shown in docs/api-v3.md#project-team-members: nothing is returned. */
    async share(
      project: ProjectRef,
      groupId: number,
      groupAccess: AccessLevel,
      options: CallOptions = {},
    ): Promise<void> {
      await http.request({
        method: 'POST',
        route: '/projects/:id/share',
        params: { id: project },
        body: { group_id: groupId, group_access: groupAccess },
        ...options,
      });
    },
  };
}
