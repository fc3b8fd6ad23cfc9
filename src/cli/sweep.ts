/**
 * `hookbot sweep --once [--dry-run] [--rule NAME] [--project NS/NAME] [--approve RULE] [--config FILE]`:
 * runs the sweeps now (retries, merge watch, scheduled rules, reconciliation, hook check; with
 * `--rule`, only that scheduled rule), prints what was done or, with `--dry-run`, what would be,
 * and exits: 0, or 1 when something needs a person (a breaker tripped, a project failed, an
 * action was parked, a hook is missing). On a terminal, progress (items and pages) goes to
 * stderr as it happens.
 *
 * It uses the same configuration, state file, rules, engine and executor as the running bot, and
 * writes the same state file: run it while the bot is stopped (the store has one writer; two
 * processes on one state file would corrupt it). A dry run writes nothing.
 */
import type { CliIo, RegisterCommand } from './command.ts';
import { configProblems } from './config-problems.ts';
import { counted } from '../text/index.ts';
import type { Config } from '../config/index.ts';
import type { HookbotLogger } from '../ops/index.ts';
import type { echoPauses, loadRules, ProjectRules } from '../rules/index.ts';
import type { SweepSet } from '../scheduler/index.ts';
import type { createStoreFromConfig } from '../state-from-config.ts';

interface SweepCommandOptions {
  once?: boolean;
  dryRun?: boolean;
  rule?: string;
  project?: string;
  approve?: string;
  config?: string;
}

const PROJECT = /^[^/\s]+\/[^/\s]+$/;

/** One line on a terminal, rewritten in place, at most every 100 ms. */
function progressLine(io: CliIo, enabled: boolean) {
  let last = 0;
  let shown = false;
  return {
    update(text: string) {
      if (!enabled || Date.now() - last < 100) return;
      last = Date.now();
      shown = true;
      io.err(`\r\x1b[K${text}`);
    },
    clear() {
      if (shown) io.err('\r\x1b[K');
      shown = false;
    },
  };
}

type SweepRules = Awaited<ReturnType<typeof loadRules>>;
type SweepStore = ReturnType<typeof createStoreFromConfig>;
/** The server swept: the configuration's `api.url` and `api.token`, both set. */
interface SweepServer {
  url: string;
  token: string;
}

export async function runSweepCommand(options: SweepCommandOptions, io: CliIo): Promise<number> {
  if (!options.once) {
    io.err(
      'hookbot sweep: only --once is supported: it runs the sweeps now and exits (the running bot runs them on their schedules).\n',
    );
    return 2;
  }
  if (options.project !== undefined && !PROJECT.test(options.project)) {
    io.err(`hookbot sweep: --project must be namespace/project, e.g. acme/web (got "${options.project}")\n`);
    return 2;
  }
  const loaded = await loadConfigAndRules(options, io);
  if (typeof loaded === 'number') return loaded;
  const { config, server, rules } = loaded;
  // Loaded here so that `hookbot --help` stays fast.
  const { createStoreFromConfig } = await import('../state-from-config.ts');
  const { createLogger } = await import('../ops/index.ts');
  const { apiProblem } = await import('./api-problem.ts');

  const isTty = process.stderr.isTTY === true;
  const log = createLogger({
    level: 'warn',
    format: config.log.format,
    destination: process.stderr,
    isTty,
    secrets: [config.api.token, config.webhook.secret, config.git.password],
  });
  const dryRun = options.dryRun ?? false;
  // The state file, or the replicas' database (this run takes no delivery over: it sweeps only).
  const store = createStoreFromConfig(config.state, { log, takeDeliveries: false });
  await store.open();
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  const progress = progressLine(io, isTty);
  try {
    const sweeps = await createSweeps({ options, io, config, server, rules, store, log, dryRun });
    if (typeof sweeps === 'number') return sweeps;
    const named = await checkNamedRules({ options, io, rules, store, sweeps });
    if (named === undefined) return 1;
    const approved = await approveNamedRule({ options, io, store, dryRun, named });
    return await runSweeps({ options, io, config, sweeps, approved, signal: controller.signal, progress });
  } catch (error) {
    const problem = apiProblem(error, server.url);
    if (problem === undefined) throw error;
    io.err(`hookbot sweep: ${problem}\n`);
    return 1;
  } finally {
    progress.clear();
    process.off('SIGINT', onSignal);
    await store.close();
  }
}

/** The configuration (with a server to sweep) and the rules, or the exit code of their problems. */
async function loadConfigAndRules(
  options: SweepCommandOptions,
  io: CliIo,
): Promise<number | { config: Config; server: SweepServer; rules: SweepRules }> {
  // Loaded here so that `hookbot --help` stays fast.
  const { loadConfig } = await import('../config/index.ts');
  const { loadRules, formatProblem } = await import('../rules/index.ts');
  // A sweep receives no deliveries: it needs no webhook secret.
  const loaded = loadConfig({
    file: options.config,
    env: process.env,
    receivesHooks: false,
    unknownVariables: false,
  });
  if (!loaded.ok) {
    io.err(`hookbot sweep: ${configProblems(loaded.problems)}\n`);
    return 1;
  }
  const { config } = loaded;
  if (config.api.url === undefined || config.api.token === undefined) {
    const { noServerMessage } = await import('./sandbox-lines.ts');
    io.err(
      `hookbot sweep: ${await noServerMessage('sweep', config, loaded.sources['rules.dir'] !== undefined)}\n`,
    );
    return 1;
  }
  const rules = await loadRules(config.rules.dir);
  if (rules.problems.length > 0) {
    io.err(
      `hookbot sweep: the rules have problems (fix them first; hookbot check lists them):\n${rules.problems.map((p) => `  ${formatProblem(p)}`).join('\n')}\n`,
    );
    return 1;
  }
  return { config, server: { url: config.api.url, token: config.api.token }, rules };
}

/**
 * The sweeps as the running bot runs them: its client, identity, rules (repository rules
 * layered), reader and executor; or the exit code when `--project` names no project.
 */
async function createSweeps(run: {
  options: SweepCommandOptions;
  io: CliIo;
  config: Config;
  server: SweepServer;
  rules: SweepRules;
  store: SweepStore;
  log: HookbotLogger;
  dryRun: boolean;
}): Promise<number | SweepSet> {
  const { options, io, config, server, rules, store, log, dryRun } = run;
  const { createRepositoryRules, repositoryPolicy } = await import('../rules/index.ts');
  const { createClient, statusTrust } = await import('../api/index.ts');
  const { createExecutor, createFreshCheck, createQueueEvents, createSnapshotReader } =
    await import('../rules/index.ts');
  const { createSweepSet, gitAccessOf, sweepSettingsOf } = await import('../scheduler/index.ts');
  const { missingProject } = await import('./api-problem.ts');
  // Whose statuses count, as the running bot counts them (rules.status_authors).
  const trust = statusTrust(config.rules.status_authors, () => me?.username);
  const client = createClient({
    baseUrl: server.url,
    token: server.token,
    tokenType: config.api.token_type,
    timeoutMs: config.api.timeout_ms,
    concurrency: config.api.concurrency,
    retry: { limit: config.api.retry.limit, baseDelayMs: config.api.retry.base_delay_ms },
    ...(trust ? { statusTrust: trust } : {}),
  });
  const central = { forProject: (path: string) => rules.byProject(path) };
  // The bot's own user, as the running bot knows it: comment markers count only in its notes.
  const me = config.api.bot_username
    ? { username: config.api.bot_username }
    : await client.users.current().then((user) => ({ id: user.id, username: user.username }));
  // Repository rules, as the running bot layers them (a dry run posts no hookbot/config status).
  let projectRules: ProjectRules = central;
  if (config.rules.repository.enabled) {
    const repository = createRepositoryRules({
      central,
      policy: repositoryPolicy(config.rules.repository.allow, {
        maxDepth: config.rules.repository.queue.max_depth,
        maxBatch: config.rules.repository.queue.max_batch,
      }),
      postStatuses: !dryRun,
      log,
    });
    repository.attach({ client, bot: me, planClient: () => client });
    projectRules = repository;
  }
  if (options.project !== undefined) {
    // Checked once here: otherwise every sweep reports the same 404 with its own stack trace.
    const missing = await missingProject(client, options.project);
    if (missing !== undefined) {
      io.err(`hookbot sweep: ${missing}\n`);
      return 1;
    }
  }
  const reader = createSnapshotReader(client, {
    bot: me,
    watching: (itemKey) => store.watched().some((entry) => entry.itemKey === itemKey),
  });
  const executor = createExecutor({
    client,
    store,
    dryRun,
    ...(store.fleet ? { fleet: store.fleet } : {}),
    log,
    bot: me,
    freshCheck: createFreshCheck({ reader, rules: projectRules }),
  });
  return createSweepSet(
    {
      client,
      store,
      rules: projectRules,
      executor,
      reader,
      bot: me,
      log,
      // The queue's story for explain (no metrics: a one-off run has no /metrics).
      queueEvents: createQueueEvents({ store, now: () => Date.now(), log }),
      ...gitAccessOf(config, me.username),
    },
    sweepSettingsOf(config),
  );
}

/** What `--rule` and `--approve` name, found in the projects swept. */
interface NamedRules {
  /** The scheduled rules of that name in the projects swept (a project file may redefine one). */
  scheduledNamed: (name: string) => ReturnType<SweepRules['byProject']>['rules'];
  /** The echo brake's pauses of that rule. */
  echoPaused: (name: string) => ReturnType<typeof echoPauses>;
}

/** Checks that the rules `--rule` and `--approve` name exist (undefined, said on stderr, when not). */
async function checkNamedRules(run: {
  options: SweepCommandOptions;
  io: CliIo;
  rules: SweepRules;
  store: SweepStore;
  sweeps: SweepSet;
}): Promise<NamedRules | undefined> {
  const { options, io, rules, store, sweeps } = run;
  const { echoPauses } = await import('../rules/index.ts');
  const named = [options.rule, options.approve].filter((name) => name !== undefined);
  const projects =
    named.length > 0
      ? await sweeps.projects(options.project !== undefined ? { project: options.project } : {})
      : [];
  /** The scheduled rules of that name in the projects swept (a project file may redefine one). */
  const scheduledNamed = (name: string) =>
    projects.flatMap((path) =>
      rules.byProject(path).rules.filter((rule) => rule.name === name && rule.schedule !== null),
    );
  // A rule paused by the echo brake (hook-driven, rules/item/echo-brake.ts) is approved the same way.
  const echoPaused = (name: string) =>
    echoPauses(store, {
      rule: name,
      ...(options.project !== undefined ? { project: options.project } : {}),
    });
  for (const name of named) {
    if (scheduledNamed(name).length > 0) continue;
    if (name === options.approve && echoPaused(name).length > 0) continue;
    const where = projects.length === 1 ? projects[0] : 'the configured projects';
    io.err(`hookbot sweep: no scheduled rule named "${name}" in the rules of ${where}\n`);
    return undefined;
  }
  return { scheduledNamed, echoPaused };
}

/** `--approve`: approves the rule (or, in a dry run, previews as if it were); the rules approved. */
async function approveNamedRule(run: {
  options: SweepCommandOptions;
  io: CliIo;
  store: SweepStore;
  dryRun: boolean;
  named: NamedRules;
}): Promise<Set<string>> {
  const { options, io, store, dryRun } = run;
  const { scheduledNamed, echoPaused } = run.named;
  const { approveEcho } = await import('../rules/index.ts');
  const { approve, definitionHash, pauseOf } = await import('../scheduler/index.ts');
  const approved = new Set<string>();
  if (options.approve !== undefined) {
    const name = options.approve;
    const echoes = echoPaused(name);
    for (const paused of echoes)
      if (dryRun) io.out(`rule "${name}" would be approved in ${paused.project} (dry run)\n`);
      else {
        await approveEcho(store, name, paused.project, Date.now());
        io.out(
          `rule "${name}" approved in ${paused.project}: its writes after the bot's own changes are counted afresh\n`,
        );
      }
    // An approval given before the breaker trips counts as one given after: the preview of a dry
    // run says "would be paused; approve with ...", and running exactly that must go through.
    const definitions = scheduledNamed(name).map(definitionHash);
    if (!pauseOf(store, name)) {
      if (definitions.length === 0) {
        if (echoes.length === 0) io.out(`rule "${name}" is not paused: nothing to approve\n`);
      } else if (dryRun) {
        approved.add(name);
        io.out(
          `rule "${name}" is not paused; it would be approved in advance (dry run: previewing as if it were)\n`,
        );
      } else {
        await approve(store, name, definitions, Date.now());
        io.out(
          `rule "${name}" is not paused: its current definition is approved in advance, so the circuit breaker lets it past max_items and max_share, in this run and the next ones until its definition changes (the budget still bounds each run)\n`,
        );
      }
    } else if (dryRun) {
      approved.add(name);
      io.out(`rule "${name}" would be approved (dry run: previewing as if it were)\n`);
    } else {
      await approve(store, name, definitions, Date.now());
      io.out(`rule "${name}" approved: its current definition is exempt from the circuit breaker\n`);
    }
  }
  return approved;
}

/** Runs the sweeps one after the other, printing each report; the exit code. */
async function runSweeps(run: {
  options: SweepCommandOptions;
  io: CliIo;
  config: Config;
  sweeps: SweepSet;
  approved: ReadonlySet<string>;
  signal: AbortSignal;
  progress: ReturnType<typeof progressLine>;
}): Promise<number> {
  const { options, io, config, sweeps, approved, signal, progress } = run;
  const { enabledSweeps, summarise, needsAttention } = await import('../scheduler/index.ts');
  let exitCode = 0;
  const names = options.rule !== undefined ? (['rules'] as const) : enabledSweeps(config);
  for (const name of names) {
    if (signal.aborted) break;
    const report = await sweeps.run(name, {
      force: true,
      signal: signal,
      onProgress: (p) =>
        progress.update(
          `${p.sweep}: ${p.scope}: ${counted(p.items, 'item')}${p.pages ? `, ${counted(p.pages, 'page')}` : ''}`,
        ),
      ...(options.project !== undefined ? { project: options.project } : {}),
      ...(options.rule !== undefined ? { rule: options.rule } : {}),
      ...(approved.size > 0 ? { assumeApproved: approved } : {}),
    });
    progress.clear();
    io.out(`${summarise(report)}\n`);
    if (needsAttention(report)) exitCode = 1;
  }
  if (signal.aborted) {
    io.err('hookbot sweep: interrupted; what was done stays done, the rest waits for the next run\n');
    exitCode = 1;
  }
  return exitCode;
}

export const registerSweepCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('sweep')
    .description(
      'Run the sweeps now (scheduled rules, merge watch, retries, reconciliation, hook check) and exit.',
    )
    .option('--once', 'run once and exit (required)')
    .option('--dry-run', 'show what would be done; change nothing on the server or in the state file')
    .option('--rule <name>', 'only this scheduled rule')
    .option('--project <namespace/project>', 'only this project')
    .option(
      '--approve <rule>',
      'approve a rule, then sweep: the circuit breaker lets its current definition past (paused or not yet: an approval before a trip counts); a rule paused by the echo brake is released in --project, or everywhere',
    )
    .option(
      '--config <file>',
      'the configuration file (default: HOOKBOT_CONFIG, else defaults and environment)',
    )
    .action(async (options: SweepCommandOptions) => {
      setExitCode(await runSweepCommand(options, io));
    });
};
