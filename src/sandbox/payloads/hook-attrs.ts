/**
 * The parts every hook payload shares: the payload time form, and the user, project, repository and
 * commit attributes as 8.x `hook_attrs` builds them.
 */
import { type GitCommit, type SandboxContext, sshUrlToRepo } from '../context.ts';
import type { ProjectRec, Timestamp, UserRec } from '../db.ts';
import { pathWithNamespace } from '../permissions.ts';
import { knownCommit } from './commit-memo.ts';

export type Payload = Record<string, unknown>;

/** The all-zeros sha real servers use for "no commit" (`before` of a new branch, `after` of a deleted one). */
export const BLANK_SHA = '0000000000000000000000000000000000000000';

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
export function commitTime(iso: string): string {
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/.test(iso)) return iso;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 19)}Z`;
}

export function projectOf(ctx: SandboxContext, projectId: number): ProjectRec {
  const project = ctx.db.data.projects.find((p) => p.id === projectId);
  if (!project) throw new Error(`payloads: no project ${projectId}`);
  return project;
}

export function webUrl(ctx: SandboxContext, project: ProjectRec): string {
  return `${ctx.baseUrl()}/${pathWithNamespace(ctx.db, project)}`;
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
    git_ssh_url: sshUrlToRepo(ctx, path),
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
export function repositoryAttrs(ctx: SandboxContext, project: ProjectRec) {
  const p = projectHookAttrs(ctx, project);
  return { name: p.name, url: p.url, description: p.description, homepage: p.homepage };
}

/** 8.x `Commit#hook_attrs` (without the changed files). */
export function commitHookAttrs(ctx: SandboxContext, project: ProjectRec, commit: GitCommit) {
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
export function commitHookAttrsBySha(ctx: SandboxContext, project: ProjectRec, sha: string) {
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

export function assigneeOf(ctx: SandboxContext, assigneeId: number | null): UserRec | undefined {
  return assigneeId === null ? undefined : ctx.db.data.users.find((u) => u.id === assigneeId);
}
