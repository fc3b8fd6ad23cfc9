/**
 * How the bot runs git: a child process with a clean environment (no system or global config, no
 * prompt, no credential helper), the credentials given through that environment only, a umask of
 * 077 (every file and folder git writes is the bot user's alone: 0600 and 0700), and every text that
 * leaves it redacted.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';

export type GitCredentials =
  | { kind: 'https'; username: string; password: string }
  | { kind: 'ssh'; keyFile: string; knownHostsFile?: string };

export interface GitIdentity {
  name: string;
  email: string;
}

export interface GitRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `git -C <repo> <args>`, answering its exit code and output (never throws). `env` adds to the
 * clean environment (a train car's fixed dates and identity: GIT_AUTHOR_DATE...).
 */
export type RunGit = (
  repo: string,
  args: string[],
  input?: string,
  env?: Record<string, string>,
) => Promise<GitRun>;

/** A git command that failed for a reason other than the updater's outcomes (redacted message). */
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

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * git runs under `sh -c 'umask 077 && exec git "$@"'`: Node cannot set a child's umask, and the
 * bot's own umask (usually 022) would leave the cache's objects and refs readable by every user of
 * the machine. `exec` replaces the shell, so the timeout's signal reaches git itself. The arguments
 * are passed as the shell's positional parameters, never parsed by it.
 */
const UMASK_077 = 'umask 077 && exec git "$@"';

export function createGitRunner(options: {
  /** HOME of the git processes (an absolute folder of the bot's: the cache folder). */
  home: string;
  credentials?: GitCredentials | undefined;
  identity: GitIdentity;
  timeoutMs: number;
  log: (line: string) => void;
}): RunGit {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: options.home,
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
  // No automatic gc or maintenance in the middle of an update: the cache is pruned by its own
  // maintenance (cache.ts), between updates. `core.sharedRepository` is never set: the umask decides.
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

  return (repo, args, input, extra) =>
    new Promise((resolve) => {
      const child = execFile(
        'sh',
        ['-c', UMASK_077, 'git', '-C', repo, ...args],
        { env: extra ? { ...env, ...extra } : env, timeout: options.timeoutMs, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          options.log(`git ${args[0] ?? ''}: exit ${code}${code === 0 ? '' : `: ${stderr.trim()}`}`);
          resolve({ code, stdout, stderr });
        },
      );
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(input ?? '');
    });
}
