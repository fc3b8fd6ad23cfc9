/**
 * What every sandbox route is given: the data, the git repositories and the hook dispatcher.
 * The interfaces are here so the three can be built and tested apart.
 */
import type { Db, HookRec, ProjectRec, UserRec } from './db.ts';

/** A commit as git knows it. Timestamps are ISO 8601 with offset, as commit timestamps are on real servers. */
export interface GitCommit {
  id: string;
  short_id: string;
  title: string;
  message: string;
  author_name: string;
  author_email: string;
  authored_date: string;
  committer_name: string;
  committer_email: string;
  committed_date: string;
  parent_ids: string[];
  tree: string;
}

export interface GitDiffEntry {
  diff: string;
  old_path: string;
  new_path: string;
  a_mode: string | null;
  b_mode: string | null;
  new_file: boolean;
  renamed_file: boolean;
  deleted_file: boolean;
}

export interface GitAuthor {
  name: string;
  email: string;
}

export type GitMergeResult = { ok: true; sha: string } | { ok: false; conflict: true; files: string[] };

/** Real git repositories, one per project (bare, on disk). Every method is safe to call concurrently. */
export interface GitRepos {
  /** Creates the project's repository; with `initialFiles` it gets a first commit on `defaultBranch`. */
  create(
    projectId: number,
    options: {
      defaultBranch: string;
      initialFiles?: Record<string, string>;
      author: GitAuthor;
      message?: string;
    },
  ): Promise<void>;
  remove(projectId: number): Promise<void>;
  /** Copies every branch of `fromProjectId` into a new repository for `toProjectId`. */
  fork(fromProjectId: number, toProjectId: number): Promise<void>;
  /** Branch names and their head commits. */
  branches(projectId: number): Promise<{ name: string; commit: GitCommit }[]>;
  /** A branch's head, or undefined when the branch does not exist. */
  branch(projectId: number, name: string): Promise<GitCommit | undefined>;
  /** Creates `name` at `ref` (a branch, tag or sha). Undefined when `ref` does not resolve. */
  createBranch(projectId: number, name: string, ref: string): Promise<GitCommit | undefined>;
  deleteBranch(projectId: number, name: string): Promise<void>;
  /** Creates, updates or deletes one file on `branch` with one commit. Throws `GitError` when the branch is missing or (create) the file exists / (update, delete) it does not. */
  commitFile(
    projectId: number,
    options: {
      branch: string;
      path: string;
      content: string | Buffer;
      message: string;
      author: GitAuthor;
      mode: 'create' | 'update' | 'delete';
    },
  ): Promise<GitCommit>;
  /** Commits reachable from `ref`, newest first. Empty when `ref` does not resolve. */
  log(projectId: number, ref: string, options?: { limit?: number }): Promise<GitCommit[]>;
  /** A commit by sha, branch or tag; undefined when it does not resolve. */
  commit(projectId: number, ref: string): Promise<GitCommit | undefined>;
  /** The diff a commit introduces against its first parent (or the empty tree). */
  diff(projectId: number, sha: string): Promise<GitDiffEntry[]>;
  /**
   * The paths a commit adds, changes and removes against its first parent, as the Push Hook lists
   * them (8.x `Commit#repo_changes`: a rename counts as added, its new path).
   */
  changes(
    projectId: number,
    sha: string,
  ): Promise<{ added: string[]; modified: string[]; removed: string[] }>;
  /**
   * What merging `source` (of `sourceProjectId`, possibly a fork) into `target` (of `projectId`) brings:
   * the commits on source not on target, newest first, and the diff from their merge base to source
   * (not computed, and empty, with `diffs: false`).
   */
  compare(
    projectId: number,
    target: string,
    sourceProjectId: number,
    source: string,
    options?: { diffs?: boolean },
  ): Promise<{ commits: GitCommit[]; diffs: GitDiffEntry[]; mergeBase: string | undefined }>;
  /** Whether `source` merges into `target` without conflict (a real three-way merge, nothing written). */
  canMerge(projectId: number, target: string, sourceProjectId: number, source: string): Promise<boolean>;
  /** Merges for real: a merge commit on `target` (fast-forward never: real servers of that era always made a merge commit). */
  merge(
    projectId: number,
    options: { target: string; sourceProjectId: number; source: string; message: string; author: GitAuthor },
  ): Promise<GitMergeResult>;
  /** Resolves a branch, tag or sha to a full sha. */
  resolve(projectId: number, ref: string): Promise<string | undefined>;
  /** Ends what the repositories keep running (readers); they start again when needed. */
  close?(): void;
}

/** Event names as sent in `X-Gitlab-Event`. */
export type HookEventName =
  | 'Push Hook'
  | 'Tag Push Hook'
  | 'Issue Hook'
  | 'Note Hook'
  | 'Merge Request Hook'
  | 'Build Hook'
  | 'Pipeline Hook';

/** Which flag of a project hook selects an event. */
export const HOOK_FLAG: Record<HookEventName, keyof HookRec> = {
  'Push Hook': 'push_events',
  'Tag Push Hook': 'tag_push_events',
  'Issue Hook': 'issues_events',
  'Note Hook': 'note_events',
  'Merge Request Hook': 'merge_requests_events',
  'Build Hook': 'build_events',
  'Pipeline Hook': 'pipeline_events',
};

export interface HookDelivery {
  hookId: number;
  url: string;
  event: HookEventName;
  payload: Record<string, unknown>;
  /** HTTP status of the answer, or undefined when there was none (refused, reset, timed out). */
  status: number | undefined;
  error?: string;
  durationMs: number;
  at: string;
}

/**
 * Sends hook deliveries like the real servers: POST JSON with `X-Gitlab-Event` and `X-Gitlab-Token`,
 * asynchronous (never blocking the API call that caused it), 10 s timeout, status ignored.
 */
export interface HookDispatcher {
  /** Queues a delivery to every hook of the project whose flag selects `event`. Returns at once. */
  emit(projectId: number, event: HookEventName, payload: Record<string, unknown>): void;
  /** Resolves when every queued delivery has finished (for tests and the demo). */
  idle(): Promise<void>;
  /** The most recent deliveries (bounded), newest last. */
  recent(): readonly HookDelivery[];
  close(): Promise<void>;
}

/** Commits landed on a branch (a file commit, a merge, a new branch): `before` is all zeros for a new branch. */
export interface PushEvent {
  project: ProjectRec;
  ref: string;
  before: string;
  after: string;
  user: UserRec;
  /**
   * When the server took the push (`performance.now()` of the sandbox's process): a git push's refs
   * are told one after another, each after the listeners of the one before, so a listener that times
   * a push reads this rather than its own clock. Unset: told as it happened (a file commit, a merge).
   */
  receivedAt?: number;
}

/** A commit status was added or changed. */
export interface StatusEvent {
  project: ProjectRec;
  sha: string;
  ref: string | null;
  user: UserRec;
}

/**
 * Listeners the route families register so one family can react to another's changes without
 * importing it: pushes fire the Push Hook and refresh merge requests; statuses fire the Pipeline Hook
 * and drive merge-when-build-succeeds. Listeners run after the answer is decided and must not throw.
 */
export interface SandboxListeners {
  push: ((event: PushEvent) => Promise<void> | void)[];
  /**
   * Told of every ref of a git push at once, the moment the server took it, before `push` tells each
   * ref in turn (after its own bookkeeping of the one before): synchronous listeners only. The
   * simulated CI starts its builds here, as 8.x's `PostReceive` creates every ref's pipeline before
   * its background jobs (hooks, merge requests refreshed) run. Pushes through the API are told on
   * `push` only.
   */
  pushTaken?: ((event: PushEvent) => void)[];
  status: ((event: StatusEvent) => Promise<void> | void)[];
}

export interface SandboxContext {
  db: Db;
  git: GitRepos;
  hooks: HookDispatcher;
  on: SandboxListeners;
  /** The externally visible base URL, e.g. `http://127.0.0.1:8929` (for web_url and payload URLs). */
  baseUrl(): string;
  /** `ssh://git@127.0.0.1:2222` while the sandbox serves git over SSH (git-ssh.ts); undefined otherwise. */
  sshBase?(): string | undefined;
  /**
   * The folder of the bare repositories (`<id>.git`), for what works on refs that are not branches
   * (merge-request-refs.ts); undefined in contexts built by hand without repositories on disk.
   */
  reposDir?: string;
}

/**
 * A project's SSH clone URL: `ssh://git@<host>:<port>/<ns>/<p>.git` while the sandbox serves SSH (what
 * real servers show for a port other than 22), the scp-like `git@<host>:<ns>/<p>.git` otherwise.
 */
export function sshUrlToRepo(ctx: SandboxContext, fullPath: string): string {
  const base = ctx.sshBase?.();
  if (base) return `${base}/${fullPath}.git`;
  let host = 'localhost';
  try {
    host = new URL(ctx.baseUrl()).hostname || host;
  } catch {
    // no base URL yet: localhost
  }
  return `git@${host}:${fullPath}.git`;
}

/** The caller of a request, after authentication and sudo. */
export interface Caller {
  user: UserRec;
  /** The admin who used sudo, when one did. */
  sudoBy?: UserRec;
}

/** Runs the listeners one after another; a failing listener is logged, never thrown at the caller. */
export async function notify<E>(listeners: ((event: E) => Promise<void> | void)[], event: E): Promise<void> {
  for (const listener of listeners) {
    try {
      await listener(event);
    } catch (error) {
      console.error('sandbox: listener failed', error);
    }
  }
}
