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
 * - **Push a car**: to `refs/heads/<prefix>...` only (`git.train_branch_prefix`, `hookbot/train/` by
 *   default; any other name is refused here), with a lease on what the branch held when it was read
 *   just before. A push that fails is told apart afterwards: a branch that blocks the name (git
 *   cannot create `hookbot/train/master/...` while a branch `hookbot/train` exists, nor a branch
 *   where one is a folder) is `blocked`, naming it; a lease someone moved is `moved`; anything else
 *   (the server or a hook refused) is `refused`. Before, every failure read as `moved`, and the
 *   driver rebuilt for ever (issue 36).
 * - **Land**: a plain push of the target branch to the car's commit, never forced: the server refuses
 *   when the target moved (it is then not a fast-forward), and the driver rebuilds. A landing that
 *   fails while the target is still where the driver left it is a refusal (no right to push the
 *   protected branch, a push rule), never a move: the driver stops and says it. The car may have
 *   been built by another replica (another cache): its commit is fetched from its branch first. Before
 *   that fetch, a push of a commit the cache lacked failed as `[remote rejected] (unpacker error)`,
 *   which read as the target having moved: the driver rebuilt every car with a new date, so each car
 *   was pushed again with another commit (the train-replicas reliability scenario found it).
 * - **Land with the next cars**: the landing, the next cars' branches and the landed cars' branch
 *   deletions in one `git push --atomic` (each car branch with a lease): all or nothing, so a push
 *   that cannot go changes nothing and the driver lands alone, as above.
 * - **Delete a car's branch**: only a train branch, and only while it holds the car's own commit: the
 *   commit the driver recorded for it, or, for a branch found by listing whose record is gone, a
 *   commit the train made (its identity, two parents, a car's message). A branch someone moved is
 *   left where it is, and said.
 */
import { randomBytes } from 'node:crypto';
import {
  DEFAULT_TRAIN_PREFIX,
  type BuildCarOutcome,
  type BuildCarRequest,
  type DeleteOutcome,
  type LandOutcome,
  type PushOutcome,
  type TrainGit,
  type TrainGitDeps,
} from './train-git-types.ts';

export type { TrainGit } from './train-git-types.ts';

/** The message of a car's merge commits (merge-train.ts makes them); how a listed branch is known for a car. */
const CAR_MESSAGE = /^Merge branch of !\d+ into .+ \(merge train [\w.-]+, car \d+\)\n?$/;

/**
 * The branches git would have to hold as folders (`a`, `a/b` for `a/b/c`) or that live inside
 * `branch` as a folder: either one makes `refs/heads/<branch>` impossible to create.
 */
function blockingCandidates(branch: string): string[] {
  const parts = branch.split('/');
  return [
    ...parts.slice(0, -1).map((_, i) => `refs/heads/${parts.slice(0, i + 1).join('/')}`),
    `refs/heads/${branch}/*`,
  ];
}

export function createTrainGit(deps: TrainGitDeps): TrainGit {
  const { git, fail, refusal } = deps;
  const prefix = deps.prefix ?? DEFAULT_TRAIN_PREFIX;

  function ownedBranch(branch: string): void {
    if (!branch.startsWith(prefix) || branch.includes('..') || /[\s:~^?*[\\]/.test(branch))
      throw new Error(`not a train branch of the bot's: ${JSON.stringify(branch)}`);
  }

  async function has(repo: string, sha: string): Promise<boolean> {
    return (await git(repo, ['cat-file', '-e', '--end-of-options', `${sha}^{commit}`])).code === 0;
  }

  /** Which of `shas` the cache has as commits, asked in one `cat-file --batch-check`. */
  async function haveAll(repo: string, shas: string[]): Promise<Set<string>> {
    const asked = await git(
      repo,
      ['cat-file', '--batch-check=%(objectname) %(objecttype)'],
      shas.map((sha) => `${sha}^{commit}`).join('\n') + '\n',
    );
    const found = new Set<string>();
    if (asked.code !== 0) return found;
    for (const line of asked.stdout.split('\n')) {
      const [sha, type] = line.split(' ');
      if (sha && type === 'commit') found.add(sha);
    }
    return found;
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

  /** What git said of a push it refused, in one line (the server's or a hook's words first). */
  function refusedLine(output: string): string {
    const said = refusal(output);
    if (said) return said;
    const line = output
      .split('\n')
      .map((l) => l.replace(/^remote:\s*/, '').trim())
      .find((l) => /rejected|error|denied|refused/i.test(l));
    return deps.redact(line ?? 'the push failed');
  }

  /** Branches of the remote that make one of `branches` impossible to create (a folder clash). */
  async function blockers(
    repo: string,
    url: string,
    branches: string[],
  ): Promise<Extract<PushOutcome, { kind: 'blocked' }> | undefined> {
    for (const branch of branches) {
      const r = await git(repo, ['ls-remote', '--heads', '--', url, ...blockingCandidates(branch)]);
      if (r.code !== 0) fail('ls-remote', r);
      for (const line of r.stdout.split('\n')) {
        const [sha, ref] = line.split('\t');
        if (!sha || !ref?.startsWith('refs/heads/')) continue;
        const name = ref.slice('refs/heads/'.length);
        if (branch.startsWith(`${name}/`) || name.startsWith(`${branch}/`))
          return { kind: 'blocked', ref: name, sha, branch };
      }
    }
    return undefined;
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

  /** The merge commits of `request` made from what the cache has, each on the one before. */
  async function mergeChain(
    repo: string,
    request: BuildCarRequest,
  ): Promise<BuildCarOutcome | { kind: 'lacking' }> {
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
      // A conflict answers 1 with the tree written; a commit it cannot find answers 1 too, with nothing.
      if (merged.code === 1 && /^[0-9a-f]{40,64}$/.test(tree))
        return { kind: 'conflict', index, files: [...new Set(rest.filter(Boolean))] };
      if (merged.code === 128 && /unrelated histories/i.test(merged.stderr))
        return { kind: 'unrelated', index };
      // Anything else than a clean merge or a conflict: a commit the cache does not have (or worse:
      // the full path below tells which, fetches it, and fails as it must).
      if (merged.code !== 0) return { kind: 'lacking' };
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
  }

  async function buildCar(repo: string, request: BuildCarRequest): Promise<BuildCarOutcome> {
    // Most often the cache has the base (the car ahead, just built) and every head (fetched ahead of
    // the build): the merges are made at once, with no process to ask first. Only when one of them is
    // lacking are they asked for, fetched and the merges made again (the same commits).
    const fast = await mergeChain(repo, request);
    if (fast.kind !== 'lacking') return fast;
    const id = randomBytes(4).toString('hex');
    const temp: string[] = [];
    try {
      // What the cache has of the base and the heads, asked in one process (most often all of it:
      // the base is the car ahead, just built, and the heads were fetched ahead of the build).
      const present = await haveAll(repo, [request.base, ...request.members.map((m) => m.head)]);
      if (!present.has(request.base) && !(await has(repo, request.base))) {
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
        if (!present.has(member.head)) {
          const local = `refs/hookbot/${id}/mr-${member.iid}`;
          temp.push(local);
          wanted.push(`+refs/merge-requests/${member.iid}/head:${local}`);
        }
      const heads = wanted.length > 0 ? await fetchInto(repo, request.targetUrl, wanted) : undefined;
      if (heads) return { kind: 'refused', message: heads.refused };
      for (const [index, member] of request.members.entries())
        if (!present.has(member.head) && !(await has(repo, member.head))) {
          const fetched = await git(repo, [
            'rev-parse',
            '--verify',
            '--quiet',
            `refs/hookbot/${id}/mr-${member.iid}^{commit}`,
          ]);
          return { kind: 'moved', index, ...(fetched.code === 0 ? { sha: fetched.stdout.trim() } : {}) };
        }
      const chain = await mergeChain(repo, request);
      if (chain.kind === 'lacking')
        return fail('merge-tree', {
          code: 128,
          stdout: '',
          stderr: 'a commit of the car is missing after its fetch',
        });
      return chain;
    } finally {
      for (const ref of temp) await git(repo, ['update-ref', '-d', ref]);
    }
  }

  /**
   * Whether `sha` (on `branch`) is a commit a train made: the train's identity as author and committer,
   * two parents, and a car's message. Fetched from the branch when the cache does not have it. A
   * commit written to look exactly like one (identity and message are free text) passes: deleting it
   * costs its maker a push, nothing of anyone else's.
   */
  async function madeByTrain(repo: string, url: string, branch: string, sha: string): Promise<boolean> {
    const local = `refs/hookbot/${randomBytes(4).toString('hex')}/listed`;
    let fetched = false;
    try {
      if (!(await has(repo, sha))) {
        fetched = true;
        if (await fetchInto(repo, url, [`+refs/heads/${branch}:${local}`])) return false;
        if (!(await has(repo, sha))) return false;
      }
      const r = await git(repo, ['cat-file', 'commit', sha]);
      if (r.code !== 0) return false;
      const [head = '', ...body] = r.stdout.split('\n\n');
      const lines = head.split('\n');
      const who = `${deps.identity.name} <${deps.identity.email}>`;
      const person = (kind: string) =>
        lines.find((l) => l.startsWith(`${kind} `))?.replace(/ \d+ [+-]\d{4}$/, '');
      return (
        lines.filter((l) => l.startsWith('parent ')).length === 2 &&
        person('author') === `author ${who}` &&
        person('committer') === `committer ${who}` &&
        CAR_MESSAGE.test(body.join('\n\n'))
      );
    } finally {
      if (fetched) await git(repo, ['update-ref', '-d', local]);
    }
  }

  async function fetchHeads(
    repo: string,
    request: { targetUrl: string; members: { iid: number; head?: string }[] },
  ): Promise<void> {
    // One process to ask which heads the cache has (`cat-file --batch-check`), one fetch for the rest.
    // A member without a head (not read yet) is fetched whatever its ref holds.
    const known = request.members.flatMap((m) => (m.head ? [m.head] : []));
    const present = known.length > 0 ? await haveAll(repo, known) : new Set<string>();
    const lacking = request.members.filter((m) => !m.head || !present.has(m.head));
    if (lacking.length === 0) return;
    const id = randomBytes(4).toString('hex');
    const refs = lacking.map((m) => `refs/hookbot/${id}/mr-${m.iid}`);
    try {
      await fetchInto(
        repo,
        request.targetUrl,
        lacking.map((m, i) => `+refs/merge-requests/${m.iid}/head:${refs[i]}`),
      ).catch(() => undefined);
    } finally {
      await git(repo, ['update-ref', '--stdin'], refs.map((ref) => `delete ${ref}`).join('\n') + '\n');
    }
  }

  return {
    identity: deps.identity,
    prefix,
    buildCar: (request) => deps.withRepository(request.targetUrl, (repo) => buildCar(repo, request)),
    fetchHeads: (request) =>
      request.members.length === 0
        ? Promise.resolve()
        : deps.withRepository(request.targetUrl, (repo) => fetchHeads(repo, request)),
    pushCars: (request) => {
      for (const car of request.cars) ownedBranch(car.branch);
      if (request.cars.length === 0) return Promise.resolve({ kind: 'pushed' as const });
      return deps.withRepository(request.targetUrl, async (repo) => {
        if (request.known) {
          // What the driver knows each branch holds: one push, no read first (refs that went stay so).
          const direct = await git(repo, [
            'push',
            '--porcelain',
            ...request.cars.map((c) => `--force-with-lease=refs/heads/${c.branch}:${c.was ?? ''}`),
            '--',
            request.targetUrl,
            ...request.cars.map((c) => `${c.sha}:refs/heads/${c.branch}`),
          ]);
          if (direct.code === 0) return { kind: 'pushed' as const };
        }
        const now = await remoteHeads(
          repo,
          request.targetUrl,
          request.cars.map((c) => c.branch),
        );
        const moving = request.cars.filter((c) => now.get(c.branch) !== c.sha);
        if (moving.length === 0) return { kind: 'pushed' as const };
        const run = await git(repo, [
          'push',
          '--porcelain',
          ...moving.map((c) => `--force-with-lease=refs/heads/${c.branch}:${now.get(c.branch) ?? ''}`),
          '--',
          request.targetUrl,
          ...moving.map((c) => `${c.sha}:refs/heads/${c.branch}`),
        ]);
        if (run.code === 0) return { kind: 'pushed' as const };
        // Told apart by what the remote holds now, not by git's words (a folder clash, a lease and a
        // hook's refusal all read "rejected").
        const blocked = await blockers(
          repo,
          request.targetUrl,
          moving.map((c) => c.branch),
        );
        if (blocked) return blocked;
        const after = await remoteHeads(
          repo,
          request.targetUrl,
          moving.map((c) => c.branch),
        );
        const moved = moving.some((c) => {
          const at = after.get(c.branch);
          return at !== now.get(c.branch) && at !== c.sha;
        });
        if (moved) return { kind: 'moved' as const };
        return { kind: 'refused' as const, message: refusedLine(`${run.stdout}\n${run.stderr}`) };
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
          const run = await git(repo, [
            'push',
            '--porcelain',
            '--',
            request.targetUrl,
            `${request.sha}:refs/heads/${request.targetBranch}`,
          ]);
          if (run.code === 0) return { kind: 'pushed' };
          // Moved, or refused? The target as the remote holds it now says (git's words do not: both
          // read "rejected").
          const at = (await remoteHeads(repo, request.targetUrl, [request.targetBranch])).get(
            request.targetBranch,
          );
          if (at === request.sha) return { kind: 'pushed' };
          if (at !== request.base) return { kind: 'moved', ...(at ? { sha: at } : {}) };
          return { kind: 'refused', message: refusedLine(`${run.stdout}\n${run.stderr}`) };
        } finally {
          if (fetched) await git(repo, ['update-ref', '-d', local]);
        }
      });
    },
    landWithCars: (request) => {
      for (const car of [...request.cars, ...request.landed]) ownedBranch(car.branch);
      const creating = new Set(request.cars.map((c) => c.branch));
      const deleting = request.landed.filter((c) => !creating.has(c.branch));
      // A commit the cache lacks fails the push before it is sent (false: `land` fetches it).
      return deps.withRepository(request.targetUrl, async (repo) => {
        const run = await git(repo, [
          'push',
          '--atomic',
          '--porcelain',
          ...request.cars.map((c) => `--force-with-lease=refs/heads/${c.branch}:${c.was ?? ''}`),
          ...deleting.map((c) => `--force-with-lease=refs/heads/${c.branch}:${c.sha}`),
          '--',
          request.targetUrl,
          `${request.sha}:refs/heads/${request.targetBranch}`,
          ...request.cars.map((c) => `${c.sha}:refs/heads/${c.branch}`),
          ...deleting.map((c) => `:refs/heads/${c.branch}`),
        ]);
        return run.code === 0;
      });
    },
    findBlocker: (request) => {
      for (const branch of request.branches) ownedBranch(branch);
      return deps.withRepository(request.targetUrl, (repo) =>
        blockers(repo, request.targetUrl, request.branches),
      );
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
      const outcome: DeleteOutcome = { deleted: [], left: [] };
      if (request.cars.length === 0) return outcome;
      return deps.withRepository(request.targetUrl, async (repo) => {
        // Every commit known (the driver's records): one push, each branch with a lease on its
        // commit; only when one of them did not go is the remote read to tell which and why.
        const known = request.cars.flatMap((c) => (c.sha ? [{ branch: c.branch, at: c.sha }] : []));
        if (known.length === request.cars.length) {
          const direct = await git(repo, [
            'push',
            '--porcelain',
            ...known.map((c) => `--force-with-lease=refs/heads/${c.branch}:${c.at}`),
            '--',
            request.targetUrl,
            ...known.map((c) => `:refs/heads/${c.branch}`),
          ]);
          if (direct.code === 0) return { deleted: known.map((c) => c.branch), left: [] };
        }
        const now = await remoteHeads(
          repo,
          request.targetUrl,
          request.cars.map((c) => c.branch),
        );
        const going: { branch: string; at: string }[] = [];
        for (const c of request.cars) {
          const at = now.get(c.branch);
          if (at === undefined) continue;
          if (c.sha !== undefined ? c.sha === at : await madeByTrain(repo, request.targetUrl, c.branch, at))
            going.push({ branch: c.branch, at });
          else
            outcome.left.push({
              branch: c.branch,
              sha: at,
              why:
                c.sha !== undefined
                  ? `it holds ${at.slice(0, 7)}, not the car's commit ${c.sha.slice(0, 7)}: someone pushed there`
                  : `it holds ${at.slice(0, 7)}, which the train did not make: someone pushed there`,
            });
        }
        if (going.length === 0) return outcome;
        const run = await git(repo, [
          'push',
          '--porcelain',
          ...going.map((c) => `--force-with-lease=refs/heads/${c.branch}:${c.at}`),
          '--',
          request.targetUrl,
          ...going.map((c) => `:refs/heads/${c.branch}`),
        ]);
        // A lease that failed leaves that branch (someone pushed in between); the others went.
        const after =
          run.code === 0
            ? new Map<string, string>()
            : await remoteHeads(
                repo,
                request.targetUrl,
                going.map((c) => c.branch),
              );
        for (const c of going)
          if (!after.has(c.branch)) outcome.deleted.push(c.branch);
          else if (after.get(c.branch) !== c.at)
            outcome.left.push({
              branch: c.branch,
              sha: after.get(c.branch)!,
              why: 'someone pushed there meanwhile',
            });
        return outcome;
      });
    },
  };
}
