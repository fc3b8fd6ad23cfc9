/**
 * The bot's hook side, assembled: API client, state store, rules, processing pipeline and receiver
 * server (start-from-config.ts adds the scheduler beside it). A factory with every setting passed in: reading the environment and files
 * is the CLI's job, so tests and the demo start a bot the same way.
 */
import type { Server } from 'node:http';
import { createHookHandler, type DeliveryOutcome } from './receiver/index.ts';
import { createRefusalLog } from './receiver/index.ts';
import { createOpsApp, type OpsAppOptions } from './receiver/index.ts';
import {
  createPipeline,
  type BotIdentity,
  type ItemProcessor,
  type Pipeline,
  type PipelineLog,
  type PipelineOptions,
} from './receiver/index.ts';
import { createReadiness } from './receiver/index.ts';
import { createHintResolver } from './receiver/index.ts';
import { createSecretRefusalLog, reportRefusals } from './receiver/index.ts';
import { createReceiverServer, listen } from './receiver/index.ts';
import type { VerifyOptions } from './receiver/index.ts';
import { StateError } from './state/index.ts';
import { createItemRuns, type ItemRuns } from './rules/index.ts';
import type { StateStore } from './state/index.ts';
import { ApiError, type Client, type ClientOptions, createClient } from './api/index.ts';

export interface BotLog extends PipelineLog {
  debug(obj: object, msg: string): void;
}

export interface BotOptions {
  api: ClientOptions;
  /** The bot's own user (loop prevention); read from `GET /user` when not given. */
  identity?: BotIdentity;
  webhook: VerifyOptions;
  server: {
    host: string;
    port: number;
    hookPath: string;
    bodyLimitBytes?: number;
    /** Bytes of bodies being read at once, all deliveries together (hook-handler.ts). */
    readingLimitBytes?: number;
  };
  store: StateStore;
  pipeline?: { debounceMs?: number; concurrency?: number; queueLimit?: number };
  /** Sees each event before its items are resolved (repository rules: pushes that change .hookbot.yml). */
  onEvent?: PipelineOptions['onEvent'];
  /**
   * One item, one run at a time (rules/executor/lock.ts): the same as the executor's and the
   * sweeps', so a hook run and a sweep never work on one item at once. Default: one for the
   * pipeline alone (across the fleet with PostgreSQL).
   */
  itemRuns?: ItemRuns;
  /** Does the work for one item. Built from the client: the rule engine in production, anything in tests. */
  processor: (context: { client: Client; identity: BotIdentity }) => ItemProcessor;
  /** The latest decision for an item, for `/explain`: from recorded state, never the API. */
  explain?: OpsAppOptions['explain'];
  /** Host check and authentication of every route but /healthz and /readyz. */
  protect?: OpsAppOptions['protect'];
  extendApp?: OpsAppOptions['extend'];
  /** How long a readiness result is reused (default readiness.ts's). */
  readinessTtlMs?: number;
  log: BotLog;
  /** What a refused delivery's log line tells to fix (where the secret is set). */
  refusalHint?: string;
  /** Told of each accepted delivery's kind and body (a merge train's car status wakes the queue). */
  onAcceptedBody?: (kind: string, body: unknown) => void;
  onDelivery?: (
    outcome: DeliveryOutcome,
    info: { id?: string; kind?: string; status: number; ackMs: number },
  ) => void;
  /** The deliveries the pipeline holds in memory, whenever that changes (metrics). */
  onQueueDepth?: (depth: number) => void;
}

export interface Bot {
  /** e.g. `http://127.0.0.1:3000` */
  url: string;
  /** e.g. `http://127.0.0.1:3000/hooks` */
  hookUrl: string;
  client: Client;
  identity: BotIdentity;
  pipeline: Pipeline;
  server: Server;
  /** Stops accepting, lets running item runs finish, persists the rest (it stays in the inbox). */
  close(): Promise<void>;
}

/** Errors worth waiting out: the server is away or overloaded, not wrong. */
export function isTransient(error: unknown): boolean {
  return (
    (error instanceof ApiError && error.retryable) ||
    // The state database away (PostgreSQL): the run is tried again, its deliveries kept.
    (error instanceof StateError && error.code === 'unavailable')
  );
}

export async function startBot(options: BotOptions): Promise<Bot> {
  const client = createClient(options.api);
  const identity = options.identity ?? (await readIdentity(client));
  const store = options.store;

  const pipeline = createPipeline({
    store,
    resolver: createHintResolver(client),
    process: options.processor({ client, identity }),
    bot: identity,
    debounceMs: options.pipeline?.debounceMs,
    concurrency: options.pipeline?.concurrency,
    queueLimit: options.pipeline?.queueLimit,
    isTransient,
    log: options.log,
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    // One run per item: shared with the sweeps (the executor's) when given, and across the fleet.
    runs: options.itemRuns ?? createItemRuns(store.fleet ? { fleet: store.fleet, log: options.log } : {}),
    ...(options.onQueueDepth ? { onDepth: options.onQueueDepth } : {}),
  });
  // Deliveries another replica accepted and can no longer finish (its lease ran out) come here.
  store.fleet?.onAdopted(() => pipeline.resume());

  const refusals = createRefusalLog(options.log);
  /** Copies of accepted deliveries seen so far: each re-run hint gets an id of its own. */
  let duplicates = 0;
  const hookHandler = createHookHandler({
    verify: options.webhook,
    inbox: store,
    limitBytes: options.server.bodyLimitBytes,
    readingLimitBytes: options.server.readingLimitBytes,
    // The store's handle on the delivery, not the parsed body: a delivery waiting for its turn (or
    // for the server to come back) then holds only its stored text.
    onAccepted: (delivery) => {
      options.onAcceptedBody?.(delivery.kind, delivery.body);
      pipeline.wake(store.delivery(delivery.id, delivery.kind, delivery.body));
    },
    // A copy of a delivery already accepted: its items run again on their fresh state (a run is
    // level-triggered, so a true redelivery costs a re-read and nothing else). Under its own id,
    // not stored: a hint, which a crash may lose and the sweeps then cover.
    onDuplicate: (delivery) =>
      pipeline.wake({ id: `${delivery.id}+again-${++duplicates}`, kind: delivery.kind, body: delivery.body }),
    onOutcome: (outcome, info) => {
      options.onDelivery?.(outcome, info);
      // A full inbox refuses every delivery until some are processed: one line per burst.
      if (outcome === 'inbox_full' || outcome === 'overloaded') refusals.refused(outcome, info.reason ?? '');
      else if (outcome === 'accepted') refusals.accepted(performance.now() - info.ackMs);
      // The delivery id where there is one (accepted, duplicate): the same id then marks every line
      // of its processing (the pipeline's log context), so one filter follows it from the door on.
      // Logged after the answer went out; debug lines cost a level check when off.
      if (outcome === 'error')
        options.log.error({ delivery: info.id, kind: info.kind, err: info.error }, 'delivery not accepted');
      else if (outcome === 'accepted' || outcome === 'duplicate')
        options.log.debug({ delivery: info.id, kind: info.kind, ackMs: info.ackMs }, `delivery ${outcome}`);
    },
  });

  // The API check is one call per TTL, however often /readyz is asked.
  const ready = createReadiness({
    checks: [
      // With PostgreSQL, ready means the database answers: a replica that cannot reach it would
      // refuse every delivery (503), so the load balancer sends them to one that can.
      { name: 'state', check: async () => (store.fleet ? store.fleet.ping() : void store.stats()) },
      { name: 'api', check: async () => void (await client.users.current()) },
    ],
    ttlMs: options.readinessTtlMs,
    log: options.log,
  });
  const app = createOpsApp({
    ready,
    explain: options.explain,
    protect: options.protect,
    extend: options.extendApp,
  });
  // A hook with a wrong secret token is refused (401) and the server ignores the answer: logged here,
  // rate-limited, so whoever set the hook up can see why the bot never acts.
  const secretRefusals = createSecretRefusalLog(options.log, {
    hint: options.refusalHint ?? "the project hook's secret token must equal the bot's webhook secret",
  });
  const server = createReceiverServer({
    hookPath: options.server.hookPath,
    hookHandler: reportRefusals(hookHandler, secretRefusals.refused),
    app,
  });
  const { url } = await listen(server, options.server.port, options.server.host);
  // What a crash or a stop left unprocessed goes first.
  pipeline.resume();

  return {
    url,
    hookUrl: `${url}${options.server.hookPath}`,
    client,
    identity,
    pipeline,
    server,
    async close() {
      secretRefusals.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await pipeline.stop();
    },
  };
}

async function readIdentity(client: Client): Promise<BotIdentity> {
  const me = await client.users.current();
  return { id: me.id, username: me.username };
}
