/**
 * Making users, groups and projects with every field set the way real servers default it. Used by
 * the routes (POST /users, POST /projects), the demo seed and the tests, so all three agree.
 */
import { randomBytes } from 'node:crypto';
import type { SandboxContext } from './context.ts';
import type { Db, IssueRec, NamespaceRec, ProjectRec, UserRec } from './db.ts';

export function newToken(): string {
  return randomBytes(10).toString('hex');
}

export interface NewUser {
  username: string;
  name?: string;
  email?: string;
  password?: string;
  is_admin?: boolean;
  private_token?: string;
  personal_access_tokens?: string[];
  projects_limit?: number;
  can_create_group?: boolean;
  external?: boolean;
  confirmed?: boolean;
  bio?: string | null;
  location?: string | null;
  messenger?: string;
  jobnetwork?: string;
  microblog?: string;
  website_url?: string;
  extern_uid?: string | null;
  provider?: string | null;
}

/** A user and their personal namespace. */
export function addUser(db: Db, input: NewUser): UserRec {
  const now = db.now();
  const user: UserRec = {
    id: db.nextId('users'),
    username: input.username,
    name: input.name ?? input.username,
    email: input.email ?? `${input.username}@example.com`,
    password: input.password ?? randomBytes(12).toString('hex'),
    state: 'active',
    ldap_blocked: false,
    is_admin: input.is_admin ?? false,
    private_token: input.private_token ?? newToken(),
    oauth_tokens: [],
    ...(input.personal_access_tokens ? { personal_access_tokens: [...input.personal_access_tokens] } : {}),
    bio: input.bio ?? null,
    location: input.location ?? null,
    messenger: input.messenger ?? '',
    jobnetwork: input.jobnetwork ?? '',
    microblog: input.microblog ?? '',
    website_url: input.website_url ?? '',
    extern_uid: input.extern_uid ?? null,
    provider: input.provider ?? null,
    theme_id: 1,
    color_scheme_id: 1,
    projects_limit: input.projects_limit ?? db.data.settings.default_projects_limit,
    can_create_group: input.can_create_group ?? true,
    can_create_project: (input.projects_limit ?? db.data.settings.default_projects_limit) > 0,
    external: input.external ?? false,
    two_factor_enabled: false,
    created_at: now,
    confirmed_at: input.confirmed === false ? null : now,
    current_sign_in_at: null,
    last_sign_in_at: null,
  };
  db.data.users.push(user);
  ensureUserNamespace(db, user);
  db.changed();
  return user;
}

export function ensureUserNamespace(db: Db, user: UserRec): NamespaceRec {
  const existing = db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === user.id);
  if (existing) return existing;
  const now = db.now();
  const ns: NamespaceRec = {
    id: db.nextId('namespaces'),
    name: user.username,
    path: user.username,
    kind: 'user',
    owner_id: user.id,
    description: '',
    created_at: now,
    updated_at: now,
  };
  db.data.namespaces.push(ns);
  return ns;
}

/** A group namespace; `members` get their access levels in it. */
export function addGroup(
  db: Db,
  input: {
    name: string;
    path?: string;
    owner_id: number;
    members?: { user_id: number; access_level: number }[];
  },
): NamespaceRec {
  const now = db.now();
  const ns: NamespaceRec = {
    id: db.nextId('namespaces'),
    name: input.name,
    path: input.path ?? input.name.toLowerCase().replace(/[^a-z0-9_.-]+/g, '-'),
    kind: 'group',
    owner_id: input.owner_id,
    description: '',
    created_at: now,
    updated_at: now,
  };
  db.data.namespaces.push(ns);
  db.data.groupMembers.push({ group_id: ns.id, user_id: input.owner_id, access_level: 50 });
  for (const m of input.members ?? []) db.data.groupMembers.push({ group_id: ns.id, ...m });
  db.changed();
  return ns;
}

export interface NewProject {
  name: string;
  path?: string;
  namespace_id: number;
  creator_id: number;
  description?: string | null;
  default_branch?: string;
  visibility_level?: 0 | 10 | 20;
  issues_enabled?: boolean;
  merge_requests_enabled?: boolean;
  builds_enabled?: boolean;
  wiki_enabled?: boolean;
  snippets_enabled?: boolean;
  public_builds?: boolean;
  import_url?: string | null;
  forked_from_id?: number | null;
  /** Files of a first commit; without them the repository starts empty. */
  initialFiles?: Record<string, string>;
}

export function projectPathFromName(name: string): string {
  return (
    name
      .trim()
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'project'
  );
}

/** A project record and its git repository. */
export async function addProject(ctx: SandboxContext, input: NewProject): Promise<ProjectRec> {
  const db = ctx.db;
  const now = db.now();
  const project: ProjectRec = {
    id: db.nextId('projects'),
    name: input.name,
    path: input.path ?? projectPathFromName(input.name),
    namespace_id: input.namespace_id,
    description: input.description ?? null,
    default_branch: input.default_branch ?? 'master',
    visibility_level: input.visibility_level ?? 0,
    issues_enabled: input.issues_enabled ?? true,
    merge_requests_enabled: input.merge_requests_enabled ?? true,
    builds_enabled: input.builds_enabled ?? true,
    wiki_enabled: input.wiki_enabled ?? true,
    snippets_enabled: input.snippets_enabled ?? false,
    public_builds: input.public_builds ?? true,
    shared_runners_enabled: true,
    archived: false,
    creator_id: input.creator_id,
    tag_list: [],
    runners_token: newToken(),
    forked_from_id: input.forked_from_id ?? null,
    shared_with_groups: [],
    import_url: input.import_url ?? null,
    created_at: now,
    last_activity_at: now,
  };
  db.data.projects.push(project);
  const creator = db.data.users.find((u) => u.id === input.creator_id);
  const author = { name: creator?.name ?? 'Administrator', email: creator?.email ?? 'admin@example.com' };
  if (input.forked_from_id) await ctx.git.fork(input.forked_from_id, project.id);
  else
    await ctx.git.create(project.id, {
      defaultBranch: project.default_branch,
      initialFiles: input.initialFiles,
      author,
    });
  db.changed();
  return project;
}

/** What a new issue record may be given; everything else starts as a new open issue's. */
export type IssueRecInput = Pick<IssueRec, 'project_id' | 'title'> &
  Partial<
    Pick<
      IssueRec,
      'description' | 'state' | 'author_id' | 'assignee_id' | 'milestone_id' | 'labels' | 'confidential'
    > & { created_at: string }
  >;

/**
 * The one place an issue record is built and stored (the API's create, the seed, and worlds written
 * straight into the data): an id, the project's next iid, and a new open issue's defaults. It sends
 * no hook and records no event; callers that act as the API does add those. For worlds of thousands
 * of issues (benchmarks, the reliability suite), where going through the API would measure the
 * setup, call `db.changed()` after a batch.
 */
export function addIssueRecord(db: Db, input: IssueRecInput): IssueRec {
  const now = db.now();
  const issue: IssueRec = {
    id: db.nextId('issues'),
    iid: db.nextIid('issues', input.project_id),
    project_id: input.project_id,
    title: input.title,
    description: input.description ?? null,
    state: input.state ?? 'opened',
    author_id: input.author_id ?? 1,
    assignee_id: input.assignee_id ?? null,
    milestone_id: input.milestone_id ?? null,
    labels: input.labels ?? [],
    confidential: input.confidential ?? false,
    moved_to_id: null,
    deleted: false,
    created_at: input.created_at ?? now,
    updated_at: now,
  };
  db.data.issues.push(issue);
  return issue;
}
