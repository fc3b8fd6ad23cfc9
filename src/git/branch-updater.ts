/**
 * Brings a merge request's source branch up to its target's head without a working tree, as the
 * v3-era bots did (the v3 API has no rebase or update-branch call): fetch both branches into a bare
 * cache repository (cache.ts), merge them with `git merge-tree --write-tree` (git >= 2.38), make the
 * two-parent merge commit with `git commit-tree`, and push it with
 * `--force-with-lease=refs/heads/<source>:<expected sha>`, so a push someone else made meanwhile is
 * never overwritten.
 *
 * Outcomes: `up-to-date` (the target's head is already in the source), `updated` (the pushed sha),
 * `conflict` (the files), `moved` (the source is not at the sha it was expected at, before or at the
 * push), `missing` (a branch does not exist), `refused` (authentication, permission, a hook),
 * `not-pushed` (the source is behind, and the push is not the bot's to make: a fork's branch, or
 * `beforePush` said no).
 *
 * Refs are named in full everywhere: the branches as `refs/heads/<name>` on both sides of every
 * refspec and lease (a tag named like a branch, e.g. `master`, is never read or written), local refs
 * as `refs/hookbot/...`, commits by sha. Every repository URL comes after `--`, so a URL that starts
 * with `-` is a (bad) repository, never an option (`--upload-pack=<command>` would run a command).
 *
 * The updater pushes only to the repository the target was fetched from (the merge request's own
 * project): a source branch fetched from another URL (a fork) is tested when up to date, never pushed.
 *
 * Credentials (git.* of config): HTTPS with a username and password or personal access token, sent
 * as a Basic `Authorization` header through git's `http.extraHeader` in the child's environment (never
 * in a URL, an argument or a file); or an SSH key file. Every text that leaves this module (errors,
 * log lines) goes through `redact`, which removes the password, its Basic form and URL credentials,
 * and the key file's path (texts may end up in a merge request comment).
 *
 * SSH always checks the server's host key strictly (`StrictHostKeyChecking=yes`): against the
 * known_hosts file given, or else ssh's own (`~/.ssh/known_hosts` of the user hookbot runs as,
 * `/etc/ssh/ssh_known_hosts`). An unknown or changed host key is never accepted, not even on first use:
 * a bot that pushes unattended cannot tell a new server from an intercepted connection, and in a
 * container "first use" is every start. That failure is a GitCommandError saying which of the two it
 * was, not a refusal: the merge requests stay queued until the known_hosts file is put right.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { createGitCache } from './cache.ts';
import { createTrainGit, type TrainGit } from './train-git.ts';
import {
  createGitRunner,
  GitCommandError,
  redactor,
  sshProblem,
  type GitCredentials,
  type GitIdentity,
  type GitRun,
} from './git-process.ts';

export { GitCommandError, redactor, sshProblem, type GitCredentials, type GitIdentity };

export interface BranchUpdaterOptions {
  /**
   * Where the bare cache repositories live (one per repository URL). A relative path is taken from
   * the folder hookbot runs in, once, here (the configuration resolves it already).
   */
  cacheDir: string;
  credentials?: GitCredentials;
  /** Author and committer of the merge commits. */
  identity: GitIdentity;
  /** One git command may take this long. */
  timeoutMs?: number;
  /** At most this many cache repositories (default 20): the least recently used go first. */
  maxRepositories?: number;
  /** A cache repository is pruned after this many updates (default 20). */
  gcEveryUpdates?: number;
  /** Pruning drops objects no ref has held for this long (default 1 h; 0: at once). */
  pruneAfterMs?: number;
  /** Told each git command (redacted) and its result. */
  log?: (line: string) => void;
  /** The folder of the merge trains' branches (`git.train_branch_prefix`; default `hookbot/train/`). */
  trainPrefix?: string;
}

export interface UpdateRequest {
  /** The target project's clone URL (`http_url_to_repo` or `ssh_url_to_repo`). */
  targetUrl: string;
  /** The source project's clone URL when it is a fork (fetched, never pushed to); the target's otherwise. */
  sourceUrl?: string;
  sourceBranch: string;
  targetBranch: string;
  /** The sha the source branch must be at (the MR's `sha` as last read); `moved` otherwise. */
  expectedSourceSha?: string;
  /** The merge commit's message; `Merge branch '<target>' into <source>` otherwise. */
  message?: string;
  /**
   * Asked right before the push (after the fetch and the merge): a reason not to push (the branch
   * became protected meanwhile...) gives `not-pushed` with that reason.
   */
  beforePush?: () => Promise<string | undefined>;
}

export type UpdateOutcome =
  | { kind: 'up-to-date'; sha: string; targetSha: string }
  | { kind: 'updated'; sha: string; previousSha: string; targetSha: string }
  | { kind: 'conflict'; files: string[]; sourceSha: string; targetSha: string }
  | { kind: 'moved'; sha?: string }
  | { kind: 'missing'; branch: 'source' | 'target' }
  | { kind: 'refused'; message: string }
  | { kind: 'not-pushed'; reason: string; fork: boolean; sourceSha: string; targetSha: string };

export interface BranchUpdater {
  update(request: UpdateRequest): Promise<UpdateOutcome>;
  /** Merge trains: build a car, push it to its bot-owned branch, land it, delete its branch (train-git.ts). */
  train: TrainGit;
  /** Resolves once every update and cache pruning started so far is over. */
  idle(): Promise<void>;
}

/** The reason the updater gives for a fork's branch that is behind its target. */
export const FORK_NOT_PUSHED =
  'the source branch is in another repository (a fork): the bot never pushes there';

/**
 * A branch name as git and the server accept it, checked before it goes into a refspec: no `:`
 * (which would split the refspec), no whitespace or control characters, none of `~^?*[\`, no `..`,
 * no `@{`, no leading `-` or `/`, no trailing `/`, `.` or `.lock`.
 */
function validBranch(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 1024 &&
    // eslint-disable-next-line no-control-regex
    !/[\x00-\x20\x7f:~^?*[\\]|\.\.|@\{|\/\/|\/\.|^[-/.]|[/.]$|\.lock$/.test(name) &&
    name !== '@'
  );
}

export function createBranchUpdater(options: BranchUpdaterOptions): BranchUpdater {
  const redact = redactor(options.credentials);
  const log = (line: string) => options.log?.(redact(line));
  // Resolved once: git runs with `-C <repository>`, where a relative path would mean something else.
  const cacheDir = path.resolve(options.cacheDir);
  const credentials = options.credentials;
  const git = createGitRunner({
    home: cacheDir,
    credentials,
    identity: options.identity,
    timeoutMs: options.timeoutMs ?? 120_000,
    log,
  });
  const cache = createGitCache({
    dir: cacheDir,
    maxRepositories: options.maxRepositories ?? 20,
    gcEveryUpdates: options.gcEveryUpdates ?? 20,
    pruneAfterMs: options.pruneAfterMs ?? 3_600_000,
    git,
    log,
  });

  function fail(what: string, r: GitRun): never {
    const ssh = sshProblem(r.stderr);
    throw new GitCommandError(redact(`git ${what} failed (exit ${r.code}): ${ssh ?? r.stderr.trim()}`));
  }

  /** Authentication, permission, a hook's refusal: what retrying with the same credentials cannot fix. */
  function refusal(stderr: string): string | undefined {
    const line = stderr
      .split('\n')
      .map((l) => l.replace(/^remote:\s*/, '').trim())
      .find((l) =>
        /Authentication failed|could not read Username|401|403|denied|not allowed|pre-receive hook declined|Permission denied/i.test(
          l,
        ),
      );
    return line === undefined ? undefined : redact(line);
  }

  /** Fetches one branch (`refs/heads/<branch>`, never a tag) into `local`; which may not exist. */
  async function fetchBranch(repo: string, url: string, branch: string, local: string) {
    const r = await git(repo, [
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
      '--',
      url,
      `+refs/heads/${branch}:${local}`,
    ]);
    if (r.code !== 0) {
      if (/couldn't find remote ref/i.test(r.stderr)) return { missing: true as const };
      if (sshProblem(r.stderr)) fail('fetch', r);
      const refused = refusal(r.stderr);
      if (refused) return { refused };
      fail('fetch', r);
    }
    const sha = (
      await git(repo, ['rev-parse', '--verify', '--end-of-options', `${local}^{commit}`])
    ).stdout.trim();
    return { sha };
  }

  /** ssh says nothing of a key file it cannot read (it just offers no key): say it here. */
  async function checkKeyFile(): Promise<void> {
    if (credentials?.kind !== 'ssh') return;
    try {
      await access(path.resolve(credentials.keyFile), constants.R_OK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new GitCommandError(`the SSH key file (git.ssh_key_file) cannot be read (${code})`);
    }
  }

  async function update(repo: string, request: UpdateRequest): Promise<UpdateOutcome> {
    const sourceUrl = request.sourceUrl ?? request.targetUrl;
    const fork = sourceUrl !== request.targetUrl;
    const id = randomBytes(4).toString('hex');
    const targetRef = cache.keep(repo, request.targetBranch);
    const sourceRef = `refs/hookbot/${id}/source`;
    try {
      const target = await fetchBranch(repo, request.targetUrl, request.targetBranch, targetRef);
      if ('missing' in target) return { kind: 'missing', branch: 'target' };
      if ('refused' in target) return { kind: 'refused', message: target.refused ?? 'refused' };
      const source = await fetchBranch(repo, sourceUrl, request.sourceBranch, sourceRef);
      if ('missing' in source) return { kind: 'missing', branch: 'source' };
      if ('refused' in source) return { kind: 'refused', message: source.refused ?? 'refused' };
      const sourceSha = source.sha;
      const targetSha = target.sha;
      if (request.expectedSourceSha && request.expectedSourceSha !== sourceSha)
        return { kind: 'moved', sha: sourceSha };

      const ancestor = await git(repo, ['merge-base', '--is-ancestor', targetSha, sourceSha]);
      if (ancestor.code === 0) return { kind: 'up-to-date', sha: sourceSha, targetSha };
      if (ancestor.code !== 1) fail('merge-base', ancestor);

      const merged = await git(repo, [
        'merge-tree',
        '--write-tree',
        '-z',
        '--name-only',
        '--no-messages',
        sourceSha,
        targetSha,
      ]);
      const [tree = '', ...rest] = merged.stdout.split('\0');
      if (merged.code === 1)
        return { kind: 'conflict', files: [...new Set(rest.filter(Boolean))], sourceSha, targetSha };
      if (merged.code !== 0) fail('merge-tree', merged);

      // Behind, and the push is not the bot's to make.
      if (fork) return { kind: 'not-pushed', reason: FORK_NOT_PUSHED, fork, sourceSha, targetSha };
      const no = await request.beforePush?.();
      if (no !== undefined) return { kind: 'not-pushed', reason: no, fork, sourceSha, targetSha };

      const message =
        request.message ?? `Merge branch '${request.targetBranch}' into ${request.sourceBranch}\n`;
      const commit = await git(repo, ['commit-tree', tree, '-p', sourceSha, '-p', targetSha], message);
      if (commit.code !== 0) fail('commit-tree', commit);
      const sha = commit.stdout.trim();

      const push = await git(repo, [
        'push',
        '--porcelain',
        `--force-with-lease=refs/heads/${request.sourceBranch}:${sourceSha}`,
        '--',
        request.targetUrl,
        `${sha}:refs/heads/${request.sourceBranch}`,
      ]);
      if (push.code === 0) return { kind: 'updated', sha, previousSha: sourceSha, targetSha };
      const output = `${push.stdout}\n${push.stderr}`;
      // The lease failed: seen by the client against the refs it was shown (`stale info`), or by the
      // server when the branch moved between that advertisement and the push (`cannot lock ref`).
      if (/stale info|fetch first|non-fast-forward|cannot lock ref|failed to update ref/i.test(output))
        return { kind: 'moved' };
      if (sshProblem(output)) fail('push', push);
      const refused = refusal(output);
      if (refused) return { kind: 'refused', message: refused };
      fail('push', push);
    } finally {
      await git(repo, ['update-ref', '-d', sourceRef]);
    }
  }

  return {
    async update(request) {
      for (const branch of [request.sourceBranch, request.targetBranch])
        if (!validBranch(branch))
          throw new GitCommandError(`not a branch name git accepts: ${JSON.stringify(branch)}`);
      await checkKeyFile();
      return cache.withRepository(request.targetUrl, (repo) => update(repo, request));
    },
    train: createTrainGit({
      git,
      identity: options.identity,
      withRepository: async (url, fn) => {
        await checkKeyFile();
        return cache.withRepository(url, fn);
      },
      refusal,
      fail,
      redact,
      ...(options.trainPrefix !== undefined ? { prefix: options.trainPrefix } : {}),
    }),
    idle: () => cache.idle(),
  };
}
