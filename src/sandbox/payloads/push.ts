/** `Push Hook` and `Tag Push Hook` payloads (one builder: they differ in the ref and the commits). */
import type { GitCommit, SandboxContext } from '../context.ts';
import type { ProjectRec, UserRec } from '../db.ts';
import { loadCommit, rememberCommits, rememberHead } from './commit-memo.ts';
import { BLANK_SHA, commitHookAttrs, projectHookAttrs } from './hook-attrs.ts';

/** 8.x `PushDataBuilder`: the latest 20 commits, oldest first. */
export const PUSH_COMMIT_LIMIT = 20;

/**
 * The commits a push brought, oldest first (8.x `GitPushService` / `GitTagPushService`):
 * - removal: none;
 * - tag: the tagged commit;
 * - new branch: its whole history when it is the default branch (an initial push), else the commits
 *   not on the default branch;
 * - existing branch: the commits reachable from `after` and not from `before`.
 */
export async function pushedCommits(
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
    const compared = await ctx.git.compare(project.id, project.default_branch, project.id, push.after, {
      diffs: false,
    });
    return [...compared.commits].reverse();
  }
  const compared = await ctx.git.compare(project.id, push.before, project.id, push.after, { diffs: false });
  return [...compared.commits].reverse();
}

/** 8.x `Commit#repo_changes`: a rename counts as added (new path), as real servers report it. */
export function changedFiles(ctx: SandboxContext, projectId: number, sha: string) {
  return ctx.git.changes(projectId, sha);
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
  const commits = await Promise.all(
    latest.map(async (commit) => ({
      ...commitHookAttrs(ctx, project, commit),
      ...(await changedFiles(ctx, project.id, commit.id)),
    })),
  );
  const attrs = projectHookAttrs(ctx, project);
  return {
    object_kind: tag ? 'tag_push' : 'push',
    before: push.before,
    after: push.after,
    ref,
    // The commit checked out by the push; null when the ref was removed. For a tag, the commit it
    // points to (an annotated tag's `after` is the tag object), as 8.x `DataBuilder::Push#checkout_sha`.
    checkout_sha: push.after === BLANK_SHA ? null : tag ? (all[0]?.id ?? null) : push.after,
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
