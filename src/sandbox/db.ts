/**
 * The sandbox's data: plain JSON-serialisable records, one array per kind, so the whole state can be
 * persisted with lowdb (`--data FILE`) and survive a restart. Records hold ids; views (what the API
 * answers) are built from them by the route files, so one record can be shown in the several forms
 * docs/api-v3.md#user describes (summary, normal, admin).
 */

export type Timestamp = string;

export interface UserRec {
  id: number;
  username: string;
  name: string;
  email: string;
  password: string;
  state: 'active' | 'blocked';
  /** Blocked by directory synchronisation (LDAP): block and unblock answer 403 for such a user. */
  ldap_blocked: boolean;
  is_admin: boolean;
  /** The private token: `PRIVATE-TOKEN` header, `private_token` query or form field. */
  private_token: string;
  /** OAuth access tokens: `access_token` or `Authorization: Bearer`. */
  oauth_tokens: string[];
  /**
   * Personal access tokens (8.8 and later): they open the API as the private token does, and git over
   * HTTP as the password does (git-http.ts). Absent on records made before they existed.
   */
  personal_access_tokens?: string[];
  bio: string | null;
  location: string | null;
  messenger: string;
  jobnetwork: string;
  microblog: string;
  website_url: string;
  extern_uid: string | null;
  provider: string | null;
  theme_id: number;
  color_scheme_id: number;
  projects_limit: number;
  can_create_group: boolean;
  can_create_project: boolean;
  external: boolean;
  two_factor_enabled: boolean;
  created_at: Timestamp;
  confirmed_at: Timestamp | null;
  current_sign_in_at: Timestamp | null;
  last_sign_in_at: Timestamp | null;
}

export interface KeyRec {
  id: number;
  user_id: number;
  title: string;
  key: string;
  created_at: Timestamp;
}

export interface EmailRec {
  id: number;
  user_id: number;
  email: string;
}

export interface NamespaceRec {
  id: number;
  name: string;
  path: string;
  kind: 'user' | 'group';
  /** The user for a user namespace; the creator for a group. */
  owner_id: number;
  description: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface GroupMemberRec {
  group_id: number;
  user_id: number;
  access_level: number;
}

export interface ProjectRec {
  id: number;
  name: string;
  path: string;
  namespace_id: number;
  description: string | null;
  default_branch: string;
  visibility_level: 0 | 10 | 20;
  issues_enabled: boolean;
  merge_requests_enabled: boolean;
  builds_enabled: boolean;
  wiki_enabled: boolean;
  snippets_enabled: boolean;
  public_builds: boolean;
  shared_runners_enabled: boolean;
  archived: boolean;
  creator_id: number;
  tag_list: string[];
  runners_token: string;
  forked_from_id: number | null;
  shared_with_groups: { group_id: number; group_access: number }[];
  import_url: string | null;
  created_at: Timestamp;
  last_activity_at: Timestamp;
}

export interface ProjectMemberRec {
  project_id: number;
  user_id: number;
  access_level: number;
  created_at: Timestamp;
}

export interface StarRec {
  project_id: number;
  user_id: number;
}

export interface HookRec {
  id: number;
  project_id: number;
  url: string;
  /** The real servers' hook secret, sent as `X-Gitlab-Token`. */
  token: string | null;
  push_events: boolean;
  issues_events: boolean;
  merge_requests_events: boolean;
  tag_push_events: boolean;
  note_events: boolean;
  build_events: boolean;
  pipeline_events: boolean;
  enable_ssl_verification: boolean;
  created_at: Timestamp;
}

export interface LabelRec {
  id: number;
  project_id: number;
  title: string;
  color: string;
  description: string | null;
  template: boolean;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MilestoneRec {
  id: number;
  iid: number;
  project_id: number;
  title: string;
  description: string;
  state: 'active' | 'closed';
  due_date: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface IssueRec {
  id: number;
  iid: number;
  project_id: number;
  title: string;
  description: string | null;
  state: 'opened' | 'closed' | 'reopened';
  author_id: number;
  assignee_id: number | null;
  milestone_id: number | null;
  /** Label names, in the order they were given. */
  labels: string[];
  confidential: boolean;
  /** Set when the issue was moved: the id of the new issue. */
  moved_to_id: number | null;
  deleted: boolean;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MergeRequestRec {
  id: number;
  iid: number;
  project_id: number;
  title: string;
  description: string | null;
  state: 'opened' | 'closed' | 'merged' | 'reopened' | 'locked';
  source_branch: string;
  target_branch: string;
  source_project_id: number;
  target_project_id: number;
  author_id: number;
  assignee_id: number | null;
  milestone_id: number | null;
  labels: string[];
  upvotes: number;
  downvotes: number;
  merge_status: 'unchecked' | 'can_be_merged' | 'cannot_be_merged';
  merge_when_build_succeeds: boolean;
  /** Who armed merge-when-build-succeeds, and with which options, so the sandbox can merge later as them. */
  merge_user_id: number | null;
  merge_params: { should_remove_source_branch?: boolean; merge_commit_message?: string };
  /** The source head when the MR was merged or closed (later reads cannot ask git for a deleted branch). */
  last_head_sha: string | null;
  merge_commit_sha: string | null;
  deleted: boolean;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/**
 * One version of a merge request (8.12+ `MergeRequestDiff`, the API's "merge request diff version"):
 * the diff the server made of it at one moment. 8.x makes one when the merge request is created, at
 * every push to its source branch while it is open (a reset, a force push, the branch deleted or made
 * again), at a push to its target branch that is a force push or brings some of its commits, when it
 * is reopened and when its target branch changes (docs/server-behaviour.md#merge-request-versions).
 * What the versions API answers beside these (`base_commit_sha`, `state`, `real_size`, the diffs)
 * follows from them and is worked out when read (merge-request-versions.ts).
 */
export interface MergeRequestDiffRec {
  id: number;
  merge_request_id: number;
  /** The source branch's head then; null when the branch was gone (a version of state `empty`). */
  head_commit_sha: string | null;
  /** The target branch's head then; null when it was gone. */
  start_commit_sha: string | null;
  /** The commits of `start..head` then, newest first (8.x keeps them with the version: `st_commits`). */
  commit_shas: string[];
  created_at: Timestamp;
}

export interface NoteRec {
  id: number;
  project_id: number;
  body: string;
  author_id: number;
  noteable_type: 'Issue' | 'MergeRequest' | 'Commit';
  /** Issue or MR id; null for commit comments. */
  noteable_id: number | null;
  commit_id: string | null;
  path: string | null;
  line: number | null;
  line_type: 'new' | 'old' | null;
  system: boolean;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SubscriptionRec {
  type: 'Issue' | 'MergeRequest';
  id: number;
  user_id: number;
  subscribed: boolean;
}

export interface StatusRec {
  id: number;
  project_id: number;
  sha: string;
  ref: string | null;
  name: string;
  status: 'pending' | 'running' | 'success' | 'failed' | 'canceled';
  target_url: string | null;
  description: string | null;
  allow_failure: boolean;
  author_id: number;
  created_at: Timestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
}

export interface EventRec {
  id: number;
  project_id: number;
  author_id: number;
  action_name: string;
  target_id: number | null;
  target_type: string | null;
  target_title: string | null;
  title: string | null;
  data: Record<string, unknown> | null;
  note_id: number | null;
  created_at: Timestamp;
}

export interface UploadRec {
  id: number;
  project_id: number;
  secret: string;
  filename: string;
  content_base64: string;
  content_type: string;
}

export interface SettingsRec {
  id: number;
  default_projects_limit: number;
  signup_enabled: boolean;
  signin_enabled: boolean;
  avatar_service_enabled: boolean;
  sign_in_text: string | null;
  home_page_url: string | null;
  default_branch_protection: number;
  restricted_visibility_levels: number[] | null;
  max_attachment_size: number;
  session_expire_delay: number;
  default_project_visibility: number;
  default_snippet_visibility: number;
  restricted_signup_domains: string[] | null;
  user_oauth_applications: boolean;
  after_sign_out_path: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProtectedBranchRec {
  project_id: number;
  name: string;
  /**
   * 8.x's push and merge access levels in the API's terms: developers too (true) or masters only.
   * Absent on records made before the sandbox kept them: masters only.
   */
  developers_can_push?: boolean;
  developers_can_merge?: boolean;
}

export interface SandboxData {
  version: 1;
  /** The last id handed out, per kind. */
  seq: Record<string, number>;
  users: UserRec[];
  keys: KeyRec[];
  emails: EmailRec[];
  namespaces: NamespaceRec[];
  groupMembers: GroupMemberRec[];
  projects: ProjectRec[];
  members: ProjectMemberRec[];
  stars: StarRec[];
  hooks: HookRec[];
  labels: LabelRec[];
  milestones: MilestoneRec[];
  issues: IssueRec[];
  mergeRequests: MergeRequestRec[];
  /** Merge request versions, oldest first (ids grow). Absent from data files of earlier versions. */
  mergeRequestDiffs: MergeRequestDiffRec[];
  notes: NoteRec[];
  subscriptions: SubscriptionRec[];
  statuses: StatusRec[];
  events: EventRec[];
  uploads: UploadRec[];
  protectedBranches: ProtectedBranchRec[];
  settings: SettingsRec;
}

export function emptyData(now: Timestamp): SandboxData {
  return {
    version: 1,
    seq: {},
    users: [],
    keys: [],
    emails: [],
    namespaces: [],
    groupMembers: [],
    projects: [],
    members: [],
    stars: [],
    hooks: [],
    labels: [],
    milestones: [],
    issues: [],
    mergeRequests: [],
    mergeRequestDiffs: [],
    notes: [],
    subscriptions: [],
    statuses: [],
    events: [],
    uploads: [],
    protectedBranches: [],
    settings: {
      id: 1,
      default_projects_limit: 10,
      signup_enabled: true,
      signin_enabled: true,
      avatar_service_enabled: true,
      sign_in_text: null,
      home_page_url: null,
      default_branch_protection: 1,
      restricted_visibility_levels: null,
      max_attachment_size: 10,
      session_expire_delay: 10080,
      default_project_visibility: 0,
      default_snippet_visibility: 0,
      restricted_signup_domains: null,
      user_oauth_applications: true,
      after_sign_out_path: null,
      created_at: now,
      updated_at: now,
    },
  };
}

/**
 * Data as read from a file, made whole: a collection this version keeps and the file's version did
 * not (merge request versions, in files written before the sandbox kept them) starts empty, so an
 * older data file loads as it is. Fills in place and answers the same object.
 */
export function withAllCollections(stored: SandboxData): SandboxData {
  const fresh = emptyData(new Date(0).toISOString()) as unknown as Record<string, unknown>;
  const data = stored as unknown as Record<string, unknown>;
  for (const [kind, empty] of Object.entries(fresh))
    if (Array.isArray(empty) && !Array.isArray(data[kind])) data[kind] = [];
  return stored;
}

/** The live data plus the few operations every route needs. */
export interface Db {
  data: SandboxData;
  nextId(kind: string): number;
  /** The next per-project `iid` for issues or merge requests. */
  nextIid(kind: 'issues' | 'mergeRequests' | 'milestones', projectId: number): number;
  now(): Timestamp;
  /** Call after every mutation: persists when the sandbox was started with `--data FILE`. */
  changed(): void;
}

export function createDb(data: SandboxData, options: { clock?: () => Date; onChange?: () => void } = {}): Db {
  const clock = options.clock ?? (() => new Date());
  return {
    data,
    nextId(kind) {
      const id = (data.seq[kind] ?? 0) + 1;
      data.seq[kind] = id;
      return id;
    },
    nextIid(kind, projectId) {
      let max = 0;
      for (const rec of data[kind]) if (rec.project_id === projectId && rec.iid > max) max = rec.iid;
      return max + 1;
    },
    now: () => clock().toISOString(),
    changed: () => options.onChange?.(),
  };
}
