/**
 * The model-based test of issue 13 at size (test/model): thousands of seeded random interleavings
 * of user actions, delivery faults, API faults, restarts and clock jumps against the real bot in
 * this process and the sandbox over HTTP, each judged at quiescence by the oracle of
 * test/model/run-case.ts. Failures are shrunk and printed with their seed and minimal replay.
 *
 *   RELIABILITY_MODEL_CASES   cases (default 2000; 100 with RELIABILITY_SMALL=1)
 *   RELIABILITY_MODEL_LANES   worlds running cases side by side (default 3)
 *   RELIABILITY_MODEL_SEED    first seed (default 1)
 *   RELIABILITY_MODEL_STEPS   random steps per case at most (default 10)
 */
import { formatReport, runModel } from '../model/runner.ts';
import { Expectations, type ScenarioResult } from './report.ts';
import type { Sizes } from './sizes.ts';

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got ${raw}`);
  return value;
}

export async function modelScenario(sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const seed = int('RELIABILITY_MODEL_SEED', 1);
  const cases = int('RELIABILITY_MODEL_CASES', sizes.small ? 100 : 2_000);
  const maxSteps = int('RELIABILITY_MODEL_STEPS', 10);
  const report = await runModel({
    seed,
    cases,
    batch: 50,
    lanes: int('RELIABILITY_MODEL_LANES', 3),
    maxSteps,
    shrinkBudgetMs: sizes.small ? 60_000 : 300_000,
    maxReported: 6,
    progressEvery: sizes.small ? 0 : 100,
    log: (line) => console.log(`  ${line}`),
  });
  const failing = report.failures.length;
  expect.zero(
    'cases violating the oracle',
    failing,
    failing > 0 ? `\n${formatReport(report, { seed, maxSteps })}` : undefined,
  );
  return {
    name: 'model',
    seconds: (performance.now() - started) / 1000,
    figures: {
      'cases (seeds)': `${report.cases} (${seed}..${seed + report.cases - 1})`,
      'steps (interleavings)': report.steps,
      'hook deliveries': report.deliveries,
      'bot API requests': report.requests,
      'violations (cases per clause)': Object.entries(report.byClause)
        .map(([clause, n]) => `${clause}=${n}`)
        .join(' '),
    },
    failures: expect.failures,
    totals: {},
  };
}
