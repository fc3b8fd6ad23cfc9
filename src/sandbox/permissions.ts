/**
 * Who may see and do what. docs/api-v3.md#authentication states only the admin-only and admin-or-owner operations and
 * that private projects are invisible (404) to non-members; the access levels below and which level each
 * other operation needs follow the real 8.x servers (10 guest, 20 reporter, 30 developer, 40 master,
 * 50 owner).
 */
import type { Caller } from './context.ts';
import type { Db, ProjectRec, UserRec } from './db.ts';
import { forbidden, notFound } from './http.ts';

export const GUEST = 10;
export const REPORTER = 20;
export const DEVELOPER = 30;
export const MASTER = 40;
export const OWNER = 50;

/** The caller's effective access level on a project: the highest of owner, member, group and share. */
export function accessLevel(db: Db, project: ProjectRec, user: UserRec): number {
  if (user.is_admin) return OWNER;
  const namespace = db.data.namespaces.find((n) => n.id === project.namespace_id);
  let level = 0;
  if (namespace?.kind === 'user' && namespace.owner_id === user.id) level = OWNER;
  const member = db.data.members.find((m) => m.project_id === project.id && m.user_id === user.id);
  if (member) level = Math.max(level, member.access_level);
  if (namespace?.kind === 'group') {
    const gm = db.data.groupMembers.find((m) => m.group_id === namespace.id && m.user_id === user.id);
    if (gm) level = Math.max(level, gm.access_level);
  }
  for (const share of project.shared_with_groups) {
    const gm = db.data.groupMembers.find((m) => m.group_id === share.group_id && m.user_id === user.id);
    if (gm) level = Math.max(level, Math.min(gm.access_level, share.group_access));
  }
  return level;
}

/** Every API caller is logged in, so public and internal projects are visible to all; private ones to members. */
export function canRead(db: Db, project: ProjectRec, user: UserRec): boolean {
  return project.visibility_level > 0 || accessLevel(db, project, user) >= GUEST;
}

/** A project by integer id or `namespace/path` (sent as `namespace%2Fpath`); 404 when absent or invisible. */
export function findProject(db: Db, ref: string, caller: Caller): ProjectRec {
  const project = /^\d+$/.test(ref)
    ? db.data.projects.find((p) => p.id === Number(ref))
    : db.data.projects.find((p) => pathWithNamespace(db, p).toLowerCase() === ref.toLowerCase());
  if (!project || !canRead(db, project, caller.user)) throw notFound('Project');
  return project;
}

/**
 * 8.x `admin_issue`: reporters and up. Who has it sets an issue's labels, assignee and milestone
 * (on create and on edit); the services drop those three from anyone else (docs/server-behaviour.md#labels-assignee-and-milestone-from-users-without-rights).
 */
export function canAdminIssues(db: Db, project: ProjectRec, user: UserRec): boolean {
  return accessLevel(db, project, user) >= REPORTER;
}

/**
 * 8.x `admin_merge_request`: developers and up, and nobody on an archived project (8.x takes it
 * from every role there). Who has it on the TARGET project sets a merge request's labels, assignee
 * and milestone, on create as on edit; the services drop those three from anyone else.
 */
export function canAdminMergeRequests(db: Db, project: ProjectRec, user: UserRec): boolean {
  return accessLevel(db, project, user) >= DEVELOPER && !project.archived;
}

export function requireLevel(db: Db, project: ProjectRec, caller: Caller, level: number): void {
  if (accessLevel(db, project, caller.user) < level) throw forbidden();
}

export function requireAdmin(caller: Caller): void {
  if (!caller.user.is_admin) throw forbidden();
}

export function pathWithNamespace(db: Db, project: ProjectRec): string {
  const namespace = db.data.namespaces.find((n) => n.id === project.namespace_id);
  return `${namespace?.path ?? 'unknown'}/${project.path}`;
}

export function nameWithNamespace(db: Db, project: ProjectRec): string {
  const namespace = db.data.namespaces.find((n) => n.id === project.namespace_id);
  return `${namespace?.name ?? 'unknown'} / ${project.name}`;
}
