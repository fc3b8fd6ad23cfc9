/**
 * From a loaded configuration to a running bot: state store, rules (reloading), executor, item
 * processor, receiver and pipeline, logs and metrics. `hookbot serve` and `npm start` (on the
 * embedded sandbox) both come through here, so they run the same thing.
 */
import type { Config } from './config/schema.ts';
import { startBot, type Bot } from './bot.ts';
import type { HookbotLogger } from './ops/logger.ts';
import type { Metrics } from './ops/metrics.ts';
import { withDecisionMetrics } from './ops/decision-metrics.ts';
import { createExecutor, type Executor } from './rules/executor.ts';
import {
  createScheduler,
  createSweepSet,
  scheduledSweepsOf,
  sweepSettingsOf,
  type SweepSet,
} from './scheduler/index.ts';
import { createFreshCheck } from './rules/fresh-check.ts';
import { createItemProcessor, type Decision } from './rules/process-item.ts';
import { createSnapshotReader, type SnapshotReader } from './rules/read-snapshot.ts';
import type { BotIdentity } from './rules/snapshot.ts';
import { withdrawRemovedRules } from './rules/withdraw.ts';
import { createRulesHolder, type RulesHolder } from './rules/rules-holder.ts';
import { createFileStore } from './state/file-store.ts';
import type { StateStore } from './state/store.ts';
import type { RequestHandler } from 'express';
import { basicAuth } from './status/basic-auth.ts';
import { createDeliveryLog, createStatusRouter } from './status/status-page.ts';

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
}

export async function startRuntime(
  config: Config,
  deps: { log: HookbotLogger; metrics: Metrics },
  overrides: RuntimeOverrides = {},
): Promise<Runtime> {
  const { log, metrics } = deps;
  const apiUrl = overrides.api?.url ?? config.api.url;
  const token = overrides.api?.token ?? config.api.token;
  if (!apiUrl || !token) throw new Error('api.url and api.token are needed to run against a server');
  const secret = overrides.webhookSecret ?? config.webhook.secret;
  log.addSecret(token);
  if (secret) log.addSecret(secret);
  const signatureSecret = config.webhook.signature.secret;
  if (signatureSecret) log.addSecret(signatureSecret);

  const store = createFileStore({
    path: config.state.path,
    dedupTtlMs: config.state.dedup_ttl_ms,
    decisionItems: config.state.decisions,
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

  // Every decision recorded (hooks and sweeps) also counts into the metrics.
  const observed = withDecisionMetrics(store, metrics);
  if (config.rules.watch) rules.watch();

  const deliveries = createDeliveryLog();
  const statusAuth = config.server.status_auth;

  let bot: Bot;
  let executor: Executor | undefined;
  let reader: SnapshotReader | undefined;
  let identity: BotIdentity | undefined;
  try {
    bot = await startBot({
      api: {
        baseUrl: apiUrl,
        token,
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
      },
      store,
      pipeline: {
        debounceMs: config.pipeline.debounce_ms,
        concurrency: config.pipeline.concurrency,
        queueLimit: config.pipeline.queue_limit,
      },
      processor: ({ client, identity: bot }) => {
        identity = bot;
        // One reader and one executor for hooks and sweeps alike: the executor's per-item lock
        // keeps them from acting on one item at once. Merges, armings and cancels are made only
        // while a fresh evaluation still plans them (fresh-check.ts).
        reader = createSnapshotReader(client, { bot });
        executor = createExecutor({
          client,
          store,
          bot,
          freshCheck: createFreshCheck({ reader, rules }),
          log: log.child({ part: 'executor' }),
        });
        return createItemProcessor({
          client,
          store: observed,
          rules,
          executor,
          reader,
          log: log.child({ part: 'process' }),
        });
      },
      explain: async (project, kind, id) => {
        // Decisions are kept by item key (`issue:<project id>:<id>`); a path is looked up once.
        const projectId = /^\d+$/.test(project)
          ? Number(project)
          : (await bot.client.projects.get(project)).id;
        return (
          (store.latestDecision(`${kind}:${projectId}:${id}`)?.decision as Decision | undefined) ?? undefined
        );
      },
      extendApp: (app) => {
        // The same optional basic auth guards the status page and the metrics.
        const auth =
          statusAuth.username && statusAuth.password
            ? { username: statusAuth.username, password: statusAuth.password }
            : undefined;
        const guard: RequestHandler = auth ? basicAuth(auth) : (_req, _res, next) => next();
        app.get('/metrics', guard, async (_req, res) => {
          res.set('content-type', metrics.contentType).send(await metrics.text());
        });
        app.use(
          createStatusRouter({
            store,
            rules,
            recentDeliveries: deliveries.list,
            sweeps: Object.entries(config.scheduler.sweeps)
              .filter(([, sweep]) => sweep.enabled)
              .map(([name]) => name),
            secrets: [token, secret, signatureSecret, statusAuth.password],
            auth,
          }),
        );
      },
      onDelivery: (outcome, info) => {
        deliveries.record(outcome, info);
        metrics.delivery(info.kind ?? 'unknown', outcome);
        metrics.ack(info.ackMs / 1000);
      },
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

  // The scheduler: sweeps reconcile what hooks missed, on the same client, rules and executor.
  const sweeps = createSweepSet(
    {
      client: bot.client,
      store: observed,
      rules,
      executor: executor!,
      ...(reader ? { reader } : {}),
      ...(identity ? { bot: identity } : {}),
      log: log.child({ part: 'sweep' }),
    },
    sweepSettingsOf(config),
  );
  // Rules reloaded with a rule removed: its pending actions are withdrawn, not left to fire.
  rules.onReload(() => {
    void withdrawRemovedRules(store, executor!, (path) => rules.forProject(path)).catch((error: unknown) =>
      log.error({ err: error }, 'could not withdraw the actions of removed rules'),
    );
  });
  const scheduler = createScheduler({
    sweeps: scheduledSweepsOf(config, sweeps),
    store,
    log: log.child({ part: 'scheduler' }),
  });
  if (overrides.scheduler !== false) scheduler.start();

  let closing: Promise<void> | undefined;
  return {
    bot,
    store,
    rules,
    sweeps,
    close() {
      closing ??= (async () => {
        rules.close();
        await scheduler.stop();
        await bot.close();
        await store.close();
      })();
      return closing;
    },
  };
}
