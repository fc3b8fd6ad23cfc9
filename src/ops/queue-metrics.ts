/**
 * The merge queue's metrics (docs/operations.md#metrics), named `hookbot_merge_queue_*` apart from
 * the delivery pipeline's `hookbot_queue_depth`:
 *
 * - counted as the queue drivers tell their events (rules/queue/queue-events.ts), by the replica
 *   that drove the queue: landings by mode, the time from entering a queue to landing, removals by
 *   reason code, car builds by outcome, rounds;
 * - read from the store's queue entries when /metrics is scraped (the same on every replica of a
 *   fleet: take the max, not the sum): entries per queue, and trouble (1 while the queue cannot move).
 *
 * Labels stay bounded: reason codes, outcomes and modes are closed sets (a value outside them is
 * counted as `other`), and at most MAX_QUEUE_SERIES queues have a series of their own, those with
 * the most entries; the others are summed into one series whose labels are all `(other)`.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { CAR_OUTCOMES, QUEUE_MODES, REMOVAL_CODES, type QueueMetricsSink } from '../rules/index.ts';
import { queuesOf, type QueueEntry } from '../state/index.ts';

/** The queue entries as the store holds them now (`store.queued()`). */
export type QueueSource = () => readonly QueueEntry[];

/** Queues with a series of their own in the per-queue gauges; the rest share `(other)`. */
export const MAX_QUEUE_SERIES = 50;
const OTHER = '(other)';

const bounded = (value: string, known: readonly string[]): string =>
  known.includes(value) ? value : 'other';

interface QueueRow {
  project: string;
  target: string;
  queue: string;
  entries: number;
  trouble: number;
}

/** One row per queue, at most MAX_QUEUE_SERIES of their own, then one `(other)` row for the rest. */
export function queueRows(entries: readonly QueueEntry[]): QueueRow[] {
  const rows: QueueRow[] = [...queuesOf(entries).values()].map((group) => ({
    project: group[0]!.project,
    target: group[0]!.targetBranch,
    queue: group[0]!.queue,
    entries: group.length,
    trouble: group.some((entry) => entry.trouble !== undefined) ? 1 : 0,
  }));
  if (rows.length <= MAX_QUEUE_SERIES) return rows;
  rows.sort(
    (a, b) =>
      b.entries - a.entries ||
      `${a.project}|${a.target}|${a.queue}`.localeCompare(`${b.project}|${b.target}|${b.queue}`),
  );
  const rest = rows.slice(MAX_QUEUE_SERIES);
  return [
    ...rows.slice(0, MAX_QUEUE_SERIES),
    {
      project: OTHER,
      target: OTHER,
      queue: OTHER,
      entries: rest.reduce((sum, row) => sum + row.entries, 0),
      trouble: rest.some((row) => row.trouble === 1) ? 1 : 0,
    },
  ];
}

export function mergeQueueMetrics(registers: Registry[]): {
  sink: QueueMetricsSink;
  watch: (source: QueueSource) => void;
} {
  let source: QueueSource = () => [];
  const labelNames = ['project', 'target', 'queue'] as const;
  new Gauge({
    name: 'hookbot_merge_queue_entries',
    help: `Merge requests in each merge queue now, by project, target branch and queue (at most ${MAX_QUEUE_SERIES} queues, those with the most entries; the rest summed under "${OTHER}").`,
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const row of queueRows(source()))
        this.set({ project: row.project, target: row.target, queue: row.queue }, row.entries);
    },
  });
  new Gauge({
    name: 'hookbot_merge_queue_trouble',
    help: `1 while a merge queue cannot move (its steps keep failing: no git credentials, a push refused, a blocked branch), else 0; the same queues as hookbot_merge_queue_entries.`,
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const row of queueRows(source()))
        this.set({ project: row.project, target: row.target, queue: row.queue }, row.trouble);
    },
  });
  const landed = new Counter({
    name: 'hookbot_merge_queue_landed_total',
    help: 'Merge requests a merge queue landed, by mode (serial: merged by the serial queue; train: landed in a car of a merge train).',
    labelNames: ['mode'] as const,
    registers,
  });
  const timeToLand = new Histogram({
    name: 'hookbot_merge_queue_time_to_land_seconds',
    help: 'From a merge request entering its merge queue to its landing, by mode.',
    labelNames: ['mode'] as const,
    buckets: [30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200, 86400],
    registers,
  });
  const removed = new Counter({
    name: 'hookbot_merge_queue_removed_total',
    help: 'Merge requests that left a merge queue without landing, by reason code (docs/merge-queue.md#where-it-shows).',
    labelNames: ['reason'] as const,
    registers,
  });
  const cars = new Counter({
    name: 'hookbot_merge_queue_car_builds_total',
    help: 'Merge train cars whose fate is known, by outcome (passed, failed, timed_out, replaced).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const rounds = new Counter({
    name: 'hookbot_merge_queue_rounds_total',
    help: 'Runs of the merge queue sweep over one queue with entries, by mode (serial, train).',
    labelNames: ['mode'] as const,
    registers,
  });
  // Every label value is known from the start: a series at 0 is there before the first event.
  for (const mode of QUEUE_MODES) {
    landed.inc({ mode }, 0);
    rounds.inc({ mode }, 0);
  }
  for (const reason of REMOVAL_CODES) removed.inc({ reason }, 0);
  for (const outcome of CAR_OUTCOMES) cars.inc({ outcome }, 0);
  return {
    sink: {
      landed: (mode, seconds) => {
        const label = { mode: bounded(mode, QUEUE_MODES) };
        landed.inc(label);
        timeToLand.observe(label, seconds);
      },
      removed: (code) => removed.inc({ reason: bounded(code, REMOVAL_CODES) }),
      carBuilt: (outcome) => cars.inc({ outcome: bounded(outcome, CAR_OUTCOMES) }),
      round: (mode) => rounds.inc({ mode: bounded(mode, QUEUE_MODES) }),
    },
    watch: (next) => {
      source = next;
    },
  };
}
