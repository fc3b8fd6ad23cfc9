/**
 * The Project answer (docs/api-v3.md#project): every field of its table. `permissions` is "present in
 * some responses": as on real 8.x servers, the GET answers carry it (their ProjectWithAccess entity)
 * while create, edit, star, archive and fork answers do not. `runners_token` only reaches callers who
 * may administer the project (master or above), `owner` only projects in a user namespace.
 */
import { type SandboxContext, sshUrlToRepo } from './context.ts';
import type { ProjectRec, UserRec } from './db.ts';
import { MASTER, accessLevel, nameWithNamespace, pathWithNamespace } from './permissions.ts';

/** Notification level "global", what real servers answer for a membership with no own setting. */
const NOTIFICATION_GLOBAL = 3;

export interface ProjectViewOptions {
  /** Add `permissions` (the GET answers). */
  withAccess?: boolean;
}

function openIssuesCount(ctx: SandboxContext, project: ProjectRec): number {
  return ctx.db.data.issues.filter((i) => i.project_id === project.id && !i.deleted && i.state !== 'closed')
    .length;
}

export function projectUrls(ctx: SandboxContext, project: ProjectRec) {
  const base = ctx.baseUrl();
  const full = pathWithNamespace(ctx.db, project);
  return {
    ssh_url_to_repo: sshUrlToRepo(ctx, full),
    http_url_to_repo: `${base}/${full}.git`,
    web_url: `${base}/${full}`,
  };
}

function permissions(ctx: SandboxContext, project: ProjectRec, user: UserRec) {
  const d = ctx.db.data;
  const member = d.members.find((m) => m.project_id === project.id && m.user_id === user.id);
  const namespace = d.namespaces.find((n) => n.id === project.namespace_id);
  const groupMember =
    namespace?.kind === 'group'
      ? d.groupMembers.find((m) => m.group_id === namespace.id && m.user_id === user.id)
      : undefined;
  return {
    project_access: member
      ? { access_level: member.access_level, notification_level: NOTIFICATION_GLOBAL }
      : null,
    group_access: groupMember
      ? { access_level: groupMember.access_level, notification_level: NOTIFICATION_GLOBAL }
      : null,
  };
}

export function projectView(
  ctx: SandboxContext,
  project: ProjectRec,
  user: UserRec,
  options: ProjectViewOptions = {},
): Record<string, unknown> {
  const d = ctx.db.data;
  const namespace = d.namespaces.find((n) => n.id === project.namespace_id);
  const ownerUser = namespace?.kind === 'user' ? d.users.find((u) => u.id === namespace.owner_id) : undefined;
  const forkedFrom = project.forked_from_id
    ? d.projects.find((p) => p.id === project.forked_from_id)
    : undefined;
  const view: Record<string, unknown> = {
    id: project.id,
    description: project.description,
    // The stored default branch, also for an empty repository (real servers answer null there).
    default_branch: project.default_branch,
    tag_list: project.tag_list,
    public: project.visibility_level === 20,
    archived: project.archived,
    visibility_level: project.visibility_level,
    ...projectUrls(ctx, project),
  };
  // docs/api-v3.md#project: owner {id, name, created_at}; real servers omit it for group projects.
  if (ownerUser) view.owner = { id: ownerUser.id, name: ownerUser.name, created_at: ownerUser.created_at };
  Object.assign(view, {
    name: project.name,
    name_with_namespace: nameWithNamespace(ctx.db, project),
    path: project.path,
    path_with_namespace: pathWithNamespace(ctx.db, project),
    issues_enabled: project.issues_enabled,
    merge_requests_enabled: project.merge_requests_enabled,
    wiki_enabled: project.wiki_enabled,
    builds_enabled: project.builds_enabled,
    snippets_enabled: project.snippets_enabled,
    created_at: project.created_at,
    last_activity_at: project.last_activity_at,
    shared_runners_enabled: project.shared_runners_enabled,
    creator_id: project.creator_id,
    namespace: namespace
      ? {
          id: namespace.id,
          name: namespace.name,
          path: namespace.path,
          description: namespace.description,
          owner_id: namespace.owner_id,
          created_at: namespace.created_at,
          updated_at: namespace.updated_at,
        }
      : null,
  });
  // Not among the documented fields of docs/api-v3.md#project; real 8.x servers add it to a fork's answer.
  if (forkedFrom)
    view.forked_from_project = {
      id: forkedFrom.id,
      name: forkedFrom.name,
      name_with_namespace: nameWithNamespace(ctx.db, forkedFrom),
      path: forkedFrom.path,
      path_with_namespace: pathWithNamespace(ctx.db, forkedFrom),
    };
  Object.assign(view, {
    avatar_url: null,
    star_count: d.stars.filter((s) => s.project_id === project.id).length,
    forks_count: d.projects.filter((p) => p.forked_from_id === project.id).length,
    open_issues_count: openIssuesCount(ctx, project),
  });
  if (accessLevel(ctx.db, project, user) >= MASTER) view.runners_token = project.runners_token;
  view.public_builds = project.public_builds;
  if (options.withAccess) view.permissions = permissions(ctx, project, user);
  return view;
}
