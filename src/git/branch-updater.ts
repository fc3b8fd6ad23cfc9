/**
 * Brings a merge request's source branch up to its target's head without a working tree, as the
 * v3-era bots did (the v3 API has no rebase or update-branch call): fetch both branches into a bare
 * cache repository, merge them with `git merge-tree --write-tree` (git >= 2.38), make the two-parent
 * merge commit with `git commit-tree`, and push it with `--force-with-lease=<source>:<expected sha>`,
 * so a push someone else made meanwhile is never overwritten.
 *
 * Outcomes: `up-to-date` (the target's head is already in the source), `updated` (the pushed sha),
 * `conflict` (the files), `moved` (the source is not at the sha it was expected at, before or at the
 * push), `missing` (a branch does not exist), `refused` (authentication, permission, a hook).
 *
 * Credentials (git.ts of config): HTTPS with a username and password or personal access token, sent
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
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

export type GitCredentials =
  | { kind: 'https'; username: string; password: string }
  | { kind: 'ssh'; keyFile: string; knownHostsFile?: string };

export interface GitIdentity {
  name: string;
  email: string;
}

export interface BranchUpdaterOptions {
  /** Where the bare cache repositories live (one per repository URL). */
  cacheDir: string;
  credentials?: GitCredentials;
  /** Author and committer of the merge commits. */
  identity: GitIdentity;
  /** One git command may take this long. */
  timeoutMs?: number;
  /** Told each git command (redacted) and its result. */
  log?: (line: string) => void;
}

export interface UpdateRequest {
  /** The target project's clone URL (`http_url_to_repo` or `ssh_url_to_repo`). */
  targetUrl: string;
  /** The source project's clone URL when it is a fork; the target's otherwise. */
  sourceUrl?: string;
  sourceBranch: string;
  targetBranch: string;
  /** The sha the source branch must be at (the MR's `sha` as last read); `moved` otherwise. */
  expectedSourceSha?: string;
  /** The merge commit's message; `Merge branch '<target>' into <source>` otherwise. */
  message?: string;
}

export type UpdateOutcome =
  | { kind: 'up-to-date'; sha: string; targetSha: string }
  | { kind: 'updated'; sha: string; previousSha: string; targetSha: string }
  | { kind: 'conflict'; files: string[]; sourceSha: string; targetSha: string }
  | { kind: 'moved'; sha?: string }
  | { kind: 'missing'; branch: 'source' | 'target' }
  | { kind: 'refused'; message: string };

export interface BranchUpdater {
  update(request: UpdateRequest): Promise<UpdateOutcome>;
}

interface GitRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** A git command that failed for a reason other than the outcomes above (redacted message). */
export class GitCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GitCommandError';
  }
}

/**
 * Removes the credentials from a text: the password, its Basic header form and `user:pass@` in URLs;
 * the SSH key file's path as given and as resolved (ssh names it when it cannot use it).
 */
export function redactor(credentials: GitCredentials | undefined): (text: string) => string {
  const secrets: string[] = [];
  const paths: string[] = [];
  if (credentials?.kind === 'https' && credentials.password) {
    secrets.push(credentials.password, encodeURIComponent(credentials.password));
    secrets.push(basic(credentials));
  }
  if (credentials?.kind === 'ssh' && credentials.keyFile)
    paths.push(credentials.keyFile, path.resolve(credentials.keyFile));
  const longestFirst = (list: string[]) =>
    list.filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
  const sortedSecrets = longestFirst(secrets);
  const sortedPaths = longestFirst(paths);
  return (text) => {
    let out = text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"']+:)[^\s/@"']+@/gi, '$1[REDACTED]@');
    for (const secret of sortedSecrets) out = out.split(secret).join('[REDACTED]');
    for (const file of sortedPaths) out = out.split(file).join('[key file]');
    return out.replace(/(Authorization:\s*Basic\s+)\S+/gi, '$1[REDACTED]');
  };
}

/**
 * What ssh says when it will not talk to the server or cannot use the key, as one plain sentence (ssh's
 * own warning is a banner of a dozen lines); undefined for anything else.
 */
export function sshProblem(stderr: string): string | undefined {
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED/.test(stderr))
    return "the server's SSH host key is not the one the known_hosts file holds for it (git.ssh_known_hosts_file): the connection may be intercepted, or the server's key changed (Host key verification failed)";
  if (/host key is known for|Host key verification failed/i.test(stderr))
    return "the server's SSH host key is not in the known_hosts file (git.ssh_known_hosts_file): add the server's key there (Host key verification failed)";
  if (/UNPROTECTED PRIVATE KEY FILE/.test(stderr))
    return 'the SSH key file (git.ssh_key_file) is readable by other users: ssh refuses it (chmod 600)';
  if (/Load key .*: invalid format/i.test(stderr))
    return 'the SSH key file (git.ssh_key_file) is not a private key';
  return undefined;
}

function basic(credentials: { username: string; password: string }): string {
  return Buffer.from(`${credentials.username}:${credentials.password}`, 'utf8').toString('base64');
}

export function createBranchUpdater(options: BranchUpdaterOptions): BranchUpdater {
  const redact = redactor(options.credentials);
  const log = (line: string) => options.log?.(redact(line));
  const timeout = options.timeoutMs ?? 120_000;

  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: options.cacheDir,
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'true',
    SSH_ASKPASS: 'true',
    GIT_AUTHOR_NAME: options.identity.name,
    GIT_AUTHOR_EMAIL: options.identity.email,
    GIT_COMMITTER_NAME: options.identity.name,
    GIT_COMMITTER_EMAIL: options.identity.email,
  };
  const config: [string, string][] = [
    ['gc.auto', '0'],
    ['maintenance.auto', 'false'],
    ['credential.helper', ''],
  ];
  const credentials = options.credentials;
  if (credentials?.kind === 'https')
    config.push(['http.extraHeader', `Authorization: Basic ${basic(credentials)}`]);
  if (credentials?.kind === 'ssh') {
    // Absolute paths: git runs ssh in the cache repository (git -C), not where hookbot was started.
    const known = credentials.knownHostsFile
      ? ` -o UserKnownHostsFile=${shellQuote(path.resolve(credentials.knownHostsFile))}`
      : '';
    env.GIT_SSH_COMMAND = `ssh -i ${shellQuote(path.resolve(credentials.keyFile))} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes${known}`;
  }
  env.GIT_CONFIG_COUNT = String(config.length);
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });

  function git(repo: string, args: string[], input?: string): Promise<GitRun> {
    return new Promise((resolve) => {
      const child = execFile(
        'git',
        ['-C', repo, ...args],
        { env, timeout, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          log(`git ${args[0] ?? ''}: exit ${code}${code === 0 ? '' : `: ${stderr.trim()}`}`);
          resolve({ code, stdout, stderr });
        },
      );
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(input ?? '');
    });
  }

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

  // One update per cache repository at a time: the fetched refs are shared.
  const locks = new Map<string, Promise<unknown>>();
  function exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = locks.get(key) ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.catch(() => undefined);
    locks.set(key, tail);
    void tail.then(() => {
      if (locks.get(key) === tail) locks.delete(key);
    });
    return result;
  }

  async function cacheRepo(url: string): Promise<string> {
    const name = createHash('sha256').update(url).digest('hex').slice(0, 16);
    const repo = path.join(options.cacheDir, `${name}.git`);
    try {
      if ((await stat(repo)).isDirectory()) return repo;
    } catch {
      // made below
    }
    await mkdir(options.cacheDir, { recursive: true });
    const r = await git(options.cacheDir, ['init', '--quiet', '--bare', repo]);
    if (r.code !== 0) fail('init', r);
    return repo;
  }

  /** Fetches one branch into `local`; undefined when the branch does not exist. */
  async function fetchBranch(repo: string, url: string, branch: string, local: string) {
    const r = await git(repo, [
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
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
    const sha = (await git(repo, ['rev-parse', '--verify', local])).stdout.trim();
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

  async function update(request: UpdateRequest): Promise<UpdateOutcome> {
    await checkKeyFile();
    const sourceUrl = request.sourceUrl ?? request.targetUrl;
    const repo = await cacheRepo(request.targetUrl);
    const id = randomBytes(4).toString('hex');
    const targetRef = `refs/hookbot/${id}/target`;
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

      const message =
        request.message ?? `Merge branch '${request.targetBranch}' into ${request.sourceBranch}\n`;
      const commit = await git(repo, ['commit-tree', tree, '-p', sourceSha, '-p', targetSha], message);
      if (commit.code !== 0) fail('commit-tree', commit);
      const sha = commit.stdout.trim();

      const push = await git(repo, [
        'push',
        '--porcelain',
        `--force-with-lease=refs/heads/${request.sourceBranch}:${sourceSha}`,
        sourceUrl,
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
      await git(repo, ['update-ref', '-d', targetRef]);
      await git(repo, ['update-ref', '-d', sourceRef]);
    }
  }

  return {
    update: (request) => exclusive(request.targetUrl, () => update(request)),
  };
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
