/**
 * `refs/merge-requests/<iid>/head` in the target project's repository, as real 8.x keeps it
 * (`MergeRequest#fetch_ref`, called each time the merge request's diff is made: on create, on a push
 * to its source branch while it is open, on reopen): the source branch's head, fetched from the source
 * project's repository, so a fork's commits are in the target repository too. Whoever may fetch the
 * target project fetches it (`git fetch origin refs/merge-requests/1/head`) without any access to the
 * fork; it is not a branch (the branches API and a clone's branches never show it).
 *
 * And the one question about history the merge requests' refresh asks (refresh-merge-requests.ts):
 * which commits a push brought (8.x `commits_between(oldrev, newrev)`).
 *
 * Refs and history are read through the repositories' own readers (`ctx.git`: in-process, no
 * process per read); a fork's fetch and the ref's update run the git CLI on the bare repositories
 * (`<reposDir>/<id>.git`) with the environment git.ts uses: no system or user configuration, no
 * background gc, `LC_ALL=C`.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { SandboxContext } from './context.ts';
import type { MergeRequestRec } from './db.ts';

const NULL_SHA = '0000000000000000000000000000000000000000';
const FULL_SHA = /^[0-9a-f]{40}$/;

interface Run {
  code: number;
  stdout: string;
}

function git(reposDir: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      {
        env: {
          PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
          HOME: reposDir,
          LC_ALL: 'C',
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_TERMINAL_PROMPT: '0',
          GIT_CONFIG_COUNT: '2',
          GIT_CONFIG_KEY_0: 'gc.auto',
          GIT_CONFIG_VALUE_0: '0',
          GIT_CONFIG_KEY_1: 'maintenance.auto',
          GIT_CONFIG_VALUE_1: 'false',
        },
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
      },
      (error, stdout) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout }),
    );
  });
}

/** The ref's name: what real servers call `MergeRequest#ref_path`. */
export function mergeRequestRef(mr: Pick<MergeRequestRec, 'iid'>): string {
  return `refs/merge-requests/${mr.iid}/head`;
}

/** Branch names git could never take (and that must never reach a command line as an option). */
const validBranch = (name: string) => name.length > 0 && !name.startsWith('-') && !/[\0\n\r]/.test(name);

/** Updates of one target repository run one at a time (a fetch and an update-ref lock the same ref). */
const chains = new WeakMap<SandboxContext, Map<number, Promise<unknown>>>();
function serially<T>(ctx: SandboxContext, projectId: number, work: () => Promise<T>): Promise<T> {
  let byProject = chains.get(ctx);
  if (!byProject) chains.set(ctx, (byProject = new Map()));
  const previous = byProject.get(projectId) ?? Promise.resolve();
  const result = previous.then(work, work);
  const tail = result.catch(() => undefined);
  byProject.set(projectId, tail);
  void tail.then(() => {
    if (byProject.get(projectId) === tail) byProject.delete(projectId);
  });
  return result;
}

/**
 * Points `refs/merge-requests/<iid>/head` of the target repository at the source branch's head (8.x
 * `fetch_ref`), fetching a fork's objects first. Answers the sha it points at, or undefined when the
 * source branch is gone (the ref then stays where it was, as a failed fetch leaves it on 8.x) or the
 * context has no repositories on disk (contexts built by hand in tests).
 */
export function keepMergeRequestRef(ctx: SandboxContext, mr: MergeRequestRec): Promise<string | undefined> {
  const reposDir = ctx.reposDir;
  if (!reposDir || !validBranch(mr.source_branch)) return Promise.resolve(undefined);
  const repo = (id: number) => path.join(reposDir, `${id}.git`);
  const target = repo(mr.target_project_id);
  const ref = mergeRequestRef(mr);
  return serially(ctx, mr.target_project_id, async () => {
    if (mr.source_project_id !== mr.target_project_id) {
      const fetched = await git(reposDir, [
        '-C',
        target,
        'fetch',
        '--quiet',
        '--no-tags',
        '--no-write-fetch-head',
        repo(mr.source_project_id),
        `+refs/heads/${mr.source_branch}:${ref}`,
      ]);
      if (fetched.code !== 0) return undefined;
      return ctx.git.resolve(mr.target_project_id, ref);
    }
    const head = await ctx.git.resolve(mr.target_project_id, `refs/heads/${mr.source_branch}`);
    if (!head) return undefined;
    const moved = await git(reposDir, ['-C', target, 'update-ref', ref, head]);
    return moved.code === 0 ? head : undefined;
  });
}

/** Where `refs/merge-requests/<iid>/head` points, or undefined. */
export function mergeRequestRefHead(ctx: SandboxContext, mr: MergeRequestRec): Promise<string | undefined> {
  if (!ctx.reposDir) return Promise.resolve(undefined);
  return ctx.git.resolve(mr.target_project_id, mergeRequestRef(mr));
}

/**
 * 8.x `commits_between(oldrev, newrev)` of a push to a branch: the commits reachable from `after` and
 * not from `before`, as a set of shas. None for a new branch or a deleted one (8.x finds none to close
 * merge requests with either).
 */
export async function commitsBetween(
  ctx: SandboxContext,
  projectId: number,
  before: string,
  after: string,
): Promise<Set<string>> {
  if (
    !ctx.reposDir ||
    !FULL_SHA.test(before) ||
    !FULL_SHA.test(after) ||
    before === NULL_SHA ||
    after === NULL_SHA
  )
    return new Set();
  // The repositories' own history reader (in-process for a line of commits, git otherwise).
  const { commits } = await ctx.git.compare(projectId, before, projectId, after, { diffs: false });
  return new Set(commits.map((commit) => commit.id));
}

/**
 * At start: every open merge request whose ref is missing gets it (8.x `ensure_ref_fetched`), so a
 * data file written before the sandbox kept these refs, and the seed's merge request (made without
 * the API), have them too. One listing of the refs per target project, a fetch per missing one.
 */
export async function ensureMergeRequestRefs(ctx: SandboxContext): Promise<void> {
  const reposDir = ctx.reposDir;
  if (!reposDir) return;
  const open = ctx.db.data.mergeRequests.filter(
    (mr) => !mr.deleted && (mr.state === 'opened' || mr.state === 'reopened'),
  );
  const byTarget = new Map<number, MergeRequestRec[]>();
  for (const mr of open)
    byTarget.set(mr.target_project_id, [...(byTarget.get(mr.target_project_id) ?? []), mr]);
  for (const [targetId, mrs] of byTarget) {
    const listed = await git(reposDir, [
      '-C',
      path.join(reposDir, `${targetId}.git`),
      'for-each-ref',
      '--format=%(refname)',
      'refs/merge-requests/',
    ]);
    if (listed.code !== 0) continue; // no repository (a project without one)
    const present = new Set(listed.stdout.split('\n'));
    for (const mr of mrs) if (!present.has(mergeRequestRef(mr))) await keepMergeRequestRef(ctx, mr);
  }
}
