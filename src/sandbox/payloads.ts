/**
 * Hook payloads in the form of that era (GitLab 8.x, docs/server-behaviour.md#hook-payloads and the official
 * samples kept in test/fixtures/hooks/), built from the sandbox's records. Where the samples and the 8.x source
 * disagree, the samples win for the key sets (they are what receivers were written against) and the
 * source decides the values; each such choice is noted where it is made.
 *
 * Differences from the samples, on purpose:
 * - `oldrev` appears in a merge request's `object_attributes` only when a push caused the update (8.x).
 * - `assignee` (issue: top level; merge request: inside `object_attributes`, as in its sample) appears
 *   only when one is assigned (8.x `to_hook_data`).
 * - Avatars are `null`: the sandbox has no avatar service, and its API answers `avatar_url: null` too.
 * - Issue and merge request timestamps use the payload form `2013-12-03 17:15:43 UTC` (docs/server-behaviour.md#timestamps;
 *   what real servers sent) although the issue and merge request samples print ISO.
 */
import { createHash } from 'node:crypto';
import type { GitCommit, GitRepos, SandboxContext } from './context.ts';
import type { IssueRec, MergeRequestRec, NoteRec, ProjectRec, StatusRec, Timestamp, UserRec } from './db.ts';
import { pathWithNamespace } from './permissions.ts';

export type IssueAction = 'open' | 'update' | 'close' | 'reopen';
export type MergeRequestAction = 'open' | 'update' | 'close' | 'reopen' | 'merge';

/** The all-zeros sha real servers use for "no commit" (`before` of a new branch, `after` of a deleted one). */
export const BLANK_SHA = '0000000000000000000000000000000000000000';

type Payload = Record<string, unknown>;

/** `2013-12-03T17:15:43.123Z` (API form) -> `2013-12-03 17:15:43 UTC` (the form inside payloads). */
export function payloadTime(iso: Timestamp): string;
export function payloadTime(iso: Timestamp | null): string | null;
export function payloadTime(iso: Timestamp | null): string | null {
  if (iso === null) return null;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** Commit timestamps are ISO 8601 with offset and no fraction (Ruby `Time#xmlschema`), as git gives them. */
function commitTime(iso: string): string {
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/.test(iso)) return iso;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 19)}Z`;
}

// ---------------------------------------------------------------------------------------------------
// Commits known without asking git
// ---------------------------------------------------------------------------------------------------

/**
 * The builders are synchronous (their signatures are shared), but a note on a commit, a note on a
 * merge request and a pipeline carry commits' messages, times and authors, which only git knows.
 * So the commits these builders see (every pushed commit, the last commit given to
 * `mergeRequestPayload`, those read with `loadCommit` or handed to `rememberCommits`) are remembered,
 * and so is each branch head a push reports (every API path that moves a branch tells `ctx.on.push`).
 * Commits never change, so that half cannot be stale. The memo is bounded and kept per `GitRepos`
 * (one per sandbox), never shared between sandboxes; after a restart it starts empty, and payloads
 * then show what the records alone know.
 */
interface Memo {
  commits: Map<string, GitCommit>;
  /** `projectId:branch` -> head sha, from pushes. */
  heads: Map<string, string>;
}
const memos = new WeakMap<GitRepos, Memo>();
const MEMO_LIMIT = 10_000;

function memoOf(ctx: SandboxContext): Memo {
  let memo = memos.get(ctx.git);
  if (!memo) {
    memo = { commits: new Map(), heads: new Map() };
    memos.set(ctx.git, memo);
  }
  return memo;
}

/** Lets the synchronous builders show these commits (e.g. before `notePayload` on a commit comment). */
export function rememberCommits(ctx: SandboxContext, commits: readonly GitCommit[]): void {
  const memo = memoOf(ctx).commits;
  for (const commit of commits) {
    memo.delete(commit.id);
    memo.set(commit.id, commit);
  }
  while (memo.size > MEMO_LIMIT) memo.delete(memo.keys().next().value as string);
}

/** Reads a commit from git and remembers it for the synchronous builders. */
export async function loadCommit(
  ctx: SandboxContext,
  projectId: number,
  ref: string,
): Promise<GitCommit | undefined> {
  const commit = await ctx.git.commit(projectId, ref);
  if (commit) rememberCommits(ctx, [commit]);
  return commit;
}

function knownCommit(ctx: SandboxContext, sha: string): GitCommit | undefined {
  return memos.get(ctx.git)?.commits.get(sha);
}

function rememberHead(ctx: SandboxContext, projectId: number, branch: string, sha: string | undefined): void {
  const heads = memoOf(ctx).heads;
  const key = `${projectId}:${branch}`;
  heads.delete(key);
  if (sha !== undefined) heads.set(key, sha);
  while (heads.size > MEMO_LIMIT) heads.delete(heads.keys().next().value as string);
}

function knownHead(ctx: SandboxContext, projectId: number, branch: string): string | undefined {
  return memos.get(ctx.git)?.heads.get(`${projectId}:${branch}`);
}

// ---------------------------------------------------------------------------------------------------
// Shared parts
// ---------------------------------------------------------------------------------------------------

function projectOf(ctx: SandboxContext, projectId: number): ProjectRec {
  const project = ctx.db.data.projects.find((p) => p.id === projectId);
  if (!project) throw new Error(`payloads: no project ${projectId}`);
  return project;
}

function webUrl(ctx: SandboxContext, project: ProjectRec): string {
  return `${ctx.baseUrl()}/${pathWithNamespace(ctx.db, project)}`;
}

function sshHost(ctx: SandboxContext): string {
  try {
    return new URL(ctx.baseUrl()).hostname || 'localhost';
  } catch {
    return 'localhost';
  }
}

/** 8.x `User#hook_attrs`. */
export function userHookAttrs(user: UserRec) {
  return { name: user.name, username: user.username, avatar_url: null as string | null };
}

/**
 * 8.x `Project#hook_attrs(backward: false)`: what pipeline payloads carry.
 */
export function projectHookAttrsCurrent(ctx: SandboxContext, project: ProjectRec) {
  const path = pathWithNamespace(ctx.db, project);
  const web = webUrl(ctx, project);
  const namespace = ctx.db.data.namespaces.find((n) => n.id === project.namespace_id);
  return {
    name: project.name,
    description: project.description,
    web_url: web,
    avatar_url: null as string | null,
    git_ssh_url: `git@${sshHost(ctx)}:${path}.git`,
    git_http_url: `${web}.git`,
    namespace: namespace?.name ?? '',
    visibility_level: project.visibility_level,
    path_with_namespace: path,
    default_branch: project.default_branch,
  };
}

/**
 * 8.x `Project#hook_attrs`: the current keys plus the deprecated `homepage`, `url`, `ssh_url` and
 * `http_url`. `url` is the SSH clone URL, as 8.x `url_to_repo` gives it.
 */
export function projectHookAttrs(ctx: SandboxContext, project: ProjectRec) {
  const attrs = projectHookAttrsCurrent(ctx, project);
  return {
    ...attrs,
    homepage: attrs.web_url,
    url: attrs.git_ssh_url,
    ssh_url: attrs.git_ssh_url,
    http_url: attrs.git_http_url,
  };
}

/** The deprecated `repository` key: a slice of the project's attributes. */
function repositoryAttrs(ctx: SandboxContext, project: ProjectRec) {
  const p = projectHookAttrs(ctx, project);
  return { name: p.name, url: p.url, description: p.description, homepage: p.homepage };
}

/** 8.x `Commit#hook_attrs` (without the changed files). */
function commitHookAttrs(ctx: SandboxContext, project: ProjectRec, commit: GitCommit) {
  return {
    id: commit.id,
    message: commit.message,
    timestamp: commitTime(commit.committed_date),
    url: `${webUrl(ctx, project)}/commit/${commit.id}`,
    author: { name: commit.author_name, email: commit.author_email },
  };
}

/**
 * A commit known only by its sha (not seen since the sandbox started): the keys stay, what only git
 * knows is `null`. Callers that can wait should `loadCommit` first.
 */
function commitHookAttrsBySha(ctx: SandboxContext, project: ProjectRec, sha: string) {
  const commit = knownCommit(ctx, sha);
  if (commit) return commitHookAttrs(ctx, project, commit);
  return {
    id: sha,
    message: null,
    timestamp: null,
    url: `${webUrl(ctx, project)}/commit/${sha}`,
    author: { name: null, email: null },
  };
}

function assigneeOf(ctx: SandboxContext, assigneeId: number | null): UserRec | undefined {
  return assigneeId === null ? undefined : ctx.db.data.users.find((u) => u.id === assigneeId);
}

// ---------------------------------------------------------------------------------------------------
// Issues
// ---------------------------------------------------------------------------------------------------

/** The issue's own attributes, as in the samples (`position` and `branch_name` are columns of that era). */
function issueAttrs(issue: IssueRec) {
  return {
    id: issue.id,
    title: issue.title,
    assignee_id: issue.assignee_id,
    author_id: issue.author_id,
    project_id: issue.project_id,
    created_at: payloadTime(issue.created_at),
    updated_at: payloadTime(issue.updated_at),
    position: 0,
    branch_name: null as string | null,
    description: issue.description,
    milestone_id: issue.milestone_id,
    state: issue.state,
    iid: issue.iid,
  };
}

/** `Issue Hook` (or `Confidential Issue Hook` content: same shape). No `labels`, no `changes` (that era). */
export function issuePayload(
  ctx: SandboxContext,
  issue: IssueRec,
  user: UserRec,
  action: IssueAction,
): Record<string, unknown> {
  const project = projectOf(ctx, issue.project_id);
  const payload: Payload = {
    object_kind: 'issue',
    user: userHookAttrs(user),
    project: projectHookAttrs(ctx, project),
    repository: repositoryAttrs(ctx, project),
    object_attributes: {
      ...issueAttrs(issue),
      url: `${webUrl(ctx, project)}/issues/${issue.iid}`,
      action,
    },
  };
  const assignee = assigneeOf(ctx, issue.assignee_id);
  if (assignee) payload.assignee = userHookAttrs(assignee);
  return payload;
}

// ---------------------------------------------------------------------------------------------------
// Merge requests
// ---------------------------------------------------------------------------------------------------

/** 8.x `MergeRequest#work_in_progress?`. */
const WIP_PATTERN = /^\s*(\[WIP\]\s*|WIP:\s*|WIP\s+)+\s*/i;

/**
 * 8.x `diff_head_commit`: the source head. Given by the caller when it could read git; otherwise the
 * head last pushed to the source branch (open merge requests) or `last_head_sha` (merged or closed
 * ones, whose branch may be gone); null when neither is known.
 */
function lastCommitAttrs(ctx: SandboxContext, mr: MergeRequestRec, lastCommit: GitCommit | undefined) {
  const source =
    ctx.db.data.projects.find((p) => p.id === mr.source_project_id) ?? projectOf(ctx, mr.target_project_id);
  if (lastCommit) {
    rememberCommits(ctx, [lastCommit]);
    return commitHookAttrs(ctx, source, lastCommit);
  }
  const pushed = knownHead(ctx, mr.source_project_id, mr.source_branch);
  const open = mr.state === 'opened' || mr.state === 'reopened';
  const sha = open ? (pushed ?? mr.last_head_sha) : (mr.last_head_sha ?? pushed);
  return sha ? commitHookAttrsBySha(ctx, source, sha) : null;
}

function sourceAttrs(ctx: SandboxContext, mr: MergeRequestRec) {
  const source = ctx.db.data.projects.find((p) => p.id === mr.source_project_id);
  // 8.x `source_project.try(:hook_attrs)`: null once a fork is gone.
  return source ? projectHookAttrs(ctx, source) : null;
}

/**
 * `Merge Request Hook`; `oldrev` is set when a push to the source branch caused the update.
 * `lastCommit` is the source branch's head (`ctx.git.branch(source_project_id, source_branch)`), which
 * the caller reads since this builder cannot wait; without it the head last pushed to the source branch
 * or `mr.last_head_sha` stands in (see `lastCommitAttrs`). Commit URLs use `/commit/<sha>` as 8.x builds
 * them (the merge request sample prints `/commits/`).
 */
export function mergeRequestPayload(
  ctx: SandboxContext,
  mr: MergeRequestRec,
  user: UserRec,
  action: MergeRequestAction,
  extra: { oldrev?: string; lastCommit?: GitCommit } = {},
): Record<string, unknown> {
  const target = projectOf(ctx, mr.target_project_id);
  const attributes: Payload = {
    id: mr.id,
    target_branch: mr.target_branch,
    source_branch: mr.source_branch,
    source_project_id: mr.source_project_id,
    author_id: mr.author_id,
    assignee_id: mr.assignee_id,
    title: mr.title,
    created_at: payloadTime(mr.created_at),
    updated_at: payloadTime(mr.updated_at),
    // Columns of that era that moved to merge_request_diffs: always null in payloads.
    st_commits: null,
    st_diffs: null,
    milestone_id: mr.milestone_id,
    state: mr.state,
    merge_status: mr.merge_status,
    target_project_id: mr.target_project_id,
    iid: mr.iid,
    description: mr.description,
    source: sourceAttrs(ctx, mr),
    target: projectHookAttrs(ctx, target),
    last_commit: lastCommitAttrs(ctx, mr, extra.lastCommit),
    work_in_progress: WIP_PATTERN.test(mr.title),
    url: `${webUrl(ctx, target)}/merge_requests/${mr.iid}`,
    action,
  };
  // 8.x sends `oldrev` only for a real previous head (never the blank sha).
  if (extra.oldrev && extra.oldrev !== BLANK_SHA) attributes.oldrev = extra.oldrev;
  const assignee = assigneeOf(ctx, mr.assignee_id);
  if (assignee) attributes.assignee = userHookAttrs(assignee);
  return { object_kind: 'merge_request', user: userHookAttrs(user), object_attributes: attributes };
}

// ---------------------------------------------------------------------------------------------------
// Notes
// ---------------------------------------------------------------------------------------------------

/** The merge request as the note sample embeds it: its columns (`position`, `locked_at`) and no url/action. */
function noteMergeRequestAttrs(ctx: SandboxContext, mr: MergeRequestRec) {
  const target = projectOf(ctx, mr.target_project_id);
  const attrs: Payload = {
    id: mr.id,
    target_branch: mr.target_branch,
    source_branch: mr.source_branch,
    source_project_id: mr.source_project_id,
    author_id: mr.author_id,
    assignee_id: mr.assignee_id,
    title: mr.title,
    created_at: payloadTime(mr.created_at),
    updated_at: payloadTime(mr.updated_at),
    milestone_id: mr.milestone_id,
    state: mr.state,
    merge_status: mr.merge_status,
    target_project_id: mr.target_project_id,
    iid: mr.iid,
    description: mr.description,
    position: 0,
    locked_at: null,
    source: sourceAttrs(ctx, mr),
    target: projectHookAttrs(ctx, target),
    last_commit: lastCommitAttrs(ctx, mr, undefined),
    work_in_progress: WIP_PATTERN.test(mr.title),
  };
  const assignee = assigneeOf(ctx, mr.assignee_id);
  if (assignee) attrs.assignee = userHookAttrs(assignee);
  return attrs;
}

/**
 * 8.x line codes are `<sha1 of the path>_<old line>_<new line>`; the other side's number comes from the
 * diff, which this synchronous builder cannot read, so it is 0 here.
 */
function lineCode(note: NoteRec): string | null {
  if (note.path === null || note.line === null) return null;
  const hash = createHash('sha1').update(note.path).digest('hex');
  return note.line_type === 'old' ? `${hash}_${note.line}_0` : `${hash}_0_${note.line}`;
}

/** `Note Hook` for a note on an issue, a merge request or a commit (8.x `NoteDataBuilder`). */
export function notePayload(ctx: SandboxContext, note: NoteRec, user: UserRec): Record<string, unknown> {
  const project = projectOf(ctx, note.project_id);
  const web = webUrl(ctx, project);
  const issue =
    note.noteable_type === 'Issue' ? ctx.db.data.issues.find((i) => i.id === note.noteable_id) : undefined;
  const mr =
    note.noteable_type === 'MergeRequest'
      ? ctx.db.data.mergeRequests.find((m) => m.id === note.noteable_id)
      : undefined;
  const anchor = `#note_${note.id}`;
  const url =
    note.noteable_type === 'Commit'
      ? `${web}/commit/${note.commit_id ?? ''}${anchor}`
      : note.noteable_type === 'Issue'
        ? `${web}/issues/${issue?.iid ?? ''}${anchor}`
        : `${web}/merge_requests/${mr?.iid ?? ''}${anchor}`;
  const payload: Payload = {
    object_kind: 'note',
    user: userHookAttrs(user),
    project_id: project.id,
    project: projectHookAttrs(ctx, project),
    repository: repositoryAttrs(ctx, project),
    object_attributes: {
      id: note.id,
      note: note.body,
      noteable_type: note.noteable_type,
      author_id: note.author_id,
      created_at: payloadTime(note.created_at),
      updated_at: payloadTime(note.updated_at),
      project_id: note.project_id,
      attachment: null,
      line_code: note.noteable_type === 'Commit' ? lineCode(note) : null,
      // Real servers store "" rather than null for notes that are not on a commit (see the samples).
      commit_id: note.commit_id ?? '',
      noteable_id: note.noteable_id,
      system: note.system,
      // The diff of a commit line note needs git (asynchronous): not given here.
      st_diff: null,
      url,
    },
  };
  if (note.noteable_type === 'Commit' && note.commit_id)
    payload.commit = commitHookAttrsBySha(ctx, project, note.commit_id);
  else if (issue) payload.issue = issueAttrs(issue);
  else if (mr) payload.merge_request = noteMergeRequestAttrs(ctx, mr);
  return payload;
}

// ---------------------------------------------------------------------------------------------------
// Pushes
// ---------------------------------------------------------------------------------------------------

/** 8.x `PushDataBuilder`: the latest 20 commits, oldest first. */
const PUSH_COMMIT_LIMIT = 20;

/**
 * The commits a push brought, oldest first (8.x `GitPushService` / `GitTagPushService`):
 * - removal: none;
 * - tag: the tagged commit;
 * - new branch: its whole history when it is the default branch (an initial push), else the commits
 *   not on the default branch;
 * - existing branch: the commits reachable from `after` and not from `before`.
 */
async function pushedCommits(
  ctx: SandboxContext,
  project: ProjectRec,
  push: { ref: string; before: string; after: string },
): Promise<GitCommit[]> {
  if (push.after === BLANK_SHA) return [];
  if (push.ref.startsWith('refs/tags/')) {
    const commit = await ctx.git.commit(project.id, push.after);
    return commit ? [commit] : [];
  }
  const branch = push.ref.replace(/^refs\/heads\//, '');
  if (push.before === BLANK_SHA) {
    if (branch === project.default_branch) return (await ctx.git.log(project.id, push.after)).reverse();
    const compared = await ctx.git.compare(project.id, project.default_branch, project.id, push.after);
    return [...compared.commits].reverse();
  }
  const compared = await ctx.git.compare(project.id, push.before, project.id, push.after);
  return [...compared.commits].reverse();
}

/** 8.x `Commit#repo_changes`: a rename counts as added (new path), as real servers report it. */
async function changedFiles(ctx: SandboxContext, projectId: number, sha: string) {
  const added: string[] = [];
  const modified: string[] = [];
  const removed: string[] = [];
  for (const diff of await ctx.git.diff(projectId, sha)) {
    if (diff.deleted_file) removed.push(diff.old_path);
    else if (diff.renamed_file || diff.new_file) added.push(diff.new_path);
    else modified.push(diff.new_path);
  }
  return { added, modified, removed };
}

/** `Push Hook` (branches) or `Tag Push Hook` (refs/tags/...). */
export async function pushPayload(
  ctx: SandboxContext,
  project: ProjectRec,
  push: { ref: string; before: string; after: string; user: UserRec },
): Promise<Record<string, unknown>> {
  const ref = push.ref.startsWith('refs/') ? push.ref : `refs/heads/${push.ref}`;
  const tag = ref.startsWith('refs/tags/');
  const all = await pushedCommits(ctx, project, { ref, before: push.before, after: push.after });
  rememberCommits(ctx, all);
  if (ref.startsWith('refs/heads/')) {
    // The new head may be an older commit (a branch made from another): remember it too.
    const headCommit = push.after === BLANK_SHA ? undefined : await loadCommit(ctx, project.id, push.after);
    rememberHead(ctx, project.id, ref.slice('refs/heads/'.length), headCommit?.id);
  }
  const latest = all.slice(-PUSH_COMMIT_LIMIT);
  const commits = [];
  for (const commit of latest)
    commits.push({
      ...commitHookAttrs(ctx, project, commit),
      ...(await changedFiles(ctx, project.id, commit.id)),
    });
  const attrs = projectHookAttrs(ctx, project);
  return {
    object_kind: tag ? 'tag_push' : 'push',
    before: push.before,
    after: push.after,
    ref,
    // The commit checked out by the push; null when the ref was removed.
    checkout_sha: push.after === BLANK_SHA ? null : push.after,
    user_id: push.user.id,
    user_name: push.user.name,
    // The tag push sample of that era omits `user_email`; 8.x builds both kinds with the same builder.
    user_email: push.user.email,
    user_avatar: null,
    project_id: project.id,
    project: attrs,
    repository: {
      name: attrs.name,
      url: attrs.url,
      description: attrs.description,
      homepage: attrs.homepage,
      git_http_url: attrs.git_http_url,
      git_ssh_url: attrs.git_ssh_url,
      visibility_level: attrs.visibility_level,
    },
    commits,
    total_commits_count: all.length,
  };
}

// ---------------------------------------------------------------------------------------------------
// Pipelines
// ---------------------------------------------------------------------------------------------------

/** Statuses posted through the API belong to this stage on 8.x (`GenericCommitStatus`). */
export const EXTERNAL_STAGE = 'external';

export type CombinedStatus = 'none' | 'pending' | 'running' | 'success' | 'failed' | 'canceled';

/**
 * The combined status of a set of statuses (the latest per name), as 8.x `HasStatus` deduces a
 * pipeline's: none when empty; success when every one succeeded (a failure with `allow_failure` counts as
 * success); pending when every one is pending; running while any is still pending or running (so a
 * pending one beside finished ones gives `running`, as on real servers); canceled when the rest are
 * canceled or successful; failed otherwise.
 */
export function combinedStatus(
  statuses: readonly Pick<StatusRec, 'status' | 'allow_failure'>[],
): CombinedStatus {
  if (statuses.length === 0) return 'none';
  const count = (test: (s: Pick<StatusRec, 'status' | 'allow_failure'>) => boolean) =>
    statuses.filter(test).length;
  const total = statuses.length;
  const success = count((s) => s.status === 'success');
  const ignored = count((s) => s.status === 'failed' && s.allow_failure);
  const pending = count((s) => s.status === 'pending');
  const running = count((s) => s.status === 'running');
  const canceled = count((s) => s.status === 'canceled');
  if (total === success + ignored) return 'success';
  if (total === pending) return 'pending';
  if (running + pending > 0) return 'running';
  if (total === canceled + success + ignored) return 'canceled';
  return 'failed';
}

/** The latest status per name and ref (8.x `CommitStatus.latest`: the highest id per name in each pipeline). */
export function latestOf<T extends Pick<StatusRec, 'id' | 'name' | 'ref'>>(statuses: readonly T[]): T[] {
  const latest = new Map<string, T>();
  for (const s of statuses) {
    const key = JSON.stringify([s.name, s.ref]);
    const seen = latest.get(key);
    if (!seen || s.id > seen.id) latest.set(key, s);
  }
  return [...latest.values()].sort((a, b) => a.id - b.id);
}

/** Union of the busy periods, in whole seconds (8.x `PipelineDuration`). */
function busySeconds(statuses: readonly StatusRec[]): number {
  const periods = statuses
    .filter((s) => s.started_at !== null && s.finished_at !== null)
    .map((s) => [Date.parse(s.started_at!), Date.parse(s.finished_at!)] as const)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [from, to] of periods) {
    if (to <= end) continue;
    total += to - Math.max(from, end);
    end = to;
  }
  return Math.round(total / 1000);
}

/**
 * `Pipeline Hook` for the combined status of one commit. `statuses` are that pipeline's statuses (every
 * one, retried ones included: they are its builds); the status is combined from the latest per name.
 * The sandbox has no pipeline records: the pipeline's id is the id of its first status, its ref that
 * status's ref, and `user` is who created it. `tag` is false and `before_sha` blank, as for the
 * pipelines 8.x creates when a status is posted through the API.
 */
export function pipelinePayload(
  ctx: SandboxContext,
  project: ProjectRec,
  sha: string,
  statuses: StatusRec[],
  user: UserRec,
): Record<string, unknown> {
  const ordered = [...statuses].sort((a, b) => a.id - b.id);
  const first = ordered[0];
  const latest = latestOf(ordered);
  const status = combinedStatus(latest);
  const finished = status === 'success' || status === 'failed' || status === 'canceled';
  const finishedAt = finished
    ? latest.reduce<string | null>(
        (max, s) => (s.finished_at && (!max || s.finished_at > max) ? s.finished_at : max),
        null,
      )
    : null;
  const authorOf = (id: number) => ctx.db.data.users.find((u) => u.id === id);
  return {
    object_kind: 'pipeline',
    object_attributes: {
      id: first?.id ?? null,
      ref: first?.ref ?? null,
      tag: false,
      sha,
      before_sha: BLANK_SHA,
      status: status === 'none' ? null : status,
      stages: ordered.length ? [EXTERNAL_STAGE] : [],
      created_at: first ? payloadTime(first.created_at) : null,
      finished_at: payloadTime(finishedAt),
      duration: finished ? busySeconds(latest) : null,
    },
    user: userHookAttrs(user),
    project: projectHookAttrsCurrent(ctx, project),
    commit: commitHookAttrsBySha(ctx, project, sha),
    builds: ordered.map((s) => {
      const author = authorOf(s.author_id);
      return {
        id: s.id,
        stage: EXTERNAL_STAGE,
        name: s.name,
        status: s.status,
        created_at: payloadTime(s.created_at),
        started_at: payloadTime(s.started_at),
        finished_at: payloadTime(s.finished_at),
        when: 'on_success',
        manual: false,
        user: author ? userHookAttrs(author) : null,
        runner: null,
        artifacts_file: { filename: null, size: null },
      };
    }),
  };
}

/**
 * `Build Hook` (8.x `Ci::Build` hook data) for one status: the sandbox treats each commit status as a
 * build of the server's own CI, which on real servers fires a Build Hook on every transition (a
 * pipeline hook fires only when the combined status changes).
 */
export function buildPayload(
  ctx: SandboxContext,
  project: ProjectRec,
  status: StatusRec,
  user: UserRec,
): Record<string, unknown> {
  const commit = knownCommit(ctx, status.sha);
  const started = status.started_at ? Date.parse(status.started_at) : undefined;
  const finished = status.finished_at ? Date.parse(status.finished_at) : undefined;
  const p = projectHookAttrs(ctx, project);
  return {
    object_kind: 'build',
    ref: status.ref,
    tag: false,
    before_sha: BLANK_SHA,
    sha: status.sha,
    build_id: status.id,
    build_name: status.name,
    build_stage: EXTERNAL_STAGE,
    build_status: status.status,
    build_started_at: payloadTime(status.started_at),
    build_finished_at: payloadTime(status.finished_at),
    build_duration: started !== undefined && finished !== undefined ? (finished - started) / 1000 : null,
    build_allow_failure: status.allow_failure,
    project_id: project.id,
    project_name: `${p.namespace} / ${p.name}`,
    user: { id: user.id, name: user.name, email: user.email },
    commit: {
      id: status.id,
      sha: status.sha,
      message: commit?.message ?? null,
      author_name: commit?.author_name ?? null,
      author_email: commit?.author_email ?? null,
      status: status.status,
      duration: null,
      started_at: payloadTime(status.started_at),
      finished_at: payloadTime(status.finished_at),
    },
    repository: {
      name: p.name,
      url: p.url,
      description: p.description,
      homepage: p.homepage,
      git_ssh_url: p.git_ssh_url,
      git_http_url: p.git_http_url,
      visibility_level: p.visibility_level,
    },
  };
}
