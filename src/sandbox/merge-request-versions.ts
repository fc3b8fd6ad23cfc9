/**
 * Merge request versions, as 8.12 and later keep them (`MergeRequestDiff`, one row per diff the server
 * made of a merge request; docs/server-behaviour.md#merge-request-versions): when one is made, what it
 * records, and what the versions API shows of it (routes/merge-request-versions.ts).
 *
 * 8.x makes a version (`MergeRequest#reload_diff`, which does nothing unless the merge request is
 * open) on create (`ensure_merge_request_diff`), on reopen (`ReopenService`), when the target branch
 * changes (`reload_diff_if_branch_changed`), and on a push (`RefreshService#reload_merge_requests`,
 * `recordVersionsOnPush` below). A version holds the source branch's head and the target branch's head
 * of that moment (null for a branch that is gone: the source branch deleted makes a version with no
 * head, state `empty`) and the commits between them. What follows from those (the merge base, the
 * state, the number of files changed, the diff) is worked out when first read: the objects never go
 * away (the sandbox runs no gc, and a fork's heads are fetched into the target repository), so the
 * answer is the one 8.x stored, and a push pays for none of it.
 */
import type { GitCommit, GitDiffEntry, PushEvent, SandboxContext } from './context.ts';
import type { MergeRequestDiffRec, MergeRequestRec } from './db.ts';
import { inStateScope } from './issuables.ts';
import { commitsBetween } from './merge-request-refs.ts';

const NULL_SHA = '0000000000000000000000000000000000000000';

const isOpen = (mr: MergeRequestRec) => !mr.deleted && inStateScope(mr.state, 'opened');

/** A merge request's versions, newest first (8.x lists them by id, descending). */
export function versionsOf(ctx: SandboxContext, mr: MergeRequestRec): MergeRequestDiffRec[] {
  return ctx.db.data.mergeRequestDiffs
    .filter((v) => v.merge_request_id === mr.id)
    .sort((a, b) => b.id - a.id);
}

/** The merge request's current version (8.x `merge_request_diff`: the one with the highest id). */
export function latestVersion(ctx: SandboxContext, mr: MergeRequestRec): MergeRequestDiffRec | undefined {
  let latest: MergeRequestDiffRec | undefined;
  for (const v of ctx.db.data.mergeRequestDiffs)
    if (v.merge_request_id === mr.id && (!latest || v.id > latest.id)) latest = v;
  return latest;
}

/**
 * 8.x `create_merge_request_diff`: a new version from the branches as they are now. The caller
 * decides that one is due (an open merge request, one of the events above).
 */
export async function recordVersion(ctx: SandboxContext, mr: MergeRequestRec): Promise<MergeRequestDiffRec> {
  const db = ctx.db;
  const hasProject = (id: number) => db.data.projects.some((p) => p.id === id);
  const head = hasProject(mr.source_project_id)
    ? ((await ctx.git.branch(mr.source_project_id, mr.source_branch))?.id ?? null)
    : null;
  const start = hasProject(mr.target_project_id)
    ? ((await ctx.git.branch(mr.target_project_id, mr.target_branch))?.id ?? null)
    : null;
  // 8.x `save_commits`: `start..head`, newest first; none without both ends.
  const commits =
    head && start
      ? (await ctx.git.compare(mr.target_project_id, start, mr.source_project_id, head, { diffs: false }))
          .commits
      : [];
  const version: MergeRequestDiffRec = {
    id: db.nextId('mergeRequestDiffs'),
    merge_request_id: mr.id,
    head_commit_sha: head,
    start_commit_sha: start,
    commit_shas: commits.map((c) => c.id),
    created_at: db.now(),
  };
  db.data.mergeRequestDiffs.push(version);
  db.changed();
  return version;
}

/**
 * 8.x `RefreshService#reload_merge_requests`, after the merge requests the push merged are marked
 * merged (refresh-merge-requests.ts): every open merge request of the pushed project whose source or
 * target branch has the pushed branch's name, and every open one from this project (a fork) into
 * another whose source or target branch has that name, gets a new version when the pushed branch is
 * its source branch by name, or the push is a force push (its old head is not in its new history);
 * otherwise only when the push brought some of the commits of its current version. As in 8.x the
 * names are compared without the project: a push to `feature` of the target project makes a version
 * of a fork's merge request from its own `feature` too (its head unchanged).
 */
export async function recordVersionsOnPush(
  ctx: SandboxContext,
  push: PushEvent,
  branch: string,
): Promise<void> {
  const db = ctx.db;
  const projectId = push.project.id;
  const named = (mr: MergeRequestRec) => mr.source_branch === branch || mr.target_branch === branch;
  const candidates = db.data.mergeRequests.filter(
    (mr) =>
      isOpen(mr) &&
      named(mr) &&
      (mr.target_project_id === projectId ||
        (mr.source_project_id === projectId && mr.target_project_id !== projectId)) &&
      // 8.x leaves out merge requests whose source project is gone (`select(&:source_project)`).
      db.data.projects.some((p) => p.id === mr.source_project_id),
  );
  if (candidates.length === 0) return;
  let forced: Promise<boolean> | undefined;
  const forcePush = () => (forced ??= isForcePush(ctx, push));
  let brought: Promise<Set<string>> | undefined;
  const pushed = () => (brought ??= commitsBetween(ctx, projectId, push.before, push.after));
  for (const mr of candidates) {
    let due = mr.source_branch === branch || (await forcePush());
    if (!due) {
      const commits = new Set(latestVersion(ctx, mr)?.commit_shas ?? []);
      for (const sha of await pushed()) if (commits.has(sha)) due = true;
    }
    if (due && isOpen(mr)) await recordVersion(ctx, mr);
  }
}

/** 8.x `Gitlab::Checks::ForcePush`: neither end null, and the old head is not in the new history. */
async function isForcePush(ctx: SandboxContext, push: PushEvent): Promise<boolean> {
  if (push.before === NULL_SHA || push.after === NULL_SHA) return false;
  const id = push.project.id;
  const { commits } = await ctx.git.compare(id, push.after, id, push.before, { diffs: false });
  return commits.length > 0;
}

/**
 * At start: every open merge request without a version gets one (8.x makes the first on create;
 * merge requests of a data file written before the sandbox kept versions, and the seed's, made
 * without the API, have none). It is dated now: nothing says what their branches held before.
 */
export async function ensureMergeRequestVersions(ctx: SandboxContext): Promise<void> {
  const versioned = new Set(ctx.db.data.mergeRequestDiffs.map((v) => v.merge_request_id));
  for (const mr of ctx.db.data.mergeRequests)
    if (isOpen(mr) && !versioned.has(mr.id)) await recordVersion(ctx, mr);
}

/** What the versions API shows of a version beside what it records. */
export interface VersionFacts {
  /** The merge base of start and head (8.x `find_base_sha`); null without both. */
  base_commit_sha: string | null;
  /** `collected` when it changes files, `empty` otherwise (no commits, or none that change a file). */
  state: 'collected' | 'empty';
  /** How many files it changes, as a string (8.x `real_size`); null when it has no commits. */
  real_size: string | null;
}

/** The project whose repository holds the version's head (the target's, where 8.x fetched it). */
async function headProject(ctx: SandboxContext, mr: MergeRequestRec, head: string): Promise<number> {
  return (await ctx.git.commit(mr.target_project_id, head)) ? mr.target_project_id : mr.source_project_id;
}

/** The diff of a version: from the merge base of its two ends to its head (8.x `compare.diffs`). */
async function versionDiff(
  ctx: SandboxContext,
  mr: MergeRequestRec,
  v: MergeRequestDiffRec,
): Promise<{ mergeBase: string | undefined; diffs: GitDiffEntry[] }> {
  if (!v.head_commit_sha || !v.start_commit_sha) return { mergeBase: undefined, diffs: [] };
  const from = await headProject(ctx, mr, v.head_commit_sha);
  const { mergeBase, diffs } = await ctx.git.compare(
    mr.target_project_id,
    v.start_commit_sha,
    from,
    v.head_commit_sha,
  );
  return { mergeBase, diffs };
}

/** Facts never change once worked out: remembered per version. */
const known = new WeakMap<SandboxContext, Map<number, VersionFacts>>();

export async function versionFacts(
  ctx: SandboxContext,
  mr: MergeRequestRec,
  v: MergeRequestDiffRec,
): Promise<VersionFacts> {
  let byId = known.get(ctx);
  if (!byId) known.set(ctx, (byId = new Map()));
  const remembered = byId.get(v.id);
  if (remembered) return remembered;
  const { mergeBase, diffs } = await versionDiff(ctx, mr, v);
  const facts: VersionFacts = {
    base_commit_sha: mergeBase ?? null,
    // 8.x `save_diffs`: no commits, `empty` and no size; commits that change no file, `empty` and "0".
    state: v.commit_shas.length > 0 && diffs.length > 0 ? 'collected' : 'empty',
    real_size: v.commit_shas.length > 0 ? String(diffs.length) : null,
  };
  byId.set(v.id, facts);
  return facts;
}

/** A version's commits (newest first) and its diff, for `GET .../versions/:version_id`. */
export async function versionContent(
  ctx: SandboxContext,
  mr: MergeRequestRec,
  v: MergeRequestDiffRec,
): Promise<{ commits: GitCommit[]; diffs: GitDiffEntry[] }> {
  if (!v.head_commit_sha) return { commits: [], diffs: [] };
  const from = await headProject(ctx, mr, v.head_commit_sha);
  const commits: GitCommit[] = [];
  for (const sha of v.commit_shas) {
    const commit = await ctx.git.commit(from, sha);
    if (commit) commits.push(commit);
  }
  return { commits, diffs: (await versionDiff(ctx, mr, v)).diffs };
}
