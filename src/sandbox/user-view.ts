/**
 * The forms a user is shown in (docs/api-v3.md#user): the normal view (lists for non-admins), the
 * single-user view, the admin view (lists for admins), the single-user admin view and the
 * current-user view of `GET /user`. Keys and e-mails are shown here too, since only the users
 * routes answer them.
 */
import type { SandboxContext } from './context.ts';
import type { EmailRec, KeyRec, UserRec } from './db.ts';

/** Projects in the user's personal namespace: what `projects_limit` counts (group projects do not). */
export function personalProjectCount(ctx: SandboxContext, user: UserRec): number {
  const ns = ctx.db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === user.id);
  return ns ? ctx.db.data.projects.filter((p) => p.namespace_id === ns.id).length : 0;
}

/**
 * Real 8.x computes `can_create_project` (projects_limit minus personal projects > 0) rather than
 * storing it, so it turns false once the limit is reached.
 */
export function canCreateProject(ctx: SandboxContext, user: UserRec): boolean {
  return user.projects_limit - personalProjectCount(ctx, user) > 0;
}

/**
 * Normal view: id, username, name, state, avatar_url (docs/api-v3.md#user), plus `web_url`, which real 8.x
 * servers' UserBasic entity also carries.
 */
export function userNormalView(ctx: SandboxContext, user: UserRec) {
  return {
    id: user.id,
    username: user.username,
    name: user.name,
    state: user.state,
    avatar_url: null as string | null,
    web_url: `${ctx.baseUrl()}/u/${user.username}`,
  };
}

/** Single-user view for a non-admin caller. */
export function userSingleView(ctx: SandboxContext, user: UserRec) {
  return {
    ...userNormalView(ctx, user),
    created_at: user.created_at,
    is_admin: user.is_admin,
    bio: user.bio,
    location: user.location,
    messenger: user.messenger,
    jobnetwork: user.jobnetwork,
    microblog: user.microblog,
    website_url: user.website_url,
  };
}

/**
 * Admin view (lists answered to an admin). `external` is not in the list of docs/api-v3.md#user; real 8.x servers
 * expose it, and without it an admin could not read back the flag `POST /users` accepts.
 */
export function userAdminView(ctx: SandboxContext, user: UserRec) {
  return {
    ...userNormalView(ctx, user),
    email: user.email,
    created_at: user.created_at,
    bio: user.bio,
    location: user.location,
    messenger: user.messenger,
    jobnetwork: user.jobnetwork,
    microblog: user.microblog,
    website_url: user.website_url,
    extern_uid: user.extern_uid,
    provider: user.provider,
    theme_id: user.theme_id,
    color_scheme_id: user.color_scheme_id,
    is_admin: user.is_admin,
    can_create_group: user.can_create_group,
    can_create_project: canCreateProject(ctx, user),
    projects_limit: user.projects_limit,
    current_sign_in_at: user.current_sign_in_at,
    two_factor_enabled: user.two_factor_enabled,
    external: user.external,
  };
}

/** Single-user admin view: the admin view plus `confirmed_at` and `last_sign_in_at`. */
export function userAdminSingleView(ctx: SandboxContext, user: UserRec) {
  return {
    ...userAdminView(ctx, user),
    confirmed_at: user.confirmed_at,
    last_sign_in_at: user.last_sign_in_at,
  };
}

/** `GET /user`: exactly the current-user fields of docs/api-v3.md#user, the private token included. */
export function currentUserView(ctx: SandboxContext, user: UserRec) {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    name: user.name,
    private_token: user.private_token,
    state: user.state,
    created_at: user.created_at,
    bio: user.bio,
    location: user.location,
    messenger: user.messenger,
    jobnetwork: user.jobnetwork,
    microblog: user.microblog,
    website_url: user.website_url,
    theme_id: user.theme_id,
    color_scheme_id: user.color_scheme_id,
    is_admin: user.is_admin,
    can_create_group: user.can_create_group,
    can_create_project: canCreateProject(ctx, user),
    projects_limit: user.projects_limit,
  };
}

export function keyView(key: KeyRec) {
  return { id: key.id, title: key.title, key: key.key, created_at: key.created_at };
}

export function emailView(email: EmailRec) {
  return { id: email.id, email: email.email };
}
