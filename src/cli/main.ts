import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { closest } from '../text/index.ts';
import type { CliIo, RegisterCommand } from './command.ts';

/** Exit codes: 0 ok, 1 the command ran and found problems, 2 the command line itself was wrong. */
export const EXIT_USAGE = 2;

const defaultIo: CliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

export function buildProgram(
  io: CliIo,
  setExitCode: (code: number) => void,
  commands: RegisterCommand[] = [],
): Command {
  const program = new Command('hookbot')
    .description('Automation bot for source-hosting servers that speak the REST API v3.')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .helpOption('-h, --help', 'show help')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .usage('[options] <command>')
    .showSuggestionAfterError(true)
    .exitOverride();
  for (const register of commands) register(program, io, setExitCode);
  // Without subcommands registered, commander would treat a word as an argument: refuse it ourselves.
  // A misspelt command keeps whatever follows it (`hookbot chekc rules --strict`): those words and
  // options were meant for the command, so the answer is the same did-you-mean as for the bare word.
  program
    .argument('[command]')
    .argument('[arguments...]')
    .allowUnknownOption(true)
    .action((name: string | undefined) => {
      if (name === undefined) {
        program.outputHelp();
        return;
      }
      setExitCode(EXIT_USAGE);
      if (name.startsWith('-')) {
        io.err(`hookbot: unknown option '${name}'. Run 'hookbot --help' to see the options.\n`);
        return;
      }
      const near = closest(
        name,
        program.commands.map((command) => command.name()),
      );
      const hint = near === undefined ? '' : ` (did you mean '${near}'?)`;
      io.err(`hookbot: unknown command '${name}'${hint}. Run 'hookbot --help' to see the commands.\n`);
    });
  return program;
}

/**
 * `HOOKBOT_*` variables hookbot does not read, said once here for every command, each with the
 * closest variable it does read: a misspelt `HOOKBOT_DATABSE_URL` would otherwise leave `explain`
 * reading the state file, or `serve` its default, in silence. The commands load their
 * configuration with `unknownVariables: false` so that nothing is said twice. The configuration's
 * schema is loaded only when some `HOOKBOT_*` variable is set, so that `hookbot --help` stays fast.
 */
async function warnUnknownVariables(env: NodeJS.ProcessEnv, io: CliIo): Promise<void> {
  if (!Object.keys(env).some((name) => name.startsWith('HOOKBOT_'))) return;
  const { unknownVariableWarnings } = await import('../config/index.ts');
  for (const warning of unknownVariableWarnings(env)) io.err(`hookbot: ${warning}\n`);
}

export async function main(
  argv: string[],
  io: CliIo = defaultIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  await warnUnknownVariables(env, io);
  let exitCode = 0;
  const program = buildProgram(io, (code) => (exitCode = code), await loadCommands(argv));
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end through here with exit code 0; usage errors with 1, which we make 2.
      return error.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    io.err(`hookbot: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  return exitCode;
}

/**
 * The subcommands, one file each, by name. Only the named command's file is imported when the command
 * line starts with a known command's name (`hookbot sandbox` loads neither the bot nor the rules'
 * engine: its start-up is the sandbox's); every one otherwise (`--help`, a misspelt name and its
 * suggestion). The imports sit here rather than at the top so that tests can build a program with
 * commands of their own (`buildProgram`) without loading the real ones.
 */
const COMMANDS: Record<string, () => Promise<RegisterCommand>> = {
  start: async () => (await import('./start.ts')).registerStartCommand,
  serve: async () => (await import('./serve.ts')).registerServeCommand,
  sandbox: async () => (await import('./sandbox.ts')).registerSandboxCommand,
  sweep: async () => (await import('./sweep.ts')).registerSweepCommand,
  demo: async () => (await import('./demo.ts')).registerDemoCommand,
  check: async () => (await import('./check.ts')).registerCheckCommand,
  simulate: async () => (await import('./simulate.ts')).registerSimulateCommand,
  plan: async () => (await import('./plan.ts')).registerPlanCommand,
  schema: async () => (await import('./schema.ts')).registerSchemaCommand,
  explain: async () => (await import('./explain.ts')).registerExplainCommand,
  state: async () => (await import('./state.ts')).registerStateCommand,
  queue: async () => (await import('./queue.ts')).registerQueueCommand,
};

async function loadCommands(argv: string[]): Promise<RegisterCommand[]> {
  const named = argv[0];
  if (named !== undefined && Object.hasOwn(COMMANDS, named)) return [await COMMANDS[named]!()];
  return Promise.all(Object.values(COMMANDS).map((load) => load()));
}
