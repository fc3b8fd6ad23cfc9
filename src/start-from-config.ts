/**
 * From a loaded configuration to a running bot: state store, rules (reloading), executor, item
 * processor, receiver and pipeline, logs and metrics. `hookbot serve` and `npm start` (on the
 * embedded sandbox) both come through here, so they run the same thing.
 */
import type { Config } from './config/index.ts';
import { startBot, type Bot } from './start-bot.ts';
import type { HookbotLogger } from './ops/index.ts';
import type { Metrics } from './ops/index.ts';
import { actionResultOf, createHookToAction, withDecisionMetrics } from './ops/index.ts';
import { exposureProblem, exposureWarning } from './receiver/index.ts';
import { createQueueControlRoutes, hostCheck, isLoopbackHost } from './receiver/index.ts';
import {
  createScheduler,
  createSweepSet,
  enabledSweeps,
  scheduledSweepsOf,
  sweepSettingsOf,
  echoLimitsOf,
  gitAccessOf,
  trippedRules,
  type SweepReport,
  type SweepSet,
  createQueueControls,
} from './scheduler/index.ts';
import { createStoreFromConfig } from './state-from-config.ts';
import { createClient, statusTrust, type Client, type ClientOptions } from './api/index.ts';
import type { StateStore } from './state/index.ts';
import { basicAuth } from './status/index.ts';
import { createDeliveryLog, createStatusRouter } from './status/index.ts';
import {
  type BotIdentity,
  createEchoBrake,
  type CallReport,
  createExecutor,
  createItemRuns,
  itemKeyOf,
  createFreshCheck,
  createItemProcessor,
  createRepositoryRules,
  createRulesHolder,
  createSnapshotReader,
  type ProjectRules,
  repositoryPolicy,
  type Executor,
  explainAnswer,
  findDecision,
  type RulesHolder,
  type SnapshotReader,
  withdrawRemovedRules,
  createQueueEvents,
} from './rules/index.ts';

export interface Runtime {
  bot: Bot;
  store: StateStore;
  rules: RulesHolder;
  /** The sweeps, to run one now (`hookbot demo`, tests). */
  sweeps: SweepSet;
  /** Stops taking deliveries, finishes running work, closes the store. Safe to call twice. */
  close(): Promise<void>;
}

export interface RuntimeOverrides {
  /** Start the periodic sweeps (default true; the demo drives them itself). */
  scheduler?: boolean;
  /** The API URL and token to use instead of the config's (the embedded sandbox). */
  api?: { url: string; token: string };
  /** The hook secret to use instead of the config's (generated for the embedded sandbox). */
  webhookSecret?: string;
  /** Git credentials to use instead of the config's (the embedded sandbox's demo token). */
  git?: { username: string; password: string };
  /** How long a /readyz result is reused (tests count the API calls it makes). */
  readinessTtlMs?: number;
}

export async function startRuntime(
  config: Config,
  deps: { log: HookbotLogger; metrics: Metrics },
  overrides: RuntimeOverrides = {},
): Promise<Runtime> {
  const { log, metrics } = deps;
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

  // Rules in the repository (docs/repository-rules.md): each project's .hookbot.yml after the
  // central rules, once the bot has its client. Off: the central rules alone.
  const repository = config.rules.repository.enabled
    ? createRepositoryRules({
        central: rules,
        policy: repositoryPolicyOf!,
        budget: {
          items: config.rules.repository.plan_items,
          apiCalls: config.rules.repository.plan_api_calls,
        },
        planLimits: {
          perAuthor: config.rules.repository.plan_per_author_hour,
          perMergeRequest: config.rules.repository.plan_per_merge_request_hour,
        },
        log: log.child({ part: 'repository-rules' }),
        // A plan computed later, by a timer, is a run of its merge request like a hook's.
        runItem: (item, work) => itemRuns.run(itemKeyOf(item.type, item.projectId, item.id), work),
        // The plan says what the bot does: a merge request the queue took out at its head stays out.
        queued: () => store.queued(),
      })
    : undefined;
  const projectRules: ProjectRules = repository ?? rules;

  // Every decision recorded (hooks and sweeps) also counts into the metrics.
  const observed = withDecisionMetrics(store, metrics);
  // The merge queue's story (explain, the actions list) and metrics (docs/merge-queue.md#where-it-shows).
  metrics.watchMergeQueues(() => store.queued());
  const queueEvents = createQueueEvents({
    store: observed,
    now: () => Date.now(),
    metrics: metrics.mergeQueue,
    log: log.child({ part: 'sweep' }),
  });
  // What became of each action, as the executor settles it (docs/operations.md#metrics): its result,
  // and for an action an item run of deliveries carried out, how long after their acceptance.
  const hookToAction = createHookToAction({
    observe: (seconds) => metrics.hookToAction(seconds),
    pending: () => store.pendingDeliveries(),
    limit: config.state.max_pending,
  });
  const onResult = (report: CallReport) => {
    // A merged labels write names every contributing rule, comma-separated.
    for (const rule of report.rule.split(', '))
      metrics.ruleAction(rule, report.action, actionResultOf(report));
    if (report.status === 'done') hookToAction.acted();
  };
  const onEvaluated = (seconds: number) => metrics.evaluationTime(seconds);
  if (config.rules.watch) rules.watch();

  const deliveries = createDeliveryLog();

  const apiOptions: ClientOptions = {
    baseUrl: apiUrl,
    token,
    // Whose commit statuses count (rules.status_authors); the bot's own once it knows its user.
    ...trustOf(config.rules.status_authors, () => identity?.username ?? config.api.bot_username),
    tokenType: config.api.token_type,
    timeoutMs: config.api.timeout_ms,
    concurrency: config.api.concurrency,
    retry: { limit: config.api.retry.limit, baseDelayMs: config.api.retry.base_delay_ms },
    onCall: (call) => {
      metrics.apiCall(call);
      log.debug(
        {
          api: {
            method: call.method,
            path: call.path,
            status: call.status,
            ms: Math.round(call.durationMs),
          },
        },
        'api call',
      );
    },
  };
  // Hooks drive the merge queue (docs/merge-queue.md): after an item run that concerns a merge
  // request in a queue (its status changed, it was queued, relabelled, pushed to, merged, closed),
  // the merge_queue sweep is woken instead of waiting for its next tick. Set once the scheduler runs.
  let wakeQueue: (() => void) | undefined;
  // The same for the merge watch (the bot's own merge when the build succeeds): a status hook of a
  // watched merge request runs it at once rather than at its next tick.
  let wakeWatch: (() => void) | undefined;
  const watched = (item: { type: string; projectId: number; id: number }): boolean =>
    item.type === 'merge_request' &&
    store.watched().some((entry) => entry.itemKey === itemKeyOf('merge_request', item.projectId, item.id));
  const inQueue = (item: { type: string; projectId: number; id: number }): boolean =>
    item.type === 'merge_request' &&
    store
      .queued()
      .some((entry) => !entry.left && entry.projectId === item.projectId && entry.mrId === item.id);
  // The writes a rule makes after the bot's own changes, bounded per item (rules/item/echo-brake.ts):
  // one count for hook runs and sweeps alike.
  const brake = createEchoBrake({
    store: observed,
    limits: echoLimitsOf(config),
    log: log.child({ part: 'echo-brake' }),
  });
  // One item, one run at a time, for hooks and sweeps alike and across the fleet (rules/executor/lock.ts).
  const itemRuns = createItemRuns({
    ...(store.fleet ? { fleet: store.fleet } : {}),
    log: log.child({ part: 'item-runs' }),
  });
  let bot: Bot;
  let executor: Executor | undefined;
  let reader: SnapshotReader | undefined;
  let identity: BotIdentity | undefined;
  let botClient: Client | undefined;
  try {
    bot = await startBot({
      api: apiOptions,
      // A build or status on a merge train's car names no merge request's head: it wakes the queue.
      onAcceptedBody: (_kind, body) => {
        if (onTrainBranch(body, config.git.train_branch_prefix)) wakeQueue?.();
      },
      identity: config.api.bot_username ? { username: config.api.bot_username } : undefined,
      webhook: {
        token: config.webhook.allow_open && !secret ? undefined : secret,
        signature: signatureSecret
          ? { secret: signatureSecret, header: config.webhook.signature.header }
          : undefined,
      },
      server: {
        host: config.server.host,
        port: config.server.port,
        hookPath: config.server.hook_path,
        bodyLimitBytes: config.server.body_limit_bytes,
        readingLimitBytes: config.server.reading_limit_bytes,
      },
      store,
      itemRuns,
      pipeline: {
        debounceMs: config.pipeline.debounce_ms,
        concurrency: config.pipeline.concurrency,
        queueLimit: config.pipeline.queue_limit,
      },
      ...(repository ? { onEvent: (event) => repository.onEvent(event) } : {}),
      processor: ({ client, identity: bot }) => {
        identity = bot;
        botClient = client;
        // The plan of a merge request's .hookbot.yml counts its API calls on a client of its own.
        repository?.attach({ client, bot, planClient: () => createClient(apiOptions) });
        // One reader and one executor for hooks and sweeps alike: the executor's per-item lock
        // keeps them from acting on one item at once. Merges, armings and cancels are made only
        // while a fresh evaluation still plans them (fresh-check.ts).
        reader = createSnapshotReader(client, {
          bot,
          watching: (itemKey) => store.watched().some((entry) => entry.itemKey === itemKey),
        });
        executor = createExecutor({
          client,
          store,
          bot,
          runs: itemRuns,
          freshCheck: createFreshCheck({ reader, rules: projectRules }),
          log: log.child({ part: 'executor' }),
          onResult,
        });
        const processItem = createItemProcessor({
          client,
          store: observed,
          rules: projectRules,
          executor,
          reader,
          brake,
          log: log.child({ part: 'process' }),
          onEvaluated,
          queueMetrics: metrics.mergeQueue,
        });
        const reviewLog = log.child({ part: 'repository-rules' });
        return async (item, triggers) => {
          const wasQueued = inQueue(item);
          try {
            await processItem(item, triggers);
          } finally {
            // Queued by this run, or taken out by it (its head then moves on), or news of it. The
            // entry is durable by now (the executor awaits store.enqueue, which resolves once the
            // write is committed), so the replica that drives the queue next, which reads the queue
            // from the database under the train's lock (merge-queue.ts), finds it there.
            if (wasQueued || inQueue(item)) wakeQueue?.();
            if (watched(item)) wakeWatch?.();
          }
          await repository
            ?.reviewMergeRequest(item, triggers)
            .catch((error: unknown) =>
              reviewLog.warn({ err: error }, 'could not review the .hookbot.yml of a merge request'),
            );
        };
      },
      // From what the store recorded only: a caller never makes the bot call the API.
      explain: async (query, selector) => {
        const found = findDecision(store.latestDecisions(), query, {
          entries: store.queued(),
          now: Date.now(),
          paused: store.pausedRules(),
          controls: store.queueControls(),
        });
        if (!found.found) return found;
        // The item's kept decisions: the ones that acted outlive the echoes of the bot's own changes.
        return explainAnswer(found, await store.keptDecisions(found.record.itemKey), selector);
      },
      // The status page, /metrics and /explain: the Host check, then the optional basic auth.
      protect: [hostCheck(config.server.allowed_hosts), ...(auth ? [basicAuth(auth)] : [])],
      readinessTtlMs: overrides.readinessTtlMs,
      extendApp: (app) => {
        app.get('/metrics', async (_req, res) => {
          res.set('content-type', metrics.contentType).send(await metrics.text());
        });
        // An operator's controls of the merge queues (docs/merge-queue.md#steering-the-queue).
        app.use(
          createQueueControlRoutes({
            controls: createQueueControls({
              client: botClient!,
              store,
              executor: executor!,
              now: Date.now,
              wake: () => wakeQueue?.(),
              events: queueEvents,
              log: log.child({ part: 'queue-controls' }),
            }),
            writable: auth !== undefined || isLoopbackHost(config.server.host),
            defaultBy: auth?.username ?? 'operator',
          }),
        );
        app.use(
          createStatusRouter({
            store,
            ...(store.fleet ? { fleet: store.fleet } : {}),
            rules,
            ...(repository ? { repositoryRules: () => repository.state() } : {}),
            recentDeliveries: deliveries.list,
            // The names the scheduler runs them by, and records their last success under.
            sweeps: enabledSweeps(config),
            secrets: [token, secret, signatureSecret, statusAuth.password, config.git.password],
          }),
        );
      },
      onDelivery: (outcome, info) => {
        deliveries.record(outcome, info);
        metrics.delivery(info.kind, outcome);
        metrics.ack(info.ackMs / 1000);
        if (outcome === 'accepted' && info.id !== undefined) hookToAction.accepted(info.id);
      },
      onQueueDepth: (depth) => metrics.queueDepth(depth),
      log: log.child({ part: 'pipeline' }),
      refusalHint: overrides.webhookSecret
        ? "the project hook's secret token must equal the one this run generated (npm start registers it itself)"
        : "the project hook's secret token must equal webhook.secret (HOOKBOT_WEBHOOK_SECRET)",
    });
  } catch (error) {
    rules.close();
    await store.close();
    throw error;
  }

  // The merge queue's git commands, at debug level (redacted by the updater and again by the logger).
  const gitLog = log.child({ part: 'git' });
  // The scheduler: sweeps reconcile what hooks missed, on the same client, rules and executor.
  const sweeps = createSweepSet(
    {
      client: bot.client,
      store: observed,
      rules: projectRules,
      executor: executor!,
      brake,
      ...(reader ? { reader } : {}),
      ...(identity ? { bot: identity } : {}),
      log: log.child({ part: 'sweep' }),
      onEvaluated,
      queueEvents,
      queueMetrics: metrics.mergeQueue,
      ...gitAccessOf(
        overrides.git ? { ...config, git: { ...config.git, ...overrides.git } } : config,
        identity?.username,
        (line) => gitLog.debug(line),
      ),
    },
    sweepSettingsOf(config),
  );
  // Rules reloaded with a rule removed: its pending actions are withdrawn, not left to fire. With
  // repository rules, a project whose .hookbot.yml was not read since the start keeps its actions
  // (its rules are not known yet), and a change of a .hookbot.yml withdraws the same way.
  const withdrawRemoved = () => {
    void withdrawRemovedRules(store, executor!, (path) =>
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
    if (config.scheduler.sweeps.merge_queue.enabled) wakeQueue = () => scheduler.wake('merge_queue');
    if (config.scheduler.sweeps.merge_watch.enabled) wakeWatch = () => scheduler.wake('merge_watch');
  }

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

/** The client option for `rules.status_authors` (none when the list is empty: every author counts). */
function trustOf(
  authors: readonly string[],
  bot: () => string | undefined,
): Pick<ClientOptions, 'statusTrust'> {
  const trust = statusTrust(authors, bot);
  return trust ? { statusTrust: trust } : {};
}

/** A delivery about a commit on a merge train's branch (`ref` of a Build Hook, or a pipeline's). */
function onTrainBranch(body: unknown, prefix: string): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const record = body as { ref?: unknown; object_attributes?: { ref?: unknown } };
  const ref = typeof record.ref === 'string' ? record.ref : record.object_attributes?.ref;
  return typeof ref === 'string' && ref.replace(/^refs\/heads\//, '').startsWith(prefix);
}
