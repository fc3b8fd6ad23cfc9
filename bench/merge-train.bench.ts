/**
 * Merge trains against the serial queue and merging at once, in one run, on one workload
 * (bench/train-workload.ts): 20 merge requests queued at once; 4 of them break something only in
 * combination with another (a rename and a new caller of the old name: whichever comes second fails),
 * 1 fails on its own. The sandbox over HTTP with real git and its simulated CI (every build takes T,
 * default 3 s; the semantic check of test/helpers/semantic-check.ts; runners enough for every build at
 * once, so the CI's capacity is not what is measured), the bot's parts as test/helpers/queue-world.ts
 * wires them, the merge_queue sweep run back to back while the CI builds (with hooks the bot acts on
 * each status at once; here the step is "every build running has ended").
 *
 * Modes: `once` (a `merge` rule on a green head, each merge request evaluated once they are all
 * green), `serial` (the queue with `depth: 1`), `train5` and `train10` (`depth: 5`, `depth: 10`),
 * `batch4` (`depth: 1, batch: 4`: cars of four). Per mode: time from "all queued" until the queue is
 * empty, in units of T; CI runs used in that time; the bot's API calls per landed merge request; broken
 * commits on the target (first-parent commits of master whose tree fails the CI's check); landed and
 * left, beside what an ideal queue lands (bench/train-workload.ts#idealOutcome).
 *
 * A mode whose rules the bot does not load yet (`depth`, `batch` before the trains landed) is reported
 * as such (`<mode>_error`); `serial` then runs today's queue without `depth` and says so
 * (`serial_rules: today`). BENCH_TRAIN_T_MS sets T, BENCH_TRAIN_MODES a subset (`once,serial`).
 * Run alone with `node --import tsx bench/merge-train.bench.ts`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadRules } from '../src/rules/grammar/load.ts';
import { formatProblem } from '../src/rules/grammar/problem.ts';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';
import { commitFile, INITIAL_FILES, makeQueueWorld, type QueueWorld } from '../test/helpers/queue-world.ts';
import { ciRunCounter, countBroken, firstParentLine } from './train-measure.ts';
import { idealOutcome, idealTrain, trainWorkload, type TrainWorkload } from './train-workload.ts';

type Figures = Record<string, number | string>;

const N = 20;
const T = Number(process.env.BENCH_TRAIN_T_MS ?? 3000);
const STATUS = 'ci/test';

interface Mode {
  key: string;
  /** The queue's options beyond `statuses` and `status_timeout`; undefined: merging at once. */
  queue?: Record<string, number>;
  /** When the bot refuses `queue`, run this instead and say so. */
  fallback?: { queue: Record<string, number>; note: string };
}

const MODES: Mode[] = [
  { key: 'once' },
  { key: 'serial', queue: { depth: 1 }, fallback: { queue: {}, note: 'today' } },
  { key: 'train5', queue: { depth: 5 } },
  { key: 'train10', queue: { depth: 10 } },
  { key: 'batch4', queue: { depth: 1, batch: 4 } },
];

const AT_ONCE = `
rules:
  - name: merge when green
    on: [merge_request.update, status.changed]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } }, { statuses: { required: [${STATUS}], state: success } } ]
    do: [ merge ]
`;

function queueRules(options: Record<string, number>): string {
  const extra = Object.entries(options)
    .map(([key, value]) => `, ${key}: ${value}`)
    .join('');
  const timeout = `${Math.max(10, Math.ceil((20 * T) / 1000))}s`;
  return `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do: [ { queue: { statuses: [${STATUS}], status_timeout: ${timeout}${extra} } } ]
`;
}

/** The base files on master, then one merge request per change, each from its own branch; heads built. */
async function openWorkload(
  w: QueueWorld,
  workload: TrainWorkload,
): Promise<{ id: number; position: number }[]> {
  for (const [file, content] of Object.entries(workload.base)) {
    const res = await commitFile(w, 'master', file, content, { message: `Base: ${file}` });
    if (!res.ok) throw new Error(`could not commit ${file} on master: ${res.status}`);
  }
  const onMaster = new Set([...Object.keys(INITIAL_FILES), ...Object.keys(workload.base)]);
  const opened = [];
  for (const change of workload.changes) {
    await w.admin.branches.create(w.project.id, { branch_name: change.branch, ref: 'master' });
    for (const [file, content] of Object.entries(change.files)) {
      const res = await commitFile(w, change.branch, file, content, {
        message: `${change.kind}: ${file}`,
        update: onMaster.has(file),
      });
      if (!res.ok) throw new Error(`could not commit ${file} on ${change.branch}: ${res.status}`);
    }
    const mr = await w.admin.mergeRequests.create(w.project.id, {
      source_branch: change.branch,
      target_branch: 'master',
      title: `${change.position}: ${change.kind}`,
      labels: ['automerge'],
    });
    opened.push({ id: mr.id, position: change.position });
  }
  await w.ci.idle();
  return opened;
}

interface Outcome {
  ms: number;
  landed: number[];
  ciRuns: number;
  calls: number;
  broken: number;
  commits: number;
}

async function measure(
  sb: Sandbox,
  dir: string,
  mode: Mode,
  rules: string,
  workload: TrainWorkload,
): Promise<Outcome> {
  const w = await makeQueueWorld(sb, { prefix: `train-${mode.key}`, rules, workDir: dir, buildMs: T });
  try {
    const mrs = await openWorkload(w, workload);
    const runs = ciRunCounter(w.ci);
    const calls = w.client.http.stats.calls;
    const started = performance.now();
    if (!mode.queue) {
      // At once: each merge request evaluated once all are green, as their status hooks would have it.
      for (const mr of mrs) await w.processItem(mr.id);
    } else {
      for (const mr of mrs) await w.processItem(mr.id);
      const deadline = started + 60 * T + 120_000;
      while (w.active() > 0) {
        if (performance.now() > deadline)
          throw new Error(`the queue did not empty in ${Math.round((60 * T + 120_000) / 1000)} s`);
        await w.ci.idle();
        await w.sweeps.run('merge_queue');
      }
    }
    const ms = performance.now() - started;
    const botCalls = w.client.http.stats.calls - calls;
    const ciRuns = runs();
    await w.ci.idle();
    const landed: number[] = [];
    for (const mr of mrs)
      if ((await w.admin.mergeRequests.get(w.project.id, mr.id)).state === 'merged') landed.push(mr.position);
    const log = await sb.ctx.git.log(w.project.id, 'master', { limit: 10_000 });
    const line = firstParentLine(log, log[0]!.id);
    const { broken } = await countBroken(line, (sha) => w.ci.passes(w.project.id, sha));
    return { ms, landed, ciRuns, calls: botCalls, broken, commits: line.length };
  } finally {
    await w.close();
  }
}

/** What the bot's loader says of `rules` (empty when it loads them). */
async function rulesProblems(dir: string, rules: string): Promise<string[]> {
  const folder = await mkdtemp(path.join(dir, 'rules-check-'));
  try {
    await writeFile(path.join(folder, 'default.yml'), rules);
    return (await loadRules(folder)).problems.map((p) => formatProblem(p).replace(`${folder}/`, ''));
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** The mode's rules as the bot loads them today: its own, its fallback (said in `note`), or why not. */
async function rulesFor(
  dir: string,
  mode: Mode,
): Promise<{ rules: string; note?: string } | { refused: string }> {
  if (!mode.queue) return { rules: AT_ONCE };
  const rules = queueRules(mode.queue);
  const problems = await rulesProblems(dir, rules);
  if (problems.length === 0) return { rules };
  if (mode.fallback) {
    const fallback = queueRules(mode.fallback.queue);
    if ((await rulesProblems(dir, fallback)).length === 0)
      return { rules: fallback, note: mode.fallback.note };
  }
  return { refused: `the bot does not load this mode's rules yet: ${problems.join('; ')}` };
}

export async function run(): Promise<Figures> {
  const wanted = process.env.BENCH_TRAIN_MODES?.split(',').map((m) => m.trim());
  const modes = wanted ? MODES.filter((m) => wanted.includes(m.key)) : MODES;
  const workload = trainWorkload(N);
  const ideal = idealOutcome(workload, INITIAL_FILES);
  const figures: Figures = {
    merge_requests: N,
    t_ms: T,
    ideal_landed: ideal.landed.length,
    ideal_failed: ideal.failed.join(' '),
  };
  // What a linear train could do at best on this workload (one round is one T), beside what it did.
  for (const mode of MODES)
    if (mode.queue && mode.queue.batch === undefined) {
      const best = idealTrain(ideal.failed, N, mode.queue.depth ?? 1);
      figures[`${mode.key}_ideal_rounds`] = best.rounds;
      figures[`${mode.key}_ideal_ci_runs`] = best.ciRuns;
    }
  const dir = await mkdtemp(path.join(tmpdir(), 'hookbot-bench-train-'));
  const sb = await startSandbox({ adminToken: 'bench-train-root', hookTimeoutMs: 2_000 });
  try {
    for (const mode of modes) {
      const chosen = await rulesFor(dir, mode);
      if ('refused' in chosen) {
        figures[`${mode.key}_error`] = chosen.refused.slice(0, 300);
        continue;
      }
      if (chosen.note) figures[`${mode.key}_rules`] = chosen.note;
      let outcome: Outcome | undefined;
      try {
        outcome = await measure(sb, dir, mode, chosen.rules, workload);
      } catch (error) {
        figures[`${mode.key}_error`] = String(error instanceof Error ? error.message : error).slice(0, 300);
      }
      if (!outcome) continue;
      const k = mode.key;
      figures[`${k}_time_t`] = Number((outcome.ms / T).toFixed(2));
      figures[`${k}_ms`] = Math.round(outcome.ms);
      figures[`${k}_landed`] = outcome.landed.length;
      figures[`${k}_left`] = N - outcome.landed.length;
      figures[`${k}_ci_runs`] = outcome.ciRuns;
      figures[`${k}_calls_per_landed`] =
        outcome.landed.length === 0 ? 0 : Number((outcome.calls / outcome.landed.length).toFixed(1));
      figures[`${k}_broken`] = outcome.broken;
      figures[`${k}_target_commits`] = outcome.commits;
    }
  } finally {
    await sb.close();
    await rm(dir, { recursive: true, force: true });
  }
  return figures;
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) console.log(await run());
