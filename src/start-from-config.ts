/**
 * From a loaded configuration to a running bot: state store, rules (reloading), executor, item
 * processor, receiver and pipeline, logs and metrics. `hookbot serve` and `npm start` (on the
 * embedded sandbox) both come through here, so they run the same thing. The start in named steps:
 * checkStart, openStoreAndRules, the repository rules, the parts wired (start-wiring.ts), startBot,
 * startSweeps; stopWithin stops it.
 */
import type { Config } from './config/index.ts';
import { startBot, type Bot } from './start-bot.ts';
import {
  apiOptionsOf,
  botOptionsOf,
  observersOf,
  type Late,
  type RuntimeOverrides,
  type StartChecked,
  type Wiring,
} from './start-wiring.ts';
import type { HookbotLogger, Metrics } from './ops/index.ts';
import { exposureProblem, exposureWarning } from './receiver/index.ts';
import {
  createScheduler,
  createSweepSet,
  scheduledSweepsOf,
  sweepSettingsOf,
  echoLimitsOf,
  gitAccessOf,
  trippedRules,
  type SweepReport,
  type SweepSet,
} from './scheduler/index.ts';
import { createStoreFromConfig } from './state-from-config.ts';
import type { StateStore } from './state/index.ts';
import { createDeliveryLog } from './status/index.ts';
import {
  createEchoBrake,
  createItemRuns,
  itemKeyOf,
  createRepositoryRules,
  createRulesHolder,
  type ProjectRules,
  repositoryPolicy,
  type RulesHolder,
  withdrawRemovedRules,
} from './rules/index.ts';

type RepositoryRulesOptions = Parameters<typeof createRepositoryRules>[0];

export interface Runtime {
  bot: Bot;
  store: StateStore;
  rules: RulesHolder;
  /** The sweeps, to run one now (`hookbot demo`, tests). */
  sweeps: SweepSet;
  /** Stops taking deliveries, finishes running work, closes the store. Safe to call twice. */
  close(): Promise<void>;
}

export async function startRuntime(
  config: Config,
  deps: { log: HookbotLogger; metrics: Metrics },
  overrides: RuntimeOverrides = {},
): Promise<Runtime> {
  const { log, metrics } = deps;
  const start = checkStart(config, log, overrides);
  const { store, rules } = await openStoreAndRules(config, log, metrics);

  // Rules in the repository (docs/repository-rules.md): each project's .hookbot.yml after the
  // central rules, once the bot has its client. Off: the central rules alone.
  const repository = config.rules.repository.enabled
    ? repositoryRulesOf(config, {
        central: rules,
        policy: start.repositoryPolicy!,
        log,
        // A plan computed later, by a timer, is a run of its merge request like a hook's.
        runItem: (item, work) => itemRuns.run(itemKeyOf(item.type, item.projectId, item.id), work),
        // The plan says what the bot does: a merge request the queue took out at its head stays out.
        queued: () => store.queued(),
      })
    : undefined;
  const projectRules: ProjectRules = repository ?? rules;
  const observers = observersOf(config, store, metrics, log);
  if (config.rules.watch) rules.watch();

  const deliveries = createDeliveryLog();
  const late: Late = {};
  const apiOptions = apiOptionsOf(config, start, metrics, log, late);
  // The writes a rule makes after the bot's own changes, bounded per item (rules/item/echo-brake.ts):
  // one count for hook runs and sweeps alike.
  const brake = createEchoBrake({
    store: observers.observed,
    limits: echoLimitsOf(config),
    log: log.child({ part: 'echo-brake' }),
  });
  // One item, one run at a time, for hooks and sweeps alike and across the fleet (rules/executor/lock.ts).
  const itemRuns = createItemRuns({
    ...(store.fleet ? { fleet: store.fleet } : {}),
    log: log.child({ part: 'item-runs' }),
  });
  const wiring: Wiring = {
    config,
    overrides,
    log,
    metrics,
    start,
    store,
    rules,
    repository,
    projectRules,
    observers,
    deliveries,
    late,
    apiOptions,
    brake,
    itemRuns,
  };
  let bot: Bot;
  try {
    bot = await startBot(botOptionsOf(wiring));
  } catch (error) {
    rules.close();
    await store.close();
    throw error;
  }
  const { sweeps, scheduler } = startSweeps(wiring, bot);

  let closing: Promise<void> | undefined;
  return {
    bot,
    store,
    rules,
    sweeps,
    close() {
      closing ??= stopWithin(config.server.shutdown_timeout_ms, {
        rules,
        repository,
        scheduler,
        bot,
        store,
        log,
      });
      return closing;
    },
  };
}

/** What the start checked and took from the configuration before opening anything. */
/**
 * The checks that refuse a start (an exposure without protection, a misspelt allow-list, no
 * server) and the secrets the logger must hide: before anything is opened.
 */
function checkStart(config: Config, log: HookbotLogger, overrides: RuntimeOverrides): StartChecked {
  const statusAuth = config.server.status_auth;
  const auth =
    statusAuth.username && statusAuth.password
      ? { username: statusAuth.username, password: statusAuth.password }
      : undefined;
  // Before anything is opened: a refusal leaves nothing to undo.
  const exposure = {
    host: config.server.host,
    authenticated: auth !== undefined,
    publicOps: config.server.public_ops,
  };
  const problem = exposureProblem(exposure);
  if (problem) throw new Error(problem);
  const warning = exposureWarning(exposure);
  if (warning) log.warn({ host: config.server.host }, warning);
  // A misspelt action in rules.repository.allow stops the start before anything is opened.
  const repositoryPolicyOf = config.rules.repository.enabled
    ? repositoryPolicy(config.rules.repository.allow, {
        maxDepth: config.rules.repository.queue.max_depth,
        maxBatch: config.rules.repository.queue.max_batch,
      })
    : undefined;
  const apiUrl = overrides.api?.url ?? config.api.url;
  const token = overrides.api?.token ?? config.api.token;
  if (!apiUrl || !token) throw new Error('api.url and api.token are needed to run against a server');
  const secret = overrides.webhookSecret ?? config.webhook.secret;
  log.addSecret(token);
  if (secret) log.addSecret(secret);
  const signatureSecret = config.webhook.signature.secret;
  if (signatureSecret) log.addSecret(signatureSecret);
  // The merge queue's git password or token: known to the logger like the others.
  if (config.git.password) log.addSecret(config.git.password);
  return { auth, repositoryPolicy: repositoryPolicyOf, apiUrl, token, secret, signatureSecret };
}

/** The state store, opened, and the rules folder (its problems stop the start: the store is closed again). */
async function openStoreAndRules(config: Config, log: HookbotLogger, metrics: Metrics) {
  const store = createStoreFromConfig(config.state, {
    onCommit: ({ ms }) => metrics.stateCommit(ms / 1000),
    log: log.child({ part: 'state' }),
  });
  await store.open();
  // A rules folder with problems stops the start (RulesProblemsError lists them): the store is
  // closed again, untouched.
  const rules = await createRulesHolder(config.rules.dir, { log: log.child({ part: 'rules' }) }).catch(
    async (error: unknown) => {
      await store.close({ compact: false });
      throw error;
    },
  );
  return { store, rules };
}

/** A project's own .hookbot.yml, layered after the central rules (docs/repository-rules.md). */
function repositoryRulesOf(
  config: Config,
  parts: Required<Pick<RepositoryRulesOptions, 'central' | 'policy' | 'runItem' | 'queued'>> & {
    log: HookbotLogger;
  },
) {
  return createRepositoryRules({
    central: parts.central,
    policy: parts.policy,
    budget: {
      items: config.rules.repository.plan_items,
      apiCalls: config.rules.repository.plan_api_calls,
    },
    planLimits: {
      perAuthor: config.rules.repository.plan_per_author_hour,
      perMergeRequest: config.rules.repository.plan_per_merge_request_hour,
    },
    log: parts.log.child({ part: 'repository-rules' }),
    runItem: parts.runItem,
    queued: parts.queued,
  });
}

/** What watches the bot work: the decisions and the merge queue's story counted, each action's result. */
function startSweeps(wiring: Wiring, bot: Bot) {
  const { config, overrides, log, metrics, store, rules, repository, projectRules, late, brake } = wiring;
  const { observed, onEvaluated, queueEvents } = wiring.observers;
  // The merge queue's git commands, at debug level (redacted by the updater and again by the logger).
  const gitLog = log.child({ part: 'git' });
  // The scheduler: sweeps reconcile what hooks missed, on the same client, rules and executor.
  const sweeps = createSweepSet(
    {
      client: bot.client,
      store: observed,
      rules: projectRules,
      executor: late.executor!,
      brake,
      ...(late.reader ? { reader: late.reader } : {}),
      ...(late.identity ? { bot: late.identity } : {}),
      log: log.child({ part: 'sweep' }),
      onEvaluated,
      queueEvents,
      queueMetrics: metrics.mergeQueue,
      ...gitAccessOf(
        overrides.git ? { ...config, git: { ...config.git, ...overrides.git } } : config,
        late.identity?.username,
        (line) => gitLog.debug(line),
      ),
    },
    sweepSettingsOf(config),
  );
  // Rules reloaded with a rule removed: its pending actions are withdrawn, not left to fire. With
  // repository rules, a project whose .hookbot.yml was not read since the start keeps its actions
  // (its rules are not known yet), and a change of a .hookbot.yml withdraws the same way.
  const withdrawRemoved = () => {
    void withdrawRemovedRules(store, late.executor!, (path) =>
      repository && !repository.known(path) ? undefined : projectRules.forProject(path),
    ).catch((error: unknown) => log.error({ err: error }, 'could not withdraw the actions of removed rules'));
  };
  rules.onReload(withdrawRemoved);
  repository?.onChange(withdrawRemoved);
  const scheduler = createScheduler({
    sweeps: scheduledSweepsOf(config, sweeps),
    store,
    log: log.child({ part: 'scheduler' }),
    onRun: (name, result, report) => {
      metrics.sweepRun(name, result);
      if (report !== undefined)
        for (const rule of trippedRules(report as SweepReport)) metrics.breakerTrip(rule);
    },
  });
  if (overrides.scheduler !== false) {
    scheduler.start();
    if (config.scheduler.sweeps.merge_queue.enabled) late.wakeQueue = () => scheduler.wake('merge_queue');
    if (config.scheduler.sweeps.merge_watch.enabled) late.wakeWatch = () => scheduler.wake('merge_watch');
  }
  return { sweeps, scheduler };
}

/**
 * A stop with a bound (`server.shutdown_timeout_ms`): take no more work (hooks, sweep ticks, rule
 * reloads), wait for what runs (item runs, sweeps, state writes), then close the store. Past the
 * bound nothing is waited for any more: open connections are cut, the store is closed at once
 * (PostgreSQL: its sockets destroyed) and one line says what was abandoned. Abandoning loses
 * nothing: a delivery is removed from the inbox only once processed, so what was not stays for the
 * next start (or, with replicas, for the replica that takes it over), and a half-done item run is
 * done again from the item's state (level-triggered, action ids in the outbox).
 */
async function stopWithin(
  boundMs: number,
  parts: {
    rules: RulesHolder;
    /** Its re-review timers are cancelled first. */
    repository: { close(): void } | undefined;
    scheduler: ReturnType<typeof createScheduler>;
    bot: Bot;
    store: StateStore;
    log: HookbotLogger;
  },
): Promise<void> {
  const { rules, repository, scheduler, bot, store, log } = parts;
  const started = performance.now();
  const left = () => Math.max(0, boundMs - (performance.now() - started));
  rules.close();
  repository?.close();
  const stopped = Promise.all([scheduler.stop(), bot.close()]).then(
    () => undefined,
    (error: unknown) => log.error({ err: error }, 'stop: stopping the sweeps or the receiver failed'),
  );
  const finished = await settlesWithin(stopped, left());
  if (!finished) {
    bot.server.closeAllConnections();
    log.warn(
      {
        boundMs,
        sweepsRunning: scheduler.running(),
        deliveriesUnprocessed: store.stats().inbox,
      },
      'stop: running work did not finish within server.shutdown_timeout_ms and is abandoned; deliveries not processed stay in the inbox for the next start',
    );
  }
  await store.close({ timeoutMs: left() });
}

/** True when `work` settled within `ms`. */
async function settlesWithin(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}
