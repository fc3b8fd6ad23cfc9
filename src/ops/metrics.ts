/**
 * Prometheus metrics (issue 7, "Operations"), on a registry of their own (not prom-client's
 * global one) so that tests and a second instance in one process do not share counters. Callers
 * use the typed helpers; label values are bounded sets (event kinds, rule names, route templates,
 * never concrete paths or ids).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { KNOWN_KINDS, type DeliveryOutcome } from '../events/index.ts';
import type { CallStatus, QueueMetricsSink } from '../rules/index.ts';
import { mergeQueueMetrics, type QueueSource } from './queue-metrics.ts';

export type { DeliveryOutcome };

/**
 * The `kind` label of deliveries: the hook format's object kinds, `unknown` for a delivery without
 * one, and `other` for any other text. A label value is a series kept for the process's life, and
 * `object_kind` is whatever the sender wrote: taken as received, invented kinds would grow
 * /metrics without bound. The receiver's list of known kinds, so the two cannot drift apart.
 */
const deliveryKindLabels = new Set<string>(KNOWN_KINDS);

export function deliveryKindLabel(kind: string | undefined): string {
  if (kind === undefined) return 'unknown';
  return deliveryKindLabels.has(kind) ? kind : 'other';
}

/** What made the engine evaluate an item: deliveries (an item run of the pipeline), or a sweep's run. */
export const EVALUATION_SOURCES = ['hook', 'sweep'] as const;
export type EvaluationSource = (typeof EVALUATION_SOURCES)[number];

/**
 * The `result` label of `hookbot_rule_actions_total`: every outcome the executor gives an action, each
 * its own value (docs/operations.md#metrics lists them). A closed set: `actionResultOf` maps each
 * executor status to one, and the compiler refuses a new status until it has its value here.
 */
export const ACTION_RESULTS = [
  'done',
  'skipped',
  'failed',
  'ambiguous',
  'parked',
  'withdrawn',
  'dry_run',
] as const;
export type ActionResult = (typeof ACTION_RESULTS)[number];

const RESULT_OF_STATUS: Record<CallStatus, ActionResult> = {
  done: 'done',
  skipped: 'skipped',
  failed: 'failed',
  ambiguous: 'ambiguous',
  withdrawn: 'withdrawn',
  'dry-run': 'dry_run',
};

/**
 * An action's result label: its status, except that a failure which parked the action (a permanent
 * error, or the last of its tries) is `parked`, apart from a failure that will be retried.
 */
export function actionResultOf(call: { status: CallStatus; parked?: string | undefined }): ActionResult {
  if (call.parked !== undefined && call.status === 'failed') return 'parked';
  return RESULT_OF_STATUS[call.status];
}

/**
 * The `result` label of `hookbot_sweep_runs_total`, and what the status page's "Last success" follows
 * (scheduler.ts): `ok` the run finished and its report needs no one's attention; `paused` the
 * circuit breaker paused a scheduled rule in it; `failed` the run threw, or its report has a failure
 * (what makes `hookbot sweep --once` exit 1); `stopped` the bot stopped it before its end.
 */
export const SWEEP_RESULTS = ['ok', 'failed', 'paused', 'stopped'] as const;
export type SweepResult = (typeof SWEEP_RESULTS)[number];

/** One API call, as the client's `onCall` hook reports it (src/api/http.ts `ApiCall`). */
export interface ApiCallSample {
  method: string;
  /** The route template (`/projects/:id/issues`), never the concrete path: labels must stay few. */
  route: string;
  /** undefined when no answer came (network error, timeout). */
  status: number | undefined;
  durationMs: number;
}

export interface CreateMetricsOptions {
  /** Process metrics (CPU, memory, event loop, GC). Default true. */
  defaultMetrics?: boolean;
}

export interface Metrics {
  readonly registry: Registry;
  /** The Content-Type of the exposition text, for GET /metrics. */
  readonly contentType: string;
  /** The exposition text. */
  text(): Promise<string>;
  /** `kind` as received (undefined when the delivery had none): counted under deliveryKindLabel(kind). */
  delivery(kind: string | undefined, outcome: DeliveryOutcome): void;
  queueDepth(depth: number): void;
  evaluation(source: EvaluationSource): void;
  ruleMatch(rule: string): void;
  ruleAction(rule: string, action: string, result: ActionResult): void;
  apiCall(call: ApiCallSample): void;
  /** From a delivery's arrival to its answer. */
  ack(seconds: number): void;
  /** One group commit of the state store, until its fdatasync is seen done (every answer waits for one). */
  stateCommit(seconds: number): void;
  /** The engine's evaluation of the rules for one item in an item run (rules/item/process-item.ts). */
  evaluationTime(seconds: number): void;
  /** From a delivery's acceptance to an action it caused taking effect (hook-to-action.ts). */
  hookToAction(seconds: number): void;
  sweepRun(sweep: string, result: SweepResult): void;
  breakerTrip(rule: string): void;
  /** The merge queue's events (`hookbot_merge_queue_*`, queue-metrics.ts). */
  readonly mergeQueue: QueueMetricsSink;
  /** Where `hookbot_merge_queue_entries` and `_trouble` read the queues from when scraped (the store). */
  watchMergeQueues(source: QueueSource): void;
}

export function createMetrics(options: CreateMetricsOptions = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const deliveries = new Counter({
    name: 'hookbot_deliveries_total',
    help: 'Hook deliveries received, by event kind and how they were answered.',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  });
  const queueDepth = new Gauge({
    name: 'hookbot_queue_depth',
    help: 'Accepted deliveries the pipeline holds in memory and has not finished processing (at most pipeline.queue_limit; more wait in the inbox).',
    registers,
  });
  const evaluations = new Counter({
    name: 'hookbot_evaluations_total',
    help: 'Rule evaluations of one item, by what caused them.',
    labelNames: ['source'] as const,
    registers,
  });
  const ruleMatches = new Counter({
    name: 'hookbot_rule_matches_total',
    help: 'Items a rule matched.',
    labelNames: ['rule'] as const,
    registers,
  });
  const ruleActions = new Counter({
    name: 'hookbot_rule_actions_total',
    help: 'Outcomes of the actions rules planned, each time the executor settles one, by rule, action and result (done, skipped, failed, ambiguous, parked, withdrawn, dry_run).',
    labelNames: ['rule', 'action', 'result'] as const,
    registers,
  });
  const apiCalls = new Counter({
    name: 'hookbot_api_calls_total',
    help: 'API calls (every attempt), by method, route template and status ("error": no answer).',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const apiDuration = new Histogram({
    name: 'hookbot_api_call_duration_seconds',
    help: 'Duration of API calls, by method and route template.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  // Real servers give a delivery 10 s before they count it failed (docs/server-behaviour.md#hook-delivery): the buckets
  // are fine-grained where an answer should be and reach far enough to see trouble.
  const ack = new Histogram({
    name: 'hookbot_ack_seconds',
    help: 'From the arrival of a delivery to its answer.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10],
    registers,
  });
  // The disk's share of the ack: under load its tail, not the CPU, sets the ack's p99.
  const stateCommit = new Histogram({
    name: 'hookbot_state_commit_seconds',
    help: 'One group commit of the state store: from its write until the fdatasync that makes accepted deliveries durable is seen done.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers,
  });
  const evaluationTime = new Histogram({
    name: 'hookbot_evaluation_seconds',
    help: "The engine's evaluation of the rules for one item in an item run (hook, reconcile, merge watch, merge queue, retries): from the fresh snapshot to the plan, without the reads and the calls.",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers,
  });
  const hookToAction = new Histogram({
    name: 'hookbot_hook_to_action_seconds',
    help: 'From the acceptance of a delivery (its 202) to an action its item run carried out taking effect (done), one sample per action; a run serving several deliveries counts from the earliest.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers,
  });
  const sweepRuns = new Counter({
    name: 'hookbot_sweep_runs_total',
    help: 'Scheduled sweep runs, by sweep and result (ok, failed, paused, stopped).',
    labelNames: ['sweep', 'result'] as const,
    registers,
  });
  const breakerTrips = new Counter({
    name: 'hookbot_breaker_trips_total',
    help: 'Times the circuit breaker paused a scheduled rule.',
    labelNames: ['rule'] as const,
    registers,
  });

  const mergeQueue = mergeQueueMetrics(registers);

  return {
    registry,
    contentType: registry.contentType,
    mergeQueue: mergeQueue.sink,
    watchMergeQueues: mergeQueue.watch,
    text: () => registry.metrics(),
    delivery: (kind, outcome) => deliveries.inc({ kind: deliveryKindLabel(kind), outcome }),
    queueDepth: (depth) => queueDepth.set(depth),
    evaluation: (source) => evaluations.inc({ source }),
    ruleMatch: (rule) => ruleMatches.inc({ rule }),
    ruleAction: (rule, action, result) => ruleActions.inc({ rule, action, result }),
    apiCall: ({ method, route, status, durationMs }) => {
      apiCalls.inc({ method, route, status: status === undefined ? 'error' : String(status) });
      apiDuration.observe({ method, route }, durationMs / 1000);
    },
    ack: (seconds) => ack.observe(seconds),
    stateCommit: (seconds) => stateCommit.observe(seconds),
    evaluationTime: (seconds) => evaluationTime.observe(seconds),
    hookToAction: (seconds) => hookToAction.observe(seconds),
    sweepRun: (sweep, result) => sweepRuns.inc({ sweep, result }),
    breakerTrip: (rule) => breakerTrips.inc({ rule }),
  };
}
