/** Commits and branch heads the synchronous payload builders know without asking git. */
import type { GitCommit, GitRepos, SandboxContext } from '../context.ts';

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
export interface Memo {
  commits: Map<string, GitCommit>;
  /** `projectId:branch` -> head sha, from pushes. */
  heads: Map<string, string>;
}
export const memos = new WeakMap<GitRepos, Memo>();
export const MEMO_LIMIT = 10_000;

export function memoOf(ctx: SandboxContext): Memo {
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

export function knownCommit(ctx: SandboxContext, sha: string): GitCommit | undefined {
  return memos.get(ctx.git)?.commits.get(sha);
}

export function rememberHead(
  ctx: SandboxContext,
  projectId: number,
  branch: string,
  sha: string | undefined,
): void {
  const heads = memoOf(ctx).heads;
  const key = `${projectId}:${branch}`;
  heads.delete(key);
  if (sha !== undefined) heads.set(key, sha);
  while (heads.size > MEMO_LIMIT) heads.delete(heads.keys().next().value as string);
}

export function knownHead(ctx: SandboxContext, projectId: number, branch: string): string | undefined {
  return memos.get(ctx.git)?.heads.get(`${projectId}:${branch}`);
}
