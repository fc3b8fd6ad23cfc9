/**
 * The probes of test/e2e/figures-move.test.ts: what "moved" means for each figure docs/operations.md
 * lists, on one read of `/metrics` or `/status.json`, which of that test's bots moves it, and the
 * watcher that gives every read to every probe. They name what that test's scenarios do (their
 * rules, their sweeps, their projects, their replica).
 */
import { waitFor } from '../helpers/wait-for.ts';

/** Generous: a busy 2-core machine runs the sandbox, the proxy and the bot at once. */
export const LONG = 90_000;

// ---------------------------------------------------------------------------------------------
// Reading /metrics

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the series of `name` whose labels include `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/**
 * Which bot of the test shows a figure: `file` the first (the state file, the merge_queue sweep off),
 * `postgres` the fleet's, `queue` the one whose merge queues run (a train and a blocked queue).
 */
export type Bot = 'file' | 'postgres' | 'queue';

type MetricProbe = (samples: Sample[]) => boolean;

/** What "moved" means for each metric family the first bot moves, on one read of /metrics. */
const PIPELINE_METRIC_PROBES: Record<string, MetricProbe> = {
  hookbot_deliveries_total: (m) =>
    total(m, 'hookbot_deliveries_total', { kind: 'issue', outcome: 'accepted' }) > 0 &&
    total(m, 'hookbot_deliveries_total', { kind: 'merge_request', outcome: 'accepted' }) > 0,
  // A gauge: it moved when it was seen above zero (deliveries held while an item run waits).
  hookbot_queue_depth: (m) => total(m, 'hookbot_queue_depth') > 0,
  hookbot_evaluations_total: (m) => total(m, 'hookbot_evaluations_total', { source: 'hook' }) > 0,
  hookbot_rule_matches_total: (m) =>
    total(m, 'hookbot_rule_matches_total', { rule: 'triage' }) > 0 &&
    total(m, 'hookbot_rule_matches_total', { rule: 'repository label' }) > 0,
  hookbot_rule_actions_total: (m) =>
    total(m, 'hookbot_rule_actions_total', { rule: 'triage', action: 'label', result: 'done' }) > 0 &&
    total(m, 'hookbot_rule_actions_total', { rule: 'assign ghost', result: 'parked' }) > 0 &&
    total(m, 'hookbot_rule_actions_total', { rule: 'flaky', result: 'withdrawn' }) > 0,
  hookbot_api_calls_total: (m) => total(m, 'hookbot_api_calls_total', { method: 'GET', status: '200' }) > 0,
  hookbot_api_call_duration_seconds: (m) => total(m, 'hookbot_api_call_duration_seconds_count') > 0,
  hookbot_ack_seconds: (m) => total(m, 'hookbot_ack_seconds_count') > 0,
  hookbot_state_commit_seconds: (m) => total(m, 'hookbot_state_commit_seconds_count') > 0,
  hookbot_evaluation_seconds: (m) =>
    total(m, 'hookbot_evaluation_seconds_count') > 0 && total(m, 'hookbot_evaluation_seconds_sum') > 0,
  // Each action a delivery caused: triage's label and comment at least.
  hookbot_hook_to_action_seconds: (m) =>
    total(m, 'hookbot_hook_to_action_seconds_count') >= 2 &&
    total(m, 'hookbot_hook_to_action_seconds_sum') > 0,
  hookbot_sweep_runs_total: (m) =>
    total(m, 'hookbot_sweep_runs_total', { sweep: 'merge_watch', result: 'ok' }) > 0 &&
    total(m, 'hookbot_sweep_runs_total', { sweep: 'rules', result: 'paused' }) > 0,
  hookbot_breaker_trips_total: (m) => total(m, 'hookbot_breaker_trips_total', { rule: 'close stale' }) > 0,
};

/** The projects of the queue bot: a train that runs, and a queue a branch blocks. */
export const TRAIN_PROJECT = 'fig/train';
export const BLOCKED_PROJECT = 'fig/blocked';

/**
 * The merge queue's families (issue 37), moved by the queue bot: a train (depth 2) of three merge
 * requests, one of which fails its CI, and a second project's queue that a branch named like the
 * train's folder keeps from moving.
 */
const QUEUE_METRIC_PROBES: Record<string, MetricProbe> = {
  // A gauge read from the store: both queues seen holding merge requests at once.
  hookbot_merge_queue_entries: (m) =>
    total(m, 'hookbot_merge_queue_entries', { project: TRAIN_PROJECT }) > 0 &&
    total(m, 'hookbot_merge_queue_entries', { project: BLOCKED_PROJECT }) > 0,
  // 1 on the blocked queue while, on the same read, the train (whose steps go through) shows 0.
  hookbot_merge_queue_trouble: (m) =>
    total(m, 'hookbot_merge_queue_trouble', { project: BLOCKED_PROJECT }) === 1 &&
    m.some(
      (s) => s.name === 'hookbot_merge_queue_trouble' && s.labels.project === TRAIN_PROJECT && s.value === 0,
    ),
  // The two merge requests whose CI passes, each landed in a car.
  hookbot_merge_queue_landed_total: (m) =>
    total(m, 'hookbot_merge_queue_landed_total', { mode: 'train' }) >= 2,
  hookbot_merge_queue_time_to_land_seconds: (m) =>
    total(m, 'hookbot_merge_queue_time_to_land_seconds_count', { mode: 'train' }) >= 2 &&
    total(m, 'hookbot_merge_queue_time_to_land_seconds_sum', { mode: 'train' }) > 0,
  // The one whose CI fails, taken out with its comment.
  hookbot_merge_queue_removed_total: (m) =>
    total(m, 'hookbot_merge_queue_removed_total', { reason: 'status_failed' }) > 0,
  hookbot_merge_queue_car_builds_total: (m) =>
    total(m, 'hookbot_merge_queue_car_builds_total', { outcome: 'passed' }) > 0 &&
    total(m, 'hookbot_merge_queue_car_builds_total', { outcome: 'failed' }) > 0,
  hookbot_merge_queue_rounds_total: (m) =>
    total(m, 'hookbot_merge_queue_rounds_total', { mode: 'train' }) > 0,
};

/** What "moved" means for each documented metric family, on one read of /metrics. */
export const METRIC_PROBES: Record<string, MetricProbe> = {
  ...PIPELINE_METRIC_PROBES,
  ...QUEUE_METRIC_PROBES,
};

/** The metric families the bot `bot` moves (the fleet's bot is held to its fields only). */
export function metricsOf(bot: Bot): string[] {
  if (bot === 'file') return Object.keys(PIPELINE_METRIC_PROBES);
  if (bot === 'queue') return Object.keys(QUEUE_METRIC_PROBES);
  return [];
}

// ---------------------------------------------------------------------------------------------
// Reading /status.json

type Status = any;

/** The sweeps the first bot runs (merge_queue is off: the queued merge request stays queued). */
const SWEEPS = ['retries', 'merge_watch', 'rules', 'reconcile', 'hook_check'];
export const REPLICA = 'figures-replica';

/**
 * What "moved" means for each documented field, on one read of /status.json (`first` is the first
 * read of the same bot), and which bot shows it: the fleet exists with PostgreSQL only, the journal
 * and the compactions with the state file only, a queue that cannot move with the queue bot only.
 */
export const FIELD_PROBES: Record<string, { bot: Bot; moved: (s: Status, first: Status) => boolean }> = {
  now: { bot: 'file', moved: (s, first) => s.now > first.now },
  'deliveries.recent': {
    bot: 'file',
    moved: (s) => s.deliveries.recent.some((d: any) => d.kind === 'issue' && d.outcome === 'accepted'),
  },
  'deliveries.pending': { bot: 'file', moved: (s) => s.deliveries.pending > 0 },
  'deliveries.oldestPendingAt': {
    bot: 'file',
    moved: (s) => typeof s.deliveries.oldestPendingAt === 'number' && s.deliveries.oldestPendingAt <= s.now,
  },
  decisions: {
    bot: 'file',
    moved: (s) => s.decisions.some((d: any) => d.matched.includes('triage') && d.text.length > 0),
  },
  // Each with the decision that planned it (issue 30), and the link to explain's answer for it.
  actions: {
    bot: 'file',
    moved: (s) =>
      s.actions.some(
        (a: any) =>
          a.rule === 'triage' &&
          a.status === 'done' &&
          s.decisions.some((d: any) => d.id === a.decision) &&
          a.explain === `explain/fig%2Fweb/issue/${a.item.iid}?decision=${a.decision}`,
      ),
  },
  mergeWatch: {
    bot: 'file',
    moved: (s) =>
      s.mergeWatch.some((w: any) => w.rule === 'arm when pending' && w.required.includes('ci/test')),
  },
  // The line under the title: merge requests queued, and the blocked queue named as stuck.
  queueSummary: {
    bot: 'queue',
    moved: (s) =>
      s.queueSummary.queues >= 1 &&
      s.queueSummary.queued > 0 &&
      s.queueSummary.stuck.includes(`${BLOCKED_PROJECT} → master · default`),
  },
  mergeQueue: { bot: 'file', moved: (s) => s.mergeQueue.some((q: any) => q.position === 1) },
  parked: { bot: 'file', moved: (s) => s.parked.some((p: any) => p.rule === 'assign ghost') },
  pausedRules: { bot: 'file', moved: (s) => s.pausedRules.some((r: any) => r.rule === 'close stale') },
  'sweeps[].nextRun': {
    bot: 'file',
    moved: (s) =>
      s.sweeps.length === SWEEPS.length && s.sweeps.every((w: any) => typeof w.nextRun === 'number'),
  },
  // The figure of issue 30: it said "not yet" forever.
  'sweeps[].lastSuccess': {
    bot: 'file',
    moved: (s) =>
      s.sweeps.length === SWEEPS.length && s.sweeps.every((w: any) => typeof w.lastSuccess === 'number'),
  },
  'rules.loadedAt': { bot: 'file', moved: (s, first) => s.rules.loadedAt > first.rules.loadedAt },
  'rules.files': { bot: 'file', moved: (s) => s.rules.files.includes('default.yml') },
  'rules.problems': { bot: 'file', moved: (s) => s.rules.problems.length > 0 },
  'rules.refused': { bot: 'file', moved: (s) => s.rules.refused === true },
  repositoryRules: {
    bot: 'file',
    moved: (s) => (s.repositoryRules ?? []).some((p: any) => p.project === 'fig/web' && p.rules === 1),
  },
  'stats.inbox': { bot: 'file', moved: (s) => s.stats.inbox > 0 },
  'stats.inboxBytes': { bot: 'file', moved: (s) => s.stats.inboxBytes > 0 },
  'stats.dedupKeys': { bot: 'file', moved: (s) => s.stats.dedupKeys > 0 },
  'stats.outbox': { bot: 'file', moved: (s) => s.stats.outbox > 0 },
  'stats.parked': { bot: 'file', moved: (s) => s.stats.parked > 0 },
  'stats.watched': { bot: 'file', moved: (s) => s.stats.watched > 0 },
  'stats.pausedRules': { bot: 'file', moved: (s) => s.stats.pausedRules > 0 },
  // An operator's pause through the ops port (POST /queues/pause), the way `hookbot queue pause` does.
  'stats.queueControls': { bot: 'queue', moved: (s) => s.stats.queueControls > 0 },
  'stats.decisionItems': { bot: 'file', moved: (s) => s.stats.decisionItems > 0 },
  'stats.recentDecisions': { bot: 'file', moved: (s) => s.stats.recentDecisions > 0 },
  'stats.documentBytes': {
    bot: 'file',
    moved: (s, first) => s.stats.documentBytes > first.stats.documentBytes,
  },
  'stats.journalBytes': { bot: 'file', moved: (s) => s.stats.journalBytes > 0 },
  'stats.journalRecords': { bot: 'file', moved: (s) => s.stats.journalRecords > 0 },
  'stats.commits': { bot: 'file', moved: (s, first) => s.stats.commits > first.stats.commits },
  'stats.fsyncs': { bot: 'file', moved: (s, first) => s.stats.fsyncs > first.stats.fsyncs },
  'stats.compactions': { bot: 'file', moved: (s) => s.stats.compactions > 0 },
  'fleet.replica': { bot: 'postgres', moved: (s) => s.fleet?.replica === REPLICA },
  'fleet.pending': { bot: 'postgres', moved: (s) => (s.fleet?.pending ?? 0) > 0 },
  'fleet.replicas': {
    bot: 'postgres',
    moved: (s, first) =>
      (s.fleet?.replicas ?? []).some(
        (r: any) =>
          r.id === REPLICA &&
          r.seenAt > (first.fleet?.replicas?.find((f: any) => f.id === REPLICA)?.seenAt ?? 0) &&
          r.deliveries > 0,
      ),
  },
};

/**
 * Reads a bot's /metrics and /status.json, and gives every read to every probe: `moved` holds the
 * figures seen to move. `read()` reads once now; `start()` keeps reading in the background.
 */
export function watcher(url: string, bot: Bot) {
  const moved = new Set<string>();
  const labels = new Map<string, Set<string>>();
  let first: Status | undefined;
  let timer: NodeJS.Timeout | undefined;
  let reading: Promise<void> = Promise.resolve();

  async function readNow(): Promise<{ status: Status; samples: Sample[] }> {
    const [statusAnswer, metricsAnswer] = await Promise.all([
      fetch(`${url}/status.json`),
      fetch(`${url}/metrics`),
    ]);
    const status = (await statusAnswer.json()) as Status;
    const samples = parseMetrics(await metricsAnswer.text());
    first ??= status;
    for (const [field, probe] of Object.entries(FIELD_PROBES))
      if (probe.bot === bot && probe.moved(status, first)) moved.add(field);
    for (const [metric, probe] of Object.entries(METRIC_PROBES)) if (probe(samples)) moved.add(metric);
    for (const sample of samples)
      if (sample.name === 'hookbot_rule_actions_total' && sample.labels.result !== undefined) {
        const seen = labels.get('result') ?? new Set<string>();
        seen.add(sample.labels.result);
        labels.set('result', seen);
      }
    return { status, samples };
  }

  return {
    moved,
    labels,
    read() {
      const done = reading.then(readNow);
      reading = done.then(
        () => undefined,
        () => undefined,
      );
      return done;
    },
    start(everyMs = 150) {
      timer = setInterval(() => {
        reading = reading.then(() => readNow().then(() => undefined)).catch(() => undefined);
      }, everyMs);
    },
    async stop() {
      clearInterval(timer);
      await reading.catch(() => undefined);
    },
    /** Reads until `field` has moved. */
    until(field: string, timeoutMs = LONG) {
      return waitFor(
        async () => ((await readNow()) && moved.has(field) ? true : undefined),
        timeoutMs,
        field,
      );
    },
  };
}
