/**
 * `hookbot state migrate --to postgres|file [--config FILE]`: moves the state between the state
 * file (`state.path`) and PostgreSQL (`state.database_url`), e.g. when going from one instance to
 * several replicas, or back. Stop the bot (every replica) first: the state file's lock refuses a
 * running bot's file, and a database with a replica still running is refused too.
 *
 * The target must be empty (nothing is merged); the source is left as it was, to be removed by
 * hand once the bot runs on the target. What does not come over: src/state/transfer.ts.
 */
import { counted } from '../text/index.ts';
import type { CliIo, RegisterCommand } from './command.ts';
import { configProblems } from './config-problems.ts';

interface StateMigrateOptions {
  to?: string;
  config?: string;
}

const TARGETS = ['postgres', 'file'] as const;

export async function runStateMigrate(options: StateMigrateOptions, io: CliIo): Promise<number> {
  const fail = (message: string, code = 1) => {
    io.err(`hookbot state migrate: ${message}\n`);
    return code;
  };
  if (!TARGETS.includes(options.to as (typeof TARGETS)[number]))
    return fail(
      `--to must be postgres or file (got ${options.to === undefined ? 'nothing' : JSON.stringify(options.to)})`,
      2,
    );
  const { loadConfig, SWEEP_DEFAULTS } = await import('../config/index.ts');
  const {
    createFileStore,
    createPostgresStore,
    describeDatabase,
    holdsAnything,
    transferClock,
    transferState,
  } = await import('../state/index.ts');

  const loaded = loadConfig({
    file: options.config,
    env: process.env,
    receivesHooks: false,
    unknownVariables: false,
  });
  if (!loaded.ok) return fail(configProblems(loaded.problems));
  const { state } = loaded.config;
  if (!state.database_url)
    return fail(
      'set HOOKBOT_DATABASE_URL (or state.database_url): the PostgreSQL database to move the state to or from',
    );
  const where = describeDatabase(state.database_url);
  // Bounds well above any configured ones: nothing the source holds may be dropped on the way.
  const roomy = {
    decisionItems: 1_000_000,
    recentDecisions: 1_000_000,
    maxParked: 1_000_000,
    decisionHistory: 1_000_000,
    actingDecisions: 1_000_000,
    decisionItemBytes: Number.MAX_SAFE_INTEGER,
    decisionBytes: Number.MAX_SAFE_INTEGER,
  };
  const clock = transferClock();
  const file = (now?: () => number) =>
    createFileStore({ path: state.path, dedupTtlMs: state.dedup_ttl_ms, ...roomy, ...(now ? { now } : {}) });
  const database = (now?: () => number) =>
    createPostgresStore({
      url: state.database_url!,
      schema: state.database_schema,
      dedupTtlMs: state.dedup_ttl_ms,
      replicaId: `hookbot state migrate (${process.pid})`,
      ...roomy,
      ...(now ? { now } : {}),
    });
  const toPostgres = options.to === 'postgres';
  const from = toPostgres ? file() : database();
  const to = toPostgres ? database(clock.read) : file(clock.read);
  const fromName = toPostgres ? `the state file ${state.path}` : `${where} (schema ${state.database_schema})`;
  const toName = toPostgres ? `${where} (schema ${state.database_schema})` : `the state file ${state.path}`;

  try {
    await from.open();
  } catch (error) {
    return fail(`cannot open ${fromName}: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    if (from.fleet) {
      const running = (await from.fleet.replicas()).filter(
        (r) => r.id !== from.fleet!.replicaId && r.stoppedAt === undefined && Date.now() - r.seenAt < 60_000,
      );
      if (running.length > 0)
        return fail(
          `replicas still use ${fromName}: ${running.map((r) => r.id).join(', ')}. Stop every replica first (a replica killed counts as stopped a minute after its last heartbeat).`,
        );
      // Every delivery the stopped replicas left: taken over 1,000 at a time.
      for (let before = -1; from.pending().length > before;) {
        before = from.pending().length;
        await from.fleet.refresh();
      }
    }
    try {
      await to.open();
    } catch (error) {
      return fail(`cannot open ${toName}: ${error instanceof Error ? error.message : String(error)}`);
    }
    try {
      const held = holdsAnything(to);
      if (held !== undefined)
        return fail(
          `${toName} is not empty (${held}); nothing was moved. Move it away (or drop the schema) to migrate into it.`,
        );
      const counts = await transferState(from, to, clock, Object.keys(SWEEP_DEFAULTS));
      io.out(
        `moved ${fromName} to ${toName}: ${[
          counted(counts.deliveries, 'pending delivery', 'pending deliveries'),
          counted(counts.actions, 'action'),
          `${counts.parked} parked`,
          counted(counts.watches, 'watch', 'watches'),
          counted(counts.queued, 'queued merge request'),
          counted(counts.queueControls, 'paused queue'),
          counted(counts.pausedRules, 'paused rule'),
          `${counted(counts.decisions, 'decision')} (with the history kept for explain)`,
          counted(counts.schedules, 'sweep schedule'),
        ].join(', ')}.\n` +
          `${fromName} is left as it was: start the bot on the new state, then remove it.\n`,
      );
      return 0;
    } finally {
      await to.close();
    }
  } finally {
    await from.close({ compact: false });
  }
}

export const registerStateCommand: RegisterCommand = (program, io, setExitCode) => {
  const state = program.command('state').description('Work on the state store.');
  state
    .command('migrate')
    .description(
      'Move the state between the state file and PostgreSQL (HOOKBOT_DATABASE_URL). Stop the bot first.',
    )
    .requiredOption('--to <postgres|file>', 'where the state goes')
    .option(
      '--config <file>',
      'the configuration file (default: HOOKBOT_CONFIG, else defaults and environment)',
    )
    .action(async (options: StateMigrateOptions) => {
      setExitCode(await runStateMigrate(options, io));
    });
};
