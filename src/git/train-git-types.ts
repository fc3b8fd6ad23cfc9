/**
 * What the merge trains' git does (train-git.ts makes it): the requests, the outcomes and the
 * interface the driver (src/scheduler/sweeps/train-*.ts) calls.
 */
import type { GitIdentity, RunGit } from './git-process.ts';

/** Every branch a train pushes starts with this by default (`git.train_branch_prefix`). */
export const DEFAULT_TRAIN_PREFIX = 'hookbot/train/';

export interface CarMemberInput {
  iid: number;
  /** The source head the driver read: the fetched ref must be at it. */
  head: string;
  /** The message of its merge commit. */
  message: string;
}

export interface BuildCarRequest {
  targetUrl: string;
  /** The commit the car is built on. */
  base: string;
  /** Where `base` is fetched from when the cache does not have it (the target, or the car ahead's branch). */
  baseBranch: string;
  members: CarMemberInput[];
  /** Seconds since the epoch: the author and committer date of every merge. */
  date: number;
  identity: GitIdentity;
}

export type BuildCarOutcome =
  | { kind: 'built'; sha: string }
  /** The member at `index` conflicts with what is below it (the files). */
  | { kind: 'conflict'; index: number; files: string[] }
  /** The member at `index` is not at the head the driver read (its ref is at `sha`, or gone). */
  | { kind: 'moved'; index: number; sha?: string }
  /** The member at `index` has no history in common with what is below it. */
  | { kind: 'unrelated'; index: number }
  /** `base` could not be had (the branch it was fetched from moved on or is gone). */
  | { kind: 'missing-base' }
  | { kind: 'refused'; message: string };

export type PushOutcome =
  | { kind: 'pushed' }
  /** A branch's lease failed: someone moved it meanwhile. */
  | { kind: 'moved' }
  | { kind: 'refused'; message: string }
  /** `ref` (a branch) stands where git would need a folder, or the reverse: no car branch can be made. */
  | { kind: 'blocked'; ref: string; sha: string; branch: string };

/**
 * A landing's outcome: `missing` when the car's commit is neither in the cache nor on its branch;
 * `moved` only when the target is no longer at `base`, `refused` when it is (it did not move: the
 * server refused the push).
 */
export type LandOutcome =
  | { kind: 'pushed' }
  | { kind: 'moved'; sha?: string }
  | { kind: 'refused'; message: string }
  | { kind: 'missing' };

/** Car branches deleted, and those left because they hold something else than the car's commit. */
export interface DeleteOutcome {
  deleted: string[];
  left: { branch: string; sha: string; why: string }[];
}

export interface TrainGit {
  /** The identity the updater commits as (a car records it before its push). */
  readonly identity: GitIdentity;
  /** The folder of every branch the train pushes (`hookbot/train/` by default); ends with `/`. */
  readonly prefix: string;
  buildCar(request: BuildCarRequest): Promise<BuildCarOutcome>;
  /**
   * Fetches the heads of the next cars' merge requests the cache lacks, in one fetch from the target
   * project's `refs/merge-requests/<iid>/head` (no ref kept; a member given without `head` is fetched
   * whatever its ref holds): `buildCar` then finds them and builds without a fetch of its own per car. Only a speed-up: whatever it could not have (a ref moved on,
   * a refusal), `buildCar` fetches again and answers for.
   */
  fetchHeads(request: { targetUrl: string; members: { iid: number; head?: string }[] }): Promise<void>;
  /**
   * Points each `branch` (a `hookbot/train/` branch) at its `sha`, in one push, each with a lease on
   * what the branch held when read just before (one `ls-remote` for all). `known`: the caller knows
   * what each branch holds (`was`; undefined: no such branch), and the push is tried first with those
   * leases, without the read; when it does not all go, the read and the push as above.
   */
  pushCars(request: {
    targetUrl: string;
    cars: { branch: string; sha: string; was?: string }[];
    known?: boolean;
  }): Promise<PushOutcome>;
  /**
   * Fast-forwards `targetBranch` from `base` to `sha` (a plain push: refused by the server when it
   * is not a fast-forward); `sha` is fetched from `carBranch` (its train branch) when the cache does
   * not have it. A failed push reads the target again to tell a move from a refusal.
   */
  land(request: {
    targetUrl: string;
    targetBranch: string;
    base: string;
    sha: string;
    carBranch: string;
  }): Promise<LandOutcome>;
  /**
   * A landing and the next cars in one push, all or nothing (`--atomic`): `targetBranch` fast-forwarded
   * to `sha` (a plain push: never forced), each car's branch set to its commit with a lease on what the
   * driver knows it holds (`was`; undefined: no such branch), each landed car's branch deleted with a
   * lease on its commit. False when anything was refused, the cache lacks `sha` or the server does not
   * take atomic pushes: then nothing changed, and the caller lands and pushes each on its own (`land`,
   * `pushCars`, `deleteCars`), which tell why.
   */
  landWithCars(request: {
    targetUrl: string;
    targetBranch: string;
    sha: string;
    cars: { branch: string; sha: string; was?: string }[];
    landed: { branch: string; sha: string }[];
  }): Promise<boolean>;
  /** A branch of the remote that makes one of `branches` impossible to create, if any (one ls-remote each). */
  findBlocker(request: {
    targetUrl: string;
    branches: string[];
  }): Promise<{ ref: string; sha: string; branch: string } | undefined>;
  /** The branches under `prefix` (a train folder) and their commits. */
  listCars(request: { targetUrl: string; prefix: string }): Promise<Map<string, string>>;
  /**
   * Deletes train branches, in one push, each only while it holds the car's own commit: `sha` when
   * the driver recorded it; without one (a branch found by listing), a commit the train made. Nothing
   * else is ever deleted.
   */
  deleteCars(request: {
    targetUrl: string;
    cars: { branch: string; sha?: string }[];
  }): Promise<DeleteOutcome>;
}

export interface TrainGitDeps {
  git: RunGit;
  identity: GitIdentity;
  /** `git.train_branch_prefix` (checked by the configuration); default `hookbot/train/`. */
  prefix?: string;
  /** Runs `fn` in the cache repository of `url` (one at a time per repository). */
  withRepository<T>(url: string, fn: (repo: string) => Promise<T>): Promise<T>;
  /** Credentials out of a text (git's output) before it is said anywhere. */
  redact(text: string): string;
  /** Authentication, permission, a hook's refusal in git's output (redacted), if that is what it is. */
  refusal(output: string): string | undefined;
  /** Throws the redacted GitCommandError of a command that failed otherwise. */
  fail(what: string, run: { code: number; stdout: string; stderr: string }): never;
}
