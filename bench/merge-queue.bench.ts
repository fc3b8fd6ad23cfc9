/**
 * The merge queue against merging at once, on the same workload, in the sandbox over HTTP with real
 * git and the simulated CI (test/helpers/simulated-ci.ts: every new head built, a semantic conflict
 * fails it). For N = 1, 5, 10 and 20 merge requests that are green at once, one of them (for N >= 2)
 * renames `def foo` to `def bar` while the others add `calls: foo`: each passes alone, together they
 * break the target.
 *
 * - at once: a `merge` rule (`statuses: { state: success }`) evaluated for every merge request, as
 *   the status hooks would have it;
 * - queue: a `queue` rule; the merge_queue sweep runs back to back until every queue is empty.
 *
 * Measured per mode and N: time from "all green" to each merge (p50, p95) and to the last (total),
 * broken commits on the target (first-parent line of master failing the CI's check), CI runs,
 * pushes and API calls per merge. Then how long a status that never reports holds the queue: the
 * head's wait from its pinned head to its removal with `status_timeout: 2s` (in production the
 * bound is status_timeout plus up to one sweep interval, 30 s by default).
 * Run alone with `node --import tsx bench/merge-queue.bench.ts`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MergeQueueReport } from '../src/scheduler/sweeps/merge-queue.ts';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';
import {
  makeQueueWorld,
  masterLine,
  openMergeRequest,
  type QueueWorld,
} from '../test/helpers/queue-world.ts';

type Figures = Record<string, number | string>;

const SIZES = [1, 5, 10, 20] as const;

const AT_ONCE = `
rules:
  - name: merge when green
    on: [merge_request.update, status.changed]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } }, { statuses: { required: [ci/test], state: success } } ]
    do: [ merge ]
`;

const queueRules = (timeout: string) => `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do: [ { queue: { statuses: [ci/test], status_timeout: ${timeout} } } ]
`;

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const round = (value: number) => Math.round(value);

/** N merge requests, all green on their own heads; the middle one (N >= 2) renames foo. */
async function workload(w: QueueWorld, n: number) {
  const mrs = [];
  for (let i = 0; i < n; i++) {
    const rename = n >= 2 && i === Math.floor(n / 2);
    mrs.push(
      await openMergeRequest(
        w,
        `change-${i + 1}`,
        rename
          ? { 'lib.txt': 'def bar\n', 'renamed.txt': 'calls: bar\n' }
          : { [`f${i + 1}.txt`]: 'calls: foo\n' },
      ),
    );
  }
  await w.ci.idle();
  return mrs;
}

interface Outcome {
  merged: number;
  mergeMs: number[];
  totalMs: number;
  broken: number;
  ciRuns: number;
  pushes: number;
  calls: number;
}

async function atOnce(sb: Sandbox, dir: string, n: number): Promise<Outcome> {
  const w = await makeQueueWorld(sb, { prefix: `once${n}`, rules: AT_ONCE, workDir: dir });
  try {
    const mrs = await workload(w, n);
    const runs = w.ci.runs;
    const calls = w.client.http.stats.calls;
    const started = performance.now();
    const mergeMs: number[] = [];
    for (const mr of mrs) {
      await w.processItem(mr.id);
      if ((await w.admin.mergeRequests.get(w.project.id, mr.id)).state === 'merged')
        mergeMs.push(performance.now() - started);
    }
    const totalMs = performance.now() - started;
    const botCalls = w.client.http.stats.calls - calls;
    await w.ci.idle();
    const line = await masterLine(w);
    return {
      merged: mergeMs.length,
      mergeMs,
      totalMs,
      broken: line.filter((c) => !c.passes).length,
      ciRuns: w.ci.runs - runs,
      pushes: w.pushes(),
      calls: botCalls,
    };
  } finally {
    await w.close();
  }
}

async function viaQueue(sb: Sandbox, dir: string, n: number): Promise<Outcome> {
  const w = await makeQueueWorld(sb, { prefix: `queue${n}`, rules: queueRules('10m'), workDir: dir });
  try {
    const mrs = await workload(w, n);
    const runs = w.ci.runs;
    const calls = w.client.http.stats.calls;
    const started = performance.now();
    for (const mr of mrs) await w.processItem(mr.id);
    const mergeMs: number[] = [];
    // The sweep back to back (the scheduler would run it every 30 s): each merge is timed when the
    // run that made it returns.
    while (w.active() > 0) {
      if (performance.now() - started > 300_000) throw new Error('the queue did not empty in 5 minutes');
      await w.ci.idle();
      const report = (await w.sweeps.run('merge_queue')) as MergeQueueReport;
      for (const item of report.items)
        if (item.outcome === 'merged') mergeMs.push(performance.now() - started);
    }
    const totalMs = performance.now() - started;
    const botCalls = w.client.http.stats.calls - calls;
    await w.ci.idle();
    const line = await masterLine(w);
    return {
      merged: mergeMs.length,
      mergeMs,
      totalMs,
      broken: line.filter((c) => !c.passes).length,
      ciRuns: w.ci.runs - runs,
      pushes: w.pushes(),
      calls: botCalls,
    };
  } finally {
    await w.close();
  }
}

/** How long a head whose status never reports holds the queue, with `status_timeout: 2s`. */
async function stuckHold(sb: Sandbox, dir: string): Promise<{ holdMs: number; nextMergedMs: number }> {
  const w = await makeQueueWorld(sb, {
    prefix: 'stuck',
    rules: queueRules('2s'),
    workDir: dir,
    modeOf: (branch) => (branch === 'change-1' ? 'pending-forever' : 'normal'),
  });
  try {
    const stuck = await openMergeRequest(w, 'change-1', { 'stuck.txt': 'calls: foo\n' });
    const next = await openMergeRequest(w, 'change-2', { 'next.txt': 'calls: foo\n' });
    await w.ci.idle();
    await w.processItem(stuck.id);
    await w.processItem(next.id);
    const started = performance.now();
    await w.drive(() => w.store.queued().find((e) => e.mrId === stuck.id)?.pinnedSha !== undefined, 'pinned');
    const pinnedAt = performance.now();
    await w.drive(
      () => !w.store.queued().some((e) => e.mrId === stuck.id && !e.left),
      'the stuck one to leave',
    );
    const holdMs = performance.now() - pinnedAt;
    await w.drive(() => w.active() === 0, 'the queue to empty');
    return { holdMs, nextMergedMs: performance.now() - started };
  } finally {
    await w.close();
  }
}

export async function run(): Promise<Figures> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hookbot-bench-queue-'));
  const sb = await startSandbox({ adminToken: 'bench-queue-root', hookTimeoutMs: 2_000 });
  const figures: Figures = {};
  try {
    for (const n of SIZES) {
      for (const [mode, measure] of [
        ['once', atOnce],
        ['queue', viaQueue],
      ] as const) {
        const o = await measure(sb, dir, n);
        const key = `${mode}_${n}`;
        figures[`${key}_merged`] = o.merged;
        figures[`${key}_p50_ms`] = round(percentile(o.mergeMs, 50));
        figures[`${key}_p95_ms`] = round(percentile(o.mergeMs, 95));
        figures[`${key}_total_ms`] = round(o.totalMs);
        figures[`${key}_broken`] = o.broken;
        figures[`${key}_ci_runs`] = o.ciRuns;
        figures[`${key}_pushes`] = o.pushes;
        figures[`${key}_calls_per_merge`] = o.merged === 0 ? 0 : Number((o.calls / o.merged).toFixed(1));
      }
    }
    const stuck = await stuckHold(sb, dir);
    figures.stuck_timeout_ms = 2_000;
    figures.stuck_hold_ms = round(stuck.holdMs);
    figures.stuck_next_merged_ms = round(stuck.nextMergedMs);
  } finally {
    await sb.close();
    await rm(dir, { recursive: true, force: true });
  }
  return figures;
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) console.log(await run());
