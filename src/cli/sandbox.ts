/**
 * `hookbot sandbox`: runs the local simulator of the v3 server until SIGINT or SIGTERM. It prints the
 * API URL once it accepts requests, the administrator's token and, with `--seed demo`, the demo
 * users' tokens, so a person (or a test) can start talking to it at once; with `--ssh-port`, the SSH
 * port and the known_hosts line that trusts it; with `--ci`, what the simulated CI does.
 *
 * The administrator's token is never taken from the command line: every user of the machine reads
 * any process's arguments (`ps`, /proc/<pid>/cmdline), a simulated CI's build included. It comes from
 * the file `--admin-token-file` names (`/dev/stdin` reads it from a pipe); `--admin-token` is
 * refused, saying so.
 */
import { readFile, stat } from 'node:fs/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { CliIo, RegisterCommand } from './command.ts';
import { listenProblem } from './listen-problem.ts';
import { watchSignals } from './signals.ts';

interface SandboxCommandOptions {
  port: number;
  host: string;
  /** Refused: see the file's comment. */
  adminToken?: string;
  adminTokenFile?: string;
  data?: string;
  seed: 'demo' | 'empty';
  sshPort?: number;
  ci?: string;
  ciDuration?: number;
  ciName?: string;
  ciParallel?: number;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw new InvalidArgumentError('a port is a number from 0 to 65535.');
  return port;
}

/** A whole number of milliseconds, at most a day (a simulated build is short). */
function parseMilliseconds(value: string): number {
  const ms = Number(value);
  if (!/^\d+$/.test(value) || ms > 86_400_000)
    throw new InvalidArgumentError('a duration in milliseconds: a whole number from 0 to 86400000.');
  return ms;
}

function parseParallel(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 64) throw new InvalidArgumentError('a whole number from 1 to 64.');
  return n;
}

/** The CI's status name: what a rule's `statuses` names, so no surrounding spaces and not empty. */
function parseStatusName(value: string): string {
  if (value.trim() === '' || value !== value.trim() || value.length > 255)
    throw new InvalidArgumentError(
      'a status name such as ci/test: not empty, no spaces around it, 255 characters at most.',
    );
  return value;
}

/** The administrator's token from `--admin-token-file`; undefined for a random one. Throws a sentence saying what to change. */
async function adminTokenOf(options: SandboxCommandOptions, io: CliIo): Promise<string | undefined> {
  if (options.adminToken !== undefined)
    throw new Error(
      "--admin-token is no longer taken: every user of this machine can read a program's command line (ps, /proc/<pid>/cmdline), a simulated CI build too. Put the token in a file only you may read and give --admin-token-file FILE (or pipe it: --admin-token-file /dev/stdin)",
    );
  const file = options.adminTokenFile;
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`--admin-token-file ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const token = text.trim();
  if (token === '' || /\s/.test(token))
    throw new Error(`--admin-token-file ${file} must hold one token on one line`);
  const info = await stat(file);
  if (info.isFile() && (info.mode & 0o077) !== 0)
    io.err(`hookbot sandbox: warning: ${file} can be read by other users: chmod 600 it\n`);
  return token;
}

async function runSandbox(
  options: SandboxCommandOptions,
  io: CliIo,
  adminToken: string | undefined,
): Promise<void> {
  // Loaded here so that `hookbot --help` does not load the server.
  const { startSandbox, DEMO_TOKENS } = await import('../sandbox/index.ts');
  // Listen for the signals before starting, so a stop that arrives during startup is not lost.
  const signals = watchSignals();
  const sandbox = await startSandbox({
    port: options.port,
    host: options.host,
    ...(adminToken !== undefined ? { adminToken } : {}),
    dataFile: options.data,
    seed: options.seed,
    ...(options.sshPort !== undefined ? { sshPort: options.sshPort } : {}),
    ...(options.ci !== undefined
      ? {
          ci: {
            script: options.ci,
            ...(options.ciDuration !== undefined ? { durationMs: options.ciDuration } : {}),
            ...(options.ciName !== undefined ? { name: options.ciName } : {}),
            ...(options.ciParallel !== undefined ? { parallel: options.ciParallel } : {}),
          },
        }
      : {}),
    log: (line) => io.out(`${line}\n`),
  }).catch((error: unknown) => {
    signals.release();
    const problem = listenProblem(error, 'the sandbox', '--port');
    throw problem ? new Error(problem) : error;
  });
  const lines = [
    `hookbot sandbox: serving ${sandbox.apiUrl}`,
    `  root (administrator) token: ${sandbox.adminToken}`,
  ];
  if (options.seed === 'demo') {
    // A data file seeded earlier keeps its users: show whichever demo users it holds.
    for (const name of Object.keys(DEMO_TOKENS)) {
      const user = sandbox.ctx.db.data.users.find((u) => u.username === name);
      if (user) lines.push(`  ${name} token: ${user.private_token}`);
    }
  }
  if (sandbox.ssh)
    lines.push(
      `  git over SSH on port ${sandbox.ssh.port}, user git, keys registered through the API`,
      `  known_hosts line: ${sandbox.ssh.knownHostsLine}`,
    );
  if (sandbox.ci)
    lines.push(
      `  simulated CI: every pushed commit gets status ${sandbox.ci.name}, posted by the user sandbox-ci (an administrator)`,
      `    from \`sh -c ${JSON.stringify(options.ci)}\` run in a checkout of it (exit 0: success)`,
    );
  if (options.data) lines.push(`  state saved in ${options.data}`);
  lines.push('Press Ctrl+C to stop.');
  io.out(`${lines.join('\n')}\n`);
  const signal = await signals.stopped;
  try {
    await sandbox.close();
  } finally {
    signals.release();
  }
  io.out(`hookbot sandbox: stopped (${signal})\n`);
}

export const registerSandboxCommand: RegisterCommand = (program, io) => {
  program
    .command('sandbox')
    .description('Run the local simulator of the v3 server (the sandbox) until stopped.')
    .option('--port <port>', 'port to listen on (0 picks a free one)', parsePort, 8929)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--ssh-port <port>',
      'also serve git over SSH on this port (0 picks a free one); off when not given',
      parsePort,
    )
    .option(
      '--admin-token-file <file>',
      "a file holding the administrator's (root) private token, one line (never on the command line); random when not given",
    )
    .addOption(new Option('--admin-token <token>').hideHelp())
    .option('--data <file>', 'keep the state in this JSON file (repositories beside it); in memory otherwise')
    .addOption(
      new Option('--seed <content>', 'what a new sandbox starts with')
        .choices(['demo', 'empty'])
        .default('empty'),
    )
    .option(
      '--ci <script>',
      'run a simulated CI: each pushed commit gets pending, then success or failed by this shell command run in a checkout of it',
    )
    .option(
      '--ci-duration <ms>',
      'how long each simulated build takes at least, checkout and script included (default 1000)',
      parseMilliseconds,
    )
    .option(
      '--ci-name <name>',
      'the status name the simulated CI posts (default ci/sandbox)',
      parseStatusName,
    )
    .option('--ci-parallel <n>', 'simulated builds at once; the others wait (default 4)', parseParallel)
    .action(async (options: SandboxCommandOptions, command: Command) => {
      const orphans = (['ciDuration', 'ciName', 'ciParallel'] as const).filter(
        (k) => options[k] !== undefined,
      );
      if (orphans.length > 0 && options.ci === undefined)
        command.error(
          `error: ${orphans.map((k) => `--${k.replace('ci', 'ci-').toLowerCase()}`).join(', ')} set the simulated CI: give --ci <script> too`,
        );
      if (options.ci !== undefined && options.ci.trim() === '')
        command.error('error: --ci needs a script, e.g. --ci "npm test"');
      let adminToken: string | undefined;
      try {
        adminToken = await adminTokenOf(options, io);
      } catch (error) {
        command.error(`error: ${(error as Error).message}`);
      }
      await runSandbox(options, io, adminToken);
    });
};
