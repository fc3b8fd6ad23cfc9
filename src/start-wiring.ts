/**
 * The running bot's parts wired together (start-from-config.ts assembles them): what watches it
 * work (metrics, the merge queue's story), its API client's options, and what the bot runs on: its
 * server and hooks, the item processor, `/explain` and the ops routes. The parts known only once
 * the bot or the scheduler runs (its client and identity, the wakes) are filled in as they come
 * (`Late`).
 */
import type { Config } from './config/index.ts';
import type { BotOptions } from './start-bot.ts';
import type { HookbotLogger, Metrics } from './ops/index.ts';
import { actionResultOf, createHookToAction, withDecisionMetrics } from './ops/index.ts';
import { createQueueControlRoutes, hostCheck, isLoopbackHost } from './receiver/index.ts';
import { createQueueControls, enabledSweeps } from './scheduler/index.ts';
import { createClient, statusTrust, type Client, type ClientOptions } from './api/index.ts';
import type { StateStore } from './state/index.ts';
import type { createDeliveryLog } from './status/index.ts';
import { basicAuth, createStatusRouter } from './status/index.ts';
import type { createRepositoryRules, repositoryPolicy } from './rules/index.ts';
import {
  type BotIdentity,
  type CallReport,
  type EchoBrake,
  type Executor,
  type ItemRuns,
  type ProjectRules,
  type RulesHolder,
  type SnapshotReader,
  createExecutor,
  createFreshCheck,
  createItemProcessor,
  createQueueEvents,
  createSnapshotReader,
  explainAnswer,
  findDecision,
  itemKeyOf,
} from './rules/index.ts';

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

export interface StartChecked {
  auth: { username: string; password: string } | undefined;
  repositoryPolicy: ReturnType<typeof repositoryPolicy> | undefined;
  apiUrl: string;
  token: string;
  secret: string | undefined;
  signatureSecret: string | undefined;
}

export function observersOf(config: Config, store: StateStore, metrics: Metrics, log: HookbotLogger) {
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
  return { observed, queueEvents, hookToAction, onResult, onEvaluated };
}

/**
 * What is known only once the bot runs (its client and identity: the processor) or once the
 * scheduler does (its wakes).
 */
export interface Late {
  /**
   * Hooks drive the merge queue (docs/merge-queue.md): after an item run that concerns a merge
   * request in a queue (its status changed, it was queued, relabelled, pushed to, merged, closed),
   * the merge_queue sweep is woken instead of waiting for its next tick. Set once the scheduler runs.
   */
  wakeQueue?: () => void;
  /**
   * The same for the merge watch (the bot's own merge when the build succeeds): a status hook of a
   * watched merge request runs it at once rather than at its next tick.
   */
  wakeWatch?: () => void;
  executor?: Executor;
  reader?: SnapshotReader;
  identity?: BotIdentity;
  botClient?: Client;
}

/** The parts of the running bot, as the steps of the start hand them on. */
export interface Wiring {
  config: Config;
  overrides: RuntimeOverrides;
  log: HookbotLogger;
  metrics: Metrics;
  start: StartChecked;
  store: StateStore;
  rules: RulesHolder;
  repository: ReturnType<typeof createRepositoryRules> | undefined;
  projectRules: ProjectRules;
  observers: ReturnType<typeof observersOf>;
  deliveries: ReturnType<typeof createDeliveryLog>;
  late: Late;
  apiOptions: ClientOptions;
  brake: EchoBrake;
  itemRuns: ItemRuns;
}

/** The API client's options: the server, whose statuses count, and each call counted and logged. */
export function apiOptionsOf(
  config: Config,
  start: StartChecked,
  metrics: Metrics,
  log: HookbotLogger,
  late: Late,
): ClientOptions {
  return {
    baseUrl: start.apiUrl,
    token: start.token,
    // Whose commit statuses count (rules.status_authors); the bot's own once it knows its user.
    ...trustOf(config.rules.status_authors, () => late.identity?.username ?? config.api.bot_username),
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
}

/** What the bot runs on: its server, the hooks it takes, its pipeline, its ops routes. */
export function botOptionsOf(wiring: Wiring): BotOptions {
  const { config, overrides, log, metrics, store, repository, deliveries, late, apiOptions, itemRuns } =
    wiring;
  const { secret, signatureSecret, auth } = wiring.start;
  const { hookToAction } = wiring.observers;
  return {
    api: apiOptions,
    // A build or status on a merge train's car names no merge request's head: it wakes the queue.
    onAcceptedBody: (_kind, body) => {
      if (onTrainBranch(body, config.git.train_branch_prefix)) late.wakeQueue?.();
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
    processor: processorOf(wiring),
    // From what the store recorded only: a caller never makes the bot call the API.
    explain: explainOf(wiring.store),
    // The status page, /metrics and /explain: the Host check, then the optional basic auth.
    protect: [hostCheck(config.server.allowed_hosts), ...(auth ? [basicAuth(auth)] : [])],
    readinessTtlMs: overrides.readinessTtlMs,
    extendApp: extendAppOf(wiring),
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
  };
}

/**
 * The item processor, once the bot knows its client and identity: one reader and one executor for
 * hooks and sweeps alike, and after each item run the wakes of the merge queue and watch and the
 * review of a .hookbot.yml the merge request changes.
 */
function processorOf(wiring: Wiring): BotOptions['processor'] {
  const { log, metrics, store, repository, projectRules, late, apiOptions, brake, itemRuns } = wiring;
  const { observed, onResult, onEvaluated } = wiring.observers;
  const watched = (item: { type: string; projectId: number; id: number }): boolean =>
    item.type === 'merge_request' &&
    store.watched().some((entry) => entry.itemKey === itemKeyOf('merge_request', item.projectId, item.id));
  const inQueue = (item: { type: string; projectId: number; id: number }): boolean =>
    item.type === 'merge_request' &&
    store
      .queued()
      .some((entry) => !entry.left && entry.projectId === item.projectId && entry.mrId === item.id);
  return ({ client, identity: bot }) => {
    late.identity = bot;
    late.botClient = client;
    // The plan of a merge request's .hookbot.yml counts its API calls on a client of its own.
    repository?.attach({ client, bot, planClient: () => createClient(apiOptions) });
    // One reader and one executor for hooks and sweeps alike: the executor's per-item lock
    // keeps them from acting on one item at once. Merges, armings and cancels are made only
    // while a fresh evaluation still plans them (fresh-check.ts).
    const reader = createSnapshotReader(client, {
      bot,
      watching: (itemKey) => store.watched().some((entry) => entry.itemKey === itemKey),
    });
    late.reader = reader;
    const executor = createExecutor({
      client,
      store,
      bot,
      runs: itemRuns,
      freshCheck: createFreshCheck({ reader, rules: projectRules }),
      log: log.child({ part: 'executor' }),
      onResult,
    });
    late.executor = executor;
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
        if (wasQueued || inQueue(item)) late.wakeQueue?.();
        if (watched(item)) late.wakeWatch?.();
      }
      await repository
        ?.reviewMergeRequest(item, triggers)
        .catch((error: unknown) =>
          reviewLog.warn({ err: error }, 'could not review the .hookbot.yml of a merge request'),
        );
    };
  };
}

/** `/explain`: from what the store recorded only (a caller never makes the bot call the API). */
function explainOf(store: StateStore): BotOptions['explain'] {
  return async (query, selector) => {
    const found = findDecision(store.latestDecisions(), query, {
      entries: store.queued(),
      now: Date.now(),
      paused: store.pausedRules(),
      controls: store.queueControls(),
    });
    if (!found.found) return found;
    // The item's kept decisions: the ones that acted outlive the echoes of the bot's own changes.
    return explainAnswer(found, await store.keptDecisions(found.record.itemKey), selector);
  };
}

/** The ops routes beside the status page: /metrics, the merge queues' controls, the status router. */
function extendAppOf(wiring: Wiring): BotOptions['extendApp'] {
  const { config, log, metrics, store, rules, repository, deliveries, late } = wiring;
  const { auth, token, secret, signatureSecret } = wiring.start;
  const statusAuth = config.server.status_auth;
  return (app) => {
    app.get('/metrics', async (_req, res) => {
      res.set('content-type', metrics.contentType).send(await metrics.text());
    });
    // An operator's controls of the merge queues (docs/merge-queue.md#steering-the-queue).
    app.use(
      createQueueControlRoutes({
        controls: createQueueControls({
          client: late.botClient!,
          store,
          executor: late.executor!,
          now: Date.now,
          wake: () => late.wakeQueue?.(),
          events: wiring.observers.queueEvents,
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
  };
}

/** The sweeps, on the bot's client, rules and executor, and the scheduler that runs them. */
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
