/**
 * Merge trains against the serial queue and merging at once, in one run (issues 32 and 38). The
 * sandbox over HTTP with real git and its simulated CI (every build takes T, default 3 s; the semantic
 * check of test/helpers/semantic-check.ts; runners enough for every build at once, so the CI's
 * capacity is not what is measured), the bot's parts as test/helpers/queue-world.ts wires them, the
 * merge_queue sweep run back to back while the CI builds (with hooks the bot acts on each status at
 * once; here the step is "every build running has ended"). Four workloads (BENCH_TRAIN_WORKLOADS
 * picks a subset, `semantic,flaky,push,hook`):
 *
 * - `semantic` (bench/train-workload.ts#trainWorkload): 20 merge requests queued at once; 4 of them
 *   break something only in combination with another (a rename and a new caller of the old name:
 *   whichever comes second fails), 1 fails on its own. Figures without a prefix (`serial_time_t`...),
 *   with the ratios to the least a linear train can do (`<mode>_rounds_ratio`: time in T over
 *   `<mode>_ideal_rounds`; `<mode>_ci_ratio`: CI runs over `<mode>_ideal_ci_runs`).
 * - `flaky` (`flaky_<mode>_...`): 20 merge requests that are all good (each passes alone and with any
 *   other), with a CI that fails 10 % of its builds at random, seeded (FLAKY_SEED below; the draws are
 *   keyed by each commit's tree and how many builds of that tree came before, so they are the same run
 *   after run: src/sandbox/ci/simulated-ci.ts). Per mode: `good_removed` (merge requests taken out
 *   although they pass: every one taken out here), `flaked` (builds in the run that failed only by the
 *   flake rate), time, CI runs, broken commits. Seed 3 was chosen after trying seeds 1 to 3 on the
 *   serial queue (T = 300 ms): its serial queue takes out 3 good merge requests (seed 1: 4, seed 2: 3),
 *   at least 2, so the issue's target (a train takes out at most a quarter of what the serial queue
 *   does) means something. The draws depend on no time and no machine: the outcome only on which
 *   trees are built in what order. BENCH_TRAIN_FLAKY_SEED sets another.
 * - `push` (`push_<mode>_...`): 12 good merge requests queued; once the bot pushed its first cars (or,
 *   serial, its first update), before the front lands, a new commit is pushed to the source branch of
 *   the merge request at position 3 (behind the front car) and the merge request is evaluated as its
 *   hook would have it. `stale_runs`: CI runs for a car commit that merges a head which was no longer
 *   its merge request's source head when the run started (bench/train-measure.ts#staleRuns); a car
 *   built before the push and replaced after is not one. Target 0.
 * - `hook` (`hook_...`, bench/train-hook-round.ts): the sandbox and `hookbot serve` as separate
 *   processes, moved by hook deliveries only (the merge_queue sweep's timer at 60 s as a backstop), a
 *   train of depth 5 on the semantic workload: time in T against the ideal rounds, and the lag of each
 *   step of a round (the status completing a green car to the landing push; a landing, or the failed
 *   status of the front car, to the next cars' push), p50 and max in ms and in T.
 *
 * Modes (BENCH_TRAIN_MODES picks a subset): `once` (a `merge` rule on a green head, each merge request
 * evaluated once they are all green; semantic only), `serial` (`depth: 1`), `train5`, `train10`
 * (`depth: 5`, `10`), `auto` (`depth: auto`), `batch4` (`depth: 1, batch: 4`) and `train2batch4`
 * (`depth: 2, batch: 4`); which run on which workload: WORKLOAD_MODES (about 10 minutes in all at
 * T = 3 s on an idle 2-core machine; modes named in BENCH_TRAIN_MODES run on every workload chosen). Per mode: time from "all queued" until the queue is empty, in units of
 * T; CI runs used in that time; the bot's API calls per landed merge request; broken commits on the
 * target (first-parent commits of master whose tree fails the CI's true check); landed and left.
 *
 * A mode whose rules the bot does not load yet (`depth: auto`) is reported as such (`<mode>_error`)
 * and the run goes on; it runs as soon as the bot accepts its rules. BENCH_TRAIN_T_MS sets T.
 * Run alone with `node --import tsx bench/merge-train.bench.ts`.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { loadRules } from '../src/rules/grammar/load.ts';
import { formatProblem } from '../src/rules/grammar/problem.ts';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';
import { commitFile, INITIAL_FILES, makeQueueWorld, type QueueWorld } from '../test/helpers/queue-world.ts';
import { hookRound } from './train-hook-round.ts';
import { ciRunCounter, countBroken, firstParentLine, staleRuns, type SeenPush } from './train-measure.ts';
import {
  goodWorkload,
  idealOutcome,
  idealTrain,
  trainWorkload,
  type TrainWorkload,
} from './train-workload.ts';

type Figures = Record<string, number | string>;

const N = 20;
const T = Number(process.env.BENCH_TRAIN_T_MS ?? 3000);
const STATUS = 'ci/test';
/** The flaky workload's CI: 10 % of builds fail at random, these draws (see the header). */
const FLAKE_RATE = 0.1;
const FLAKY_SEED = Number(process.env.BENCH_TRAIN_FLAKY_SEED ?? 3);
/** The push workload: merge requests queued, and the one whose source is pushed mid-train. */
const PUSH_N = 12;
const PUSHED_POSITION = 3;
const execGit = promisify(execFile);

interface Mode {
  key: string;
  /** The queue's options beyond `statuses` and `status_timeout`; undefined: merging at once. */
  queue?: Record<string, number | string>;
}

const MODES: Mode[] = [
  { key: 'once' },
  { key: 'serial', queue: { depth: 1 } },
  { key: 'train5', queue: { depth: 5 } },
  { key: 'train10', queue: { depth: 10 } },
  { key: 'auto', queue: { depth: 'auto' } },
  { key: 'batch4', queue: { depth: 1, batch: 4 } },
  { key: 'train2batch4', queue: { depth: 2, batch: 4 } },
];

type WorkloadKey = 'semantic' | 'flaky' | 'push' | 'hook';
const WORKLOADS: WorkloadKey[] = ['semantic', 'flaky', 'push', 'hook'];
/** Which modes run on which workload by default (the whole run about 10 minutes at T = 3 s). */
const WORKLOAD_MODES: Record<Exclude<WorkloadKey, 'hook'>, string[]> = {
  semantic: ['once', 'serial', 'train5', 'train10', 'auto', 'batch4', 'train2batch4'],
  flaky: ['serial', 'train5', 'train10', 'auto'],
  // The serial queue pushes no car: 0 stale runs by construction (BENCH_TRAIN_MODES=serial runs it).
  push: ['train5', 'auto'],
};

const AT_ONCE = `
rules:
  - name: merge when green
    on: [merge_request.update, status.changed]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } }, { statuses: { required: [${STATUS}], state: success } } ]
    do: [ merge ]
`;

/** The queue's rule with `options` (`depth`, `batch`...); exported for the hook-driven round. */
export function queueRules(options: Record<string, number | string>, t = T): string {
  const extra = Object.entries(options)
    .map(([key, value]) => `, ${key}: ${value}`)
    .join('');
  const timeout = `${Math.max(10, Math.ceil((20 * t) / 1000))}s`;
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
): Promise<{ id: number; position: number; branch: string }[]> {
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
    opened.push({ id: mr.id, position: change.position, branch: change.branch });
  }
  await w.ci.idle();
  return opened;
}

/** What a workload is run with. */
interface Spec {
  key: Exclude<WorkloadKey, 'hook'>;
  workload: TrainWorkload;
  flakes?: { rate: number; seed: number };
  /** Push a new commit to this position's source branch once the bot pushed its first cars. */
  pushAt?: number;
}

interface Outcome {
  ms: number;
  landed: number[];
  ciRuns: number;
  calls: number;
  broken: number;
  commits: number;
  flaked: number;
  /** CI runs for a head already replaced when they started (push workload). */
  stale?: number;
  /** The branches those runs were first pushed to. */
  staleRefs?: string[];
  /** When the source branch was pushed, in ms from "all queued" (push workload). */
  pushedAfterMs?: number;
}

async function measure(sb: Sandbox, dir: string, mode: Mode, rules: string, spec: Spec): Promise<Outcome> {
  const w = await makeQueueWorld(sb, {
    prefix: `train-${spec.key}-${mode.key}`,
    rules,
    workDir: dir,
    buildMs: T,
    ...(spec.flakes ? { flakes: spec.flakes } : {}),
  });
  // Every push to the project, in order: which commit each CI run built, which heads were replaced when.
  const pushes: SeenPush[] = [];
  let botPushes = 0;
  w.sb.ctx.on.push.push((event) => {
    if (event.project.id !== w.project.id) return;
    pushes.push({ seq: pushes.length + 1, at: performance.now(), ref: event.ref, after: event.after });
    if (event.user.id === w.bot.id) botPushes++;
  });
  try {
    const mrs = await openWorkload(w, spec.workload);
    const runs = ciRunCounter(w.ci);
    const flakesBefore = w.ci.flakes;
    const calls = w.client.http.stats.calls;
    const from = pushes.length;
    const started = performance.now();
    let pushedAt: number | undefined;
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
        if (spec.pushAt !== undefined && pushedAt === undefined && botPushes > 0) {
          // The cars are being built: a new commit on a source branch behind the front, and its hook.
          const mr = mrs.find((m) => m.position === spec.pushAt)!;
          const res = await commitFile(w, mr.branch, `pushed-${mr.position}.txt`, 'calls: foo\n', {
            message: 'A push while the train runs',
          });
          if (!res.ok) throw new Error(`could not push to ${mr.branch}: ${res.status}`);
          pushedAt = performance.now() - started;
          await w.processItem(mr.id);
        }
      }
    }
    const ms = performance.now() - started;
    const botCalls = w.client.http.stats.calls - calls;
    const ciRuns = runs();
    const flaked = w.ci.flakes - flakesBefore;
    await w.ci.idle();
    const landed: number[] = [];
    for (const mr of mrs)
      if ((await w.admin.mergeRequests.get(w.project.id, mr.id)).state === 'merged') landed.push(mr.position);
    const log = await sb.ctx.git.log(w.project.id, 'master', { limit: 10_000 });
    const line = firstParentLine(log, log[0]!.id);
    const { broken } = await countBroken(line, (sha) => w.ci.passes(w.project.id, sha));
    const outcome: Outcome = { ms, landed, ciRuns, calls: botCalls, broken, commits: line.length, flaked };
    if (spec.pushAt !== undefined) {
      const repo = path.join(sb.ctx.reposDir!, `${w.project.id}.git`);
      const parentsOf = async (sha: string) =>
        (
          await execGit('git', ['-C', repo, 'rev-list', '--first-parent', '--parents', '-n', '200', sha])
        ).stdout
          .trim()
          .split('\n')
          .map((l) => l.split(' '));
      const stale = await staleRuns(pushes, new Set(mrs.map((m) => m.branch)), from, parentsOf);
      outcome.stale = stale.length;
      outcome.staleRefs = stale.map((sha) =>
        pushes.find((p) => p.after === sha)!.ref.replace('refs/heads/', ''),
      );
      if (pushedAt !== undefined) outcome.pushedAfterMs = pushedAt;
    }
    return outcome;
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

/** The mode's rules as the bot loads them today, or why not. */
async function rulesFor(dir: string, mode: Mode): Promise<{ rules: string } | { refused: string }> {
  if (!mode.queue) return { rules: AT_ONCE };
  const rules = queueRules(mode.queue);
  const problems = await rulesProblems(dir, rules);
  if (problems.length === 0) return { rules };
  return { refused: `the bot does not load this mode's rules yet: ${problems.join('; ')}` };
}

const fixed = (value: number, digits = 2) => Number(value.toFixed(digits));

/** Runs `modes` on `spec`, its figures under `prefix` (the semantic workload's: none). */
async function runWorkload(
  sb: Sandbox,
  dir: string,
  spec: Spec,
  modes: Mode[],
  prefix: string,
  figures: Figures,
): Promise<void> {
  const n = spec.workload.changes.length;
  const ideal = idealOutcome(spec.workload, INITIAL_FILES);
  for (const mode of modes) {
    const k = `${prefix}${mode.key}`;
    const chosen = await rulesFor(dir, mode);
    if ('refused' in chosen) {
      figures[`${k}_error`] = chosen.refused.slice(0, 300);
      continue;
    }
    let outcome: Outcome | undefined;
    try {
      outcome = await measure(sb, dir, mode, chosen.rules, spec);
    } catch (error) {
      figures[`${k}_error`] = String(error instanceof Error ? error.message : error).slice(0, 300);
    }
    if (!outcome) continue;
    figures[`${k}_time_t`] = fixed(outcome.ms / T);
    figures[`${k}_ms`] = Math.round(outcome.ms);
    figures[`${k}_landed`] = outcome.landed.length;
    figures[`${k}_left`] = n - outcome.landed.length;
    figures[`${k}_ci_runs`] = outcome.ciRuns;
    figures[`${k}_calls_per_landed`] =
      outcome.landed.length === 0 ? 0 : fixed(outcome.calls / outcome.landed.length, 1);
    figures[`${k}_broken`] = outcome.broken;
    figures[`${k}_target_commits`] = outcome.commits;
    if (spec.flakes) {
      figures[`${k}_good_removed`] = ideal.landed.filter((p) => !outcome.landed.includes(p)).length;
      figures[`${k}_flaked`] = outcome.flaked;
    }
    if (outcome.stale !== undefined) figures[`${k}_stale_runs`] = outcome.stale;
    if (outcome.staleRefs?.length) figures[`${k}_stale_refs`] = outcome.staleRefs.join(' ');
    if (outcome.pushedAfterMs !== undefined) figures[`${k}_pushed_at_t`] = fixed(outcome.pushedAfterMs / T);
    const rounds = figures[`${k}_ideal_rounds`];
    const ciRuns = figures[`${k}_ideal_ci_runs`];
    if (typeof rounds === 'number') figures[`${k}_rounds_ratio`] = fixed(outcome.ms / T / rounds);
    if (typeof ciRuns === 'number') figures[`${k}_ci_ratio`] = fixed(outcome.ciRuns / ciRuns);
  }
}

const depthOf = (mode: Mode) => {
  const depth = mode.queue?.depth;
  return mode.queue && mode.queue.batch === undefined && typeof depth === 'number' ? depth : undefined;
};

export async function run(): Promise<Figures> {
  const list = (name: string) =>
    process.env[name]
      ?.split(',')
      .map((m) => m.trim())
      .filter(Boolean);
  const wantedModes = list('BENCH_TRAIN_MODES');
  const wantedWorkloads = (list('BENCH_TRAIN_WORKLOADS') ?? WORKLOADS) as WorkloadKey[];
  for (const key of wantedWorkloads)
    if (!WORKLOADS.includes(key)) throw new Error(`no train workload ${key} (have: ${WORKLOADS.join(', ')})`);
  // Named modes run on every workload chosen (`once` on the semantic one only); else WORKLOAD_MODES.
  const modesOf = (key: Exclude<WorkloadKey, 'hook'>) =>
    MODES.filter((m) =>
      wantedModes
        ? wantedModes.includes(m.key) && (key === 'semantic' || m.key !== 'once')
        : WORKLOAD_MODES[key].includes(m.key),
    );
  const semantic = trainWorkload(N);
  const ideal = idealOutcome(semantic, INITIAL_FILES);
  const figures: Figures = {
    merge_requests: N,
    t_ms: T,
    ideal_landed: ideal.landed.length,
    ideal_failed: ideal.failed.join(' '),
  };
  // What a linear train could do at best on the semantic workload (one round is one T), beside what it did.
  for (const mode of MODES) {
    const depth = depthOf(mode);
    if (depth === undefined) continue;
    const best = idealTrain(ideal.failed, N, depth);
    figures[`${mode.key}_ideal_rounds`] = best.rounds;
    figures[`${mode.key}_ideal_ci_runs`] = best.ciRuns;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'hookbot-bench-train-'));
  const sb = await startSandbox({ adminToken: 'bench-train-root', hookTimeoutMs: 2_000 });
  try {
    if (wantedWorkloads.includes('semantic'))
      await runWorkload(sb, dir, { key: 'semantic', workload: semantic }, modesOf('semantic'), '', figures);
    if (wantedWorkloads.includes('flaky')) {
      figures.flaky_merge_requests = N;
      figures.flaky_rate = FLAKE_RATE;
      figures.flaky_seed = FLAKY_SEED;
      const spec: Spec = {
        key: 'flaky',
        workload: goodWorkload(N, 'flaky'),
        flakes: { rate: FLAKE_RATE, seed: FLAKY_SEED },
      };
      await runWorkload(sb, dir, spec, modesOf('flaky'), 'flaky_', figures);
    }
    if (wantedWorkloads.includes('push')) {
      figures.push_merge_requests = PUSH_N;
      figures.push_position = PUSHED_POSITION;
      const spec: Spec = { key: 'push', workload: goodWorkload(PUSH_N, 'push'), pushAt: PUSHED_POSITION };
      await runWorkload(sb, dir, spec, modesOf('push'), 'push_', figures);
    }
  } finally {
    await sb.close();
    await rm(dir, { recursive: true, force: true });
  }
  if (wantedWorkloads.includes('hook')) {
    try {
      Object.assign(figures, await hookRound({ t: T, mergeRequests: N, depth: 5, rules: queueRules }));
    } catch (error) {
      figures.hook_error = String(error instanceof Error ? error.message : error).slice(0, 300);
    }
  }
  return figures;
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) console.log(await run());
