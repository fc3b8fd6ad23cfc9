/**
 * Runs many seeded cases against the real bot: one world (sandbox, relay, proxy, runtime) per
 * batch of cases, fresh items per case. A failing case is shrunk in a world of its own (steps
 * dropped greedily, then deliveries made normal, while the same clause still fails, within a time
 * budget) and reported with its seed and its minimal replay.
 *
 *   MODEL_SEED=1234 MODEL_CASES=1 MODEL_STEPS=10 npx vitest run test/model   # one case, then its shrink
 */
import { runCase, settle, type CaseResult, type Clause, type Violation } from './run-case.ts';
import { generateCase, showSteps, type Case, type Step } from './steps.ts';
import { createWorld, MAINT_TOKEN, type World } from './world.ts';

export interface RunOptions {
  /** First seed; cases use seed, seed+1, ... */
  seed: number;
  cases: number;
  /** Cases per world (sandbox + bot). */
  batch: number;
  /**
   * Worlds running cases side by side (default 1). A case spends most of its time waiting (debounce
   * windows, the sandbox's git), so a few lanes use two cores far better than one; each lane has
   * its own sandbox and bot, and a case's seed decides its steps whatever lane runs it.
   */
  lanes?: number;
  /** Random steps per case, at most (two opening steps come on top). */
  maxSteps: number;
  /** Time for shrinking all failures together. */
  shrinkBudgetMs: number;
  /** Logs a line of progress every so many cases (a long run shows how far it got). */
  progressEvery?: number;
  /** Failures shrunk and reported in full, at most. */
  maxReported?: number;
  log?: (line: string) => void;
}

export interface Failure {
  seed: number;
  violations: Violation[];
  steps: Step[];
  /** The smallest list of steps found that still fails with `clause`. */
  minimal?: { steps: Step[]; violations: Violation[]; clause: Clause };
}

export interface RunReport {
  cases: number;
  steps: number;
  requests: number;
  deliveries: number;
  failures: Failure[];
  /** Violations per clause over all cases (a case counts once per clause). */
  byClause: Record<Clause, number>;
  ms: number;
}

/** A world ready for cases: the bot has commented once (markers to copy) and reconciled once. */
export async function readyWorld(options: Parameters<typeof createWorld>[0] = {}): Promise<World> {
  const world = await createWorld(options);
  const res = await fetch(`${world.sb.apiUrl}/projects/${world.projectId}/issues`, {
    method: 'POST',
    headers: { 'private-token': MAINT_TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'Warm-up issue' }),
  });
  const issue = (await res.json()) as { id: number };
  await settle(world);
  await world.runtime().sweeps.run('reconcile');
  await settle(world);
  const rec = world.sb.ctx.db.data.issues.find((i) => i.id === issue.id);
  if (rec) rec.state = 'closed';
  return world;
}

const clauses = (violations: readonly Violation[]) => new Set(violations.map((v) => v.clause));

export async function runModel(options: RunOptions): Promise<RunReport> {
  const log = options.log ?? (() => undefined);
  const started = performance.now();
  const report: RunReport = {
    cases: 0,
    steps: 0,
    requests: 0,
    deliveries: 0,
    failures: [],
    byClause: { a: 0, 'a-hook': 0, b: 0, c: 0, d: 0, liveness: 0 },
    ms: 0,
  };
  const failures: Failure[] = [];
  async function runLane(lane: number, lanes: number): Promise<void> {
    let world: World | undefined;
    let done = 0;
    try {
      for (let i = lane; i < options.cases; i += lanes) {
        if (!world || done % options.batch === 0) {
          await world?.close();
          world = await readyWorld();
        }
        done++;
        const kase = generateCase(options.seed + i, options.maxSteps);
        let result: CaseResult;
        try {
          result = await runCase(world, kase);
        } catch (error) {
          // The harness itself broke (the world is in an unknown state): a failure, and a new world.
          result = {
            violations: [{ clause: 'liveness', message: `the case did not run: ${describe(error)}` }],
            requests: 0,
            deliveries: 0,
            ms: 0,
          };
          await world.close().catch(() => undefined);
          world = undefined;
        }
        report.cases++;
        report.steps += kase.steps.length;
        report.requests += result.requests;
        report.deliveries += result.deliveries;
        for (const clause of clauses(result.violations)) report.byClause[clause]++;
        if (options.progressEvery && report.cases % options.progressEvery === 0)
          log(
            `${report.cases} of ${options.cases} cases, ${report.steps} steps, ${failures.length + (result.violations.length > 0 ? 1 : 0)} failing, ${((performance.now() - started) / 1000).toFixed(0)} s`,
          );
        if (result.violations.length > 0) {
          failures.push({ seed: kase.seed, violations: result.violations, steps: kase.steps });
          log(`seed ${kase.seed}: ${result.violations.map((v) => `(${v.clause}) ${v.message}`).join('; ')}`);
        }
      }
    } finally {
      await world?.close();
    }
  }
  const lanes = Math.max(1, Math.min(options.lanes ?? 1, options.cases));
  await Promise.all(Array.from({ length: lanes }, (_, lane) => runLane(lane, lanes)));
  // In seed order, whatever lane finished first: the report reads the same on every run.
  report.failures = failures.sort((a, b) => a.seed - b.seed);

  // Shrink, within the budget: the first failure of each clause first.
  const deadline = performance.now() + options.shrinkBudgetMs;
  const order: Failure[] = [];
  const seen = new Set<Clause>();
  for (const f of report.failures) {
    const clause = f.violations[0]!.clause;
    if (!seen.has(clause)) {
      seen.add(clause);
      order.push(f);
    }
  }
  for (const f of report.failures) if (!order.includes(f)) order.push(f);
  const maxReported = options.maxReported ?? 6;
  let shrinkWorld: World | undefined;
  try {
    for (const failure of order.slice(0, maxReported)) {
      if (performance.now() > deadline) break;
      shrinkWorld ??= await readyWorld();
      const result = await shrink(
        failure,
        deadline,
        () => shrinkWorld!,
        async () => {
          await shrinkWorld?.close().catch(() => undefined);
          shrinkWorld = await readyWorld();
        },
      );
      if (result) failure.minimal = result;
    }
  } finally {
    await shrinkWorld?.close();
  }
  report.ms = performance.now() - started;
  return report;
}

async function shrink(
  failure: Failure,
  deadline: number,
  world: () => World,
  renew: () => Promise<void>,
): Promise<Failure['minimal']> {
  const clause = failure.violations[0]!.clause;
  const fails = async (steps: Step[]): Promise<Violation[] | undefined> => {
    try {
      const result = await runCase(world(), { seed: failure.seed, steps });
      const same = result.violations.filter((v) => v.clause === clause);
      return same.length > 0 ? result.violations : undefined;
    } catch {
      await renew();
      return undefined;
    }
  };
  // Replayed first: a failure that does not come back is reported as it was.
  let best = failure.steps;
  let violations = await fails(best);
  if (!violations) return undefined;
  let progress = true;
  while (progress && performance.now() < deadline) {
    progress = false;
    for (let i = best.length - 1; i >= 2 && performance.now() < deadline; i--) {
      const candidate = [...best.slice(0, i), ...best.slice(i + 1)];
      const v = await fails(candidate);
      if (v) {
        best = candidate;
        violations = v;
        progress = true;
      }
    }
  }
  for (let i = 0; i < best.length && performance.now() < deadline; i++) {
    const step = best[i]!;
    if (!('d' in step) || step.d === 'normal') continue;
    const candidate = [...best];
    candidate[i] = { ...step, d: 'normal' } as Step;
    const v = await fails(candidate);
    if (v) {
      best = candidate;
      violations = v;
    }
  }
  return { steps: best, violations, clause };
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/** The report of a run in words: figures, then each failure with its seed and its replay. */
export function formatReport(report: RunReport, options: { seed: number; maxSteps: number }): string {
  const lines = [
    `model-based run: ${report.cases} cases from seed ${options.seed}, ${report.steps} steps, ${report.deliveries} hook deliveries, ${report.requests} bot API requests, ${(report.ms / 1000).toFixed(1)} s`,
    `violations by clause (cases): ${Object.entries(report.byClause)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  ];
  for (const f of report.failures.filter((x) => x.minimal)) {
    const m = f.minimal!;
    lines.push(
      '',
      `seed ${f.seed} violates (${m.clause}); rerun: MODEL_SEED=${f.seed} MODEL_CASES=1 MODEL_STEPS=${options.maxSteps} npx vitest run test/model; minimal steps:`,
      showSteps(m.steps),
      'violations of the minimal replay:',
      ...m.violations.map((v) => `  (${v.clause}) ${v.message}`),
    );
  }
  const unshrunk = report.failures.filter((x) => !x.minimal);
  if (unshrunk.length > 0) {
    lines.push('', `other failing seeds (not shrunk): ${unshrunk.map((f) => f.seed).join(', ')}`);
    for (const f of unshrunk.slice(0, 3))
      lines.push(
        `seed ${f.seed}:`,
        showSteps(f.steps),
        ...f.violations.map((v) => `  (${v.clause}) ${v.message}`),
      );
  }
  return lines.join('\n');
}

export type { Case };
