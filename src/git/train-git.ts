/**
 * Git for merge trains (docs/merge-queue.md#merge-trains), in the branch updater's bare cache and with
 * its runner: build a car, push it to its bot-owned branch, land it, delete its branch.
 *
 * - **Build**: car k is a chain of two-parent merge commits, one per merge request it carries, each
 *   merging that merge request's source head into the commit before (the first into `base`: the
 *   target's head for car 1, the car ahead's commit otherwise); made with `merge-tree --write-tree`
 *   and `commit-tree`, without a working tree. The heads are fetched from the TARGET project's
 *   `refs/merge-requests/<iid>/head` (a fork's merge request too), and must be the heads the driver
 *   read. The commits' dates and identity are the ones given (recorded by the driver before any
 *   push), so the same record always makes the same sha: a replica that rebuilds a car after a crash
 *   pushes the very same commit, never different contents under the same name.
 * - **Push a car**: to `refs/heads/hookbot/train/...` only (any other name is refused here), with a
 *   lease on what the branch held when it was read just before.
 * - **Land**: a plain push of the target branch to the car's commit, never forced: the server refuses
 *   when the target moved (it is then not a fast-forward), and the driver rebuilds. The car may have
 *   been built by another replica (another cache): its commit is fetched from its branch first. Before
 *   that fetch, a push of a commit the cache lacked failed as `[remote rejected] (unpacker error)`,
 *   which read as the target having moved: the driver rebuilt every car with a new date, so each car
 *   was pushed again with another commit (the train-replicas reliability scenario found it).
 * - **Delete a car's branch**: with a lease on the car's commit, and only a `hookbot/train/` branch.
 */
import { randomBytes } from 'node:crypto';
import type { GitIdentity, RunGit } from './git-process.ts';

/** Every branch a train pushes starts with this: the bot owns them, and deletes nothing else. */
export const TRAIN_PREFIX = 'hookbot/train/';

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
  /** `base` could not be had (the branch it was fetched from moved on or is gone). */
  | { kind: 'missing-base' }
  | { kind: 'refused'; message: string };

export type PushOutcome = { kind: 'pushed' } | { kind: 'moved' } | { kind: 'refused'; message: string };

/** A landing's outcome: `missing` when the car's commit is neither in the cache nor on its branch. */
export type LandOutcome = PushOutcome | { kind: 'missing' };

export interface TrainGit {
  /** The identity the updater commits as (a car records it before its push). */
  readonly identity: GitIdentity;
  buildCar(request: BuildCarRequest): Promise<BuildCarOutcome>;
  /**
   * Points each `branch` (a `hookbot/train/` branch) at its `sha`, in one push, each with a lease on
   * what the branch held when read just before (one `ls-remote` for all).
   */
  pushCars(request: { targetUrl: string; cars: { branch: string; sha: string }[] }): Promise<PushOutcome>;
  /**
   * Fast-forwards `targetBranch` to `sha` (a plain push: refused, `moved`, when it is not a fast-forward);
   * `sha` is fetched from `carBranch` (its train branch) when the cache does not have it.
   */
  land(request: {
    targetUrl: string;
    targetBranch: string;
    sha: string;
    carBranch: string;
  }): Promise<LandOutcome>;
  /** The branches under `prefix` (a `hookbot/train/` folder) and their commits. */
  listCars(request: { targetUrl: string; prefix: string }): Promise<Map<string, string>>;
  /** Deletes `hookbot/train/` branches that still hold their `sha` (nothing else is ever deleted), in one push. */
  deleteCars(request: { targetUrl: string; cars: { branch: string; sha?: string }[] }): Promise<void>;
}

export interface TrainGitDeps {
  git: RunGit;
  identity: GitIdentity;
  /** Runs `fn` in the cache repository of `url` (one at a time per repository). */
  withRepository<T>(url: string, fn: (repo: string) => Promise<T>): Promise<T>;
  /** Authentication, permission, a hook's refusal in git's output (redacted), if that is what it is. */
  refusal(output: string): string | undefined;
  /** Throws the redacted GitCommandError of a command that failed otherwise. */
  fail(what: string, run: { code: number; stdout: string; stderr: string }): never;
}

const LEASE_FAILED = /stale info|fetch first|non-fast-forward|cannot lock ref|failed to update ref|rejected/i;

function ownedBranch(branch: string): void {
  if (!branch.startsWith(TRAIN_PREFIX) || branch.includes('..') || /[\s:~^?*[\\]/.test(branch))
    throw new Error(`not a train branch of the bot's: ${JSON.stringify(branch)}`);
}

export function createTrainGit(deps: TrainGitDeps): TrainGit {
  const { git, fail, refusal } = deps;

  async function has(repo: string, sha: string): Promise<boolean> {
    return (await git(repo, ['cat-file', '-e', '--end-of-options', `${sha}^{commit}`])).code === 0;
  }

  /**
   * Fetches `refspecs` from `url` into the cache; a ref the remote lacks is no error (the caller
   * checks what it needed with `has`). The server's refusal (credentials, permission) is answered.
   */
  async function fetchInto(
    repo: string,
    url: string,
    refspecs: string[],
  ): Promise<{ refused: string } | undefined> {
    const r = await git(repo, [
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
      '--',
      url,
      ...refspecs,
    ]);
    if (r.code === 0 || /couldn't find remote ref/i.test(r.stderr)) return undefined;
    const refused = refusal(r.stderr);
    if (refused) return { refused };
    return fail('fetch', r);
  }

  function pushOutcome(run: { code: number; stdout: string; stderr: string }): PushOutcome {
    if (run.code === 0) return { kind: 'pushed' };
    const output = `${run.stdout}\n${run.stderr}`;
    const refused = refusal(output);
    if (refused && !LEASE_FAILED.test(output)) return { kind: 'refused', message: refused };
    if (LEASE_FAILED.test(output)) return { kind: 'moved' };
    return fail('push', run);
  }

  async function remoteHeads(repo: string, url: string, branches: string[]): Promise<Map<string, string>> {
    const r = await git(repo, ['ls-remote', '--', url, ...branches.map((b) => `refs/heads/${b}`)]);
    if (r.code !== 0) fail('ls-remote', r);
    const found = new Map<string, string>();
    for (const line of r.stdout.split('\n')) {
      const [sha, ref] = line.split('\t');
      if (sha && ref?.startsWith('refs/heads/')) found.set(ref.slice('refs/heads/'.length), sha);
    }
    return found;
  }

  async function buildCar(repo: string, request: BuildCarRequest): Promise<BuildCarOutcome> {
    const id = randomBytes(4).toString('hex');
    const temp: string[] = [];
    try {
      if (!(await has(repo, request.base))) {
        const local = `refs/hookbot/${id}/base`;
        temp.push(local);
        const fetched = await fetchInto(repo, request.targetUrl, [
          `+refs/heads/${request.baseBranch}:${local}`,
        ]);
        if (fetched) return { kind: 'refused', message: fetched.refused };
        if (!(await has(repo, request.base))) return { kind: 'missing-base' };
      }
      // The heads the cache does not have yet, in one fetch from the target project's refs.
      const wanted: string[] = [];
      for (const member of request.members)
        if (!(await has(repo, member.head))) {
          const local = `refs/hookbot/${id}/mr-${member.iid}`;
          temp.push(local);
          wanted.push(`+refs/merge-requests/${member.iid}/head:${local}`);
        }
      const heads = wanted.length > 0 ? await fetchInto(repo, request.targetUrl, wanted) : undefined;
      if (heads) return { kind: 'refused', message: heads.refused };
      const env = {
        GIT_AUTHOR_NAME: request.identity.name,
        GIT_AUTHOR_EMAIL: request.identity.email,
        GIT_COMMITTER_NAME: request.identity.name,
        GIT_COMMITTER_EMAIL: request.identity.email,
        GIT_AUTHOR_DATE: `${request.date} +0000`,
        GIT_COMMITTER_DATE: `${request.date} +0000`,
      };
      let current = request.base;
      for (const [index, member] of request.members.entries()) {
        if (!(await has(repo, member.head))) {
          const fetched = await git(repo, [
            'rev-parse',
            '--verify',
            '--quiet',
            `refs/hookbot/${id}/mr-${member.iid}^{commit}`,
          ]);
          return { kind: 'moved', index, ...(fetched.code === 0 ? { sha: fetched.stdout.trim() } : {}) };
        }
        const merged = await git(repo, [
          'merge-tree',
          '--write-tree',
          '-z',
          '--name-only',
          '--no-messages',
          current,
          member.head,
        ]);
        const [tree = '', ...rest] = merged.stdout.split('\0');
        if (merged.code === 1) return { kind: 'conflict', index, files: [...new Set(rest.filter(Boolean))] };
        if (merged.code !== 0) fail('merge-tree', merged);
        const commit = await git(
          repo,
          ['commit-tree', tree, '-p', current, '-p', member.head],
          member.message,
          env,
        );
        if (commit.code !== 0) fail('commit-tree', commit);
        current = commit.stdout.trim();
      }
      return { kind: 'built', sha: current };
    } finally {
      for (const ref of temp) await git(repo, ['update-ref', '-d', ref]);
    }
  }

  return {
    identity: deps.identity,
    buildCar: (request) => deps.withRepository(request.targetUrl, (repo) => buildCar(repo, request)),
    pushCars: (request) => {
      for (const car of request.cars) ownedBranch(car.branch);
      if (request.cars.length === 0) return Promise.resolve({ kind: 'pushed' as const });
      return deps.withRepository(request.targetUrl, async (repo) => {
        const now = await remoteHeads(
          repo,
          request.targetUrl,
          request.cars.map((c) => c.branch),
        );
        const moving = request.cars.filter((c) => now.get(c.branch) !== c.sha);
        if (moving.length === 0) return { kind: 'pushed' as const };
        return pushOutcome(
          await git(repo, [
            'push',
            '--porcelain',
            ...moving.map((c) => `--force-with-lease=refs/heads/${c.branch}:${now.get(c.branch) ?? ''}`),
            '--',
            request.targetUrl,
            ...moving.map((c) => `${c.sha}:refs/heads/${c.branch}`),
          ]),
        );
      });
    },
    land: (request) => {
      ownedBranch(request.carBranch);
      return deps.withRepository(request.targetUrl, async (repo): Promise<LandOutcome> => {
        const local = `refs/hookbot/${randomBytes(4).toString('hex')}/car`;
        let fetched = false;
        try {
          if (!(await has(repo, request.sha))) {
            fetched = true;
            const car = await fetchInto(repo, request.targetUrl, [
              `+refs/heads/${request.carBranch}:${local}`,
            ]);
            if (car) return { kind: 'refused', message: car.refused };
            if (!(await has(repo, request.sha))) return { kind: 'missing' };
          }
          return pushOutcome(
            await git(repo, [
              'push',
              '--porcelain',
              '--',
              request.targetUrl,
              `${request.sha}:refs/heads/${request.targetBranch}`,
            ]),
          );
        } finally {
          if (fetched) await git(repo, ['update-ref', '-d', local]);
        }
      });
    },
    listCars: (request) => {
      ownedBranch(request.prefix);
      return deps.withRepository(request.targetUrl, async (repo) => {
        const r = await git(repo, [
          'ls-remote',
          '--heads',
          '--',
          request.targetUrl,
          `refs/heads/${request.prefix}*`,
        ]);
        if (r.code !== 0) fail('ls-remote', r);
        const found = new Map<string, string>();
        for (const line of r.stdout.split('\n')) {
          const [sha, ref] = line.split('\t');
          if (sha && ref?.startsWith(`refs/heads/${request.prefix}`))
            found.set(ref.slice('refs/heads/'.length), sha);
        }
        return found;
      });
    },
    deleteCars: async (request) => {
      for (const car of request.cars) ownedBranch(car.branch);
      if (request.cars.length === 0) return;
      await deps.withRepository(request.targetUrl, async (repo) => {
        const now = await remoteHeads(
          repo,
          request.targetUrl,
          request.cars.map((c) => c.branch),
        );
        const going = request.cars.flatMap((c) => {
          const at = now.get(c.branch);
          return at !== undefined && (c.sha === undefined || c.sha === at) ? [{ branch: c.branch, at }] : [];
        });
        if (going.length === 0) return;
        await git(repo, [
          'push',
          '--porcelain',
          ...going.map((c) => `--force-with-lease=refs/heads/${c.branch}:${c.at}`),
          '--',
          request.targetUrl,
          ...going.map((c) => `:refs/heads/${c.branch}`),
        ]);
      });
    },
  };
}
