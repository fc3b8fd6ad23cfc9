/**
 * The access level of a user to a project, as far as the v3 API lets a caller see it: the one place
 * the bot reads it (the merge queue's push rule, the snapshot reader for `author_access`,
 * `actor_access` and the gate of merge-like actions).
 *
 * 8.x gives a user the highest of: her membership of the project, her membership of the project's
 * group (a group's members reach its projects), and owner (50) of a project in her own user
 * namespace. Those three are what the API shows: `GET /projects/:id/members/:user_id`, `GET
 * /groups/:id/members/:user_id`, and the project's `owner` (servers send it for projects in a user
 * namespace only). Access through a group the project is shared with, and an administrator's
 * rights, are not visible: such a user reads as less than she is, never as more. A membership of a
 * user who is not active (blocked) counts as none, and a group the caller cannot read as no
 * membership. Nothing is cached: access is read from the server each time it is asked.
 */
import { ApiError } from './errors.ts';
import type { createMembersApi } from './members.ts';

type MembersApi = ReturnType<typeof createMembersApi>;

export interface AccessClient {
  members: Pick<MembersApi, 'get' | 'getInGroup'>;
}

/** What of a project decides where its members are: its namespace, and its owner when in a user's. */
export interface AccessProject {
  id: number;
  namespace: { id: number };
  /** The owner of a project in a user namespace; absent (or null) for a group's project. */
  owner?: { id?: number } | null;
}

export interface AccessUser {
  id: number;
  /** As the API shows the user (`active`, `blocked`...); absent: not known, the memberships decide. */
  state?: string;
}

/** The owner of a user namespace's project (and 8.x's `owner` level of a group). */
export const OWNER_ACCESS = 50;

const isActive = (state: string | undefined): boolean => state === undefined || state === 'active';

async function membershipLevel(
  read: () => Promise<{ access_level: number; state?: string }>,
): Promise<number> {
  try {
    const member = await read();
    return isActive(member.state) ? member.access_level : 0;
  } catch (error) {
    // Not a member (or a group the caller may not read): no access through it.
    if (error instanceof ApiError && error.status === 404) return 0;
    throw error;
  }
}

export interface AccessOptions {
  /**
   * Stop reading once the level reached this (a caller that only asks "at least developer?" saves
   * the group's call for a member of the project). Absent: the exact level.
   */
  enough?: number;
}

/**
 * The user's access level to the project (0: none the bot can see). Other API errors are thrown: a
 * transient failure must not read as "no access" (a caller retries).
 */
export async function accessLevel(
  client: AccessClient,
  project: AccessProject,
  user: AccessUser,
  options: AccessOptions = {},
): Promise<number> {
  if (!isActive(user.state)) return 0;
  const enough = options.enough ?? OWNER_ACCESS;
  if (project.owner != null) {
    // A project in a user namespace: its owner, or a member of the project itself.
    if (project.owner.id === user.id) return OWNER_ACCESS;
    return membershipLevel(() => client.members.get(project.id, user.id));
  }
  const own = await membershipLevel(() => client.members.get(project.id, user.id));
  if (own >= enough) return own;
  return Math.max(own, await membershipLevel(() => client.members.getInGroup(project.namespace.id, user.id)));
}
