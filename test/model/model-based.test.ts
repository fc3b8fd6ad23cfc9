/**
 * Issue 13's guarantees, proven on random interleavings: the real bot (runtime, pipeline, engine,
 * executor, sweeps) against the sandbox over HTTP, with duplicated, delayed, reordered, dropped and
 * forged deliveries, 5xx and lost answers on writes, restarts and clock jumps. The oracle (see
 * run-case.ts) reads the sandbox's data, the log of the bot's requests and the bot's outbox.
 *
 * Cases are seeded: `MODEL_SEED` picks the first seed (default fixed, so a run is repeatable),
 * `MODEL_CASES` how many, `MODEL_LANES` how many side by side, `MODEL_STEPS` the random steps per case at most (default 7). A failure
 * prints each failing seed with its shrunk replay. `npm run test:reliability -- model` runs
 * thousands.
 *
 * A case costs about a second on two cores (the sandbox runs real git for every branch, commit,
 * merge and merge request read), mostly waiting; two lanes run side by side. This file runs 150
 * cases by default, and `npm test`'s small reliability run 100 more from other seeds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCase } from './run-case.ts';
import { formatReport, readyWorld, runModel } from './runner.ts';
import { showSteps, type Step } from './steps.ts';
import type { World } from './world.ts';

const SEED = Number(process.env.MODEL_SEED ?? 13_000);
const CASES = Number(process.env.MODEL_CASES ?? 150);
const STEPS = Number(process.env.MODEL_STEPS ?? 7);
const LANES = Number(process.env.MODEL_LANES ?? 2);

describe('model-based: decisions follow the current state (issue 13)', () => {
  describe('the oracle itself, and replays', () => {
    let world: World;
    beforeAll(async () => {
      world = await readyWorld();
    }, 30_000);
    afterAll(async () => {
      await world?.close();
    });

    /**
     * Minimal replays of violations the random runs found (seeds 5130 and 20169, shrunk by hand
     * into deterministic steps): kept so that each stays fixed once fixed.
     */
    const replays: [string, Step[]][] = [
      [
        "a pending /triage label write is not withdrawn by another user's note (seed 20169)",
        [
          { k: 'open-mr', labels: [], d: 'normal' },
          { k: 'open-issue', d: 'normal' },
          { k: 'settle' },
          { k: 'fault', target: 'labels', mode: '503', times: 4 },
          { k: 'note', on: 'issue', by: 'maint', text: 'triage', d: 'normal' },
          { k: 'settle' },
          { k: 'note', on: 'issue', by: 'alice', text: 'plain', d: 'normal' },
        ],
      ],
      [
        'no merge when the MR read right before the call shows do-not-merge (seed 5130)',
        [
          { k: 'open-mr', labels: [], ci: 'success', d: 'normal' },
          { k: 'open-issue', d: 'normal' },
          { k: 'settle' },
          { k: 'sneak', what: 'dnm', skip: 1 },
          { k: 'label', op: 'add', label: 'automerge', d: 'normal' },
        ],
      ],
      [
        'no merge when the MR read right before the call lost automerge',
        [
          { k: 'open-mr', labels: [], ci: 'success', d: 'normal' },
          { k: 'open-issue', d: 'normal' },
          { k: 'settle' },
          { k: 'sneak', what: 'unlabel', skip: 1 },
          { k: 'label', op: 'add', label: 'automerge', d: 'normal' },
        ],
      ],
    ];
    for (const [name, steps] of replays)
      it(`replay: ${name}`, async () => {
        const result = await runCase(world, { seed: 0, steps });
        expect(result.violations, showSteps(steps)).toEqual([]);
      }, 30_000);

    it('catches a merge the state did not allow and a comment posted twice', async () => {
      const result = await runCase(world, {
        seed: 0,
        steps: [
          { k: 'open-mr', labels: ['do-not-merge'], d: 'normal' },
          { k: 'open-issue', d: 'normal' },
          { k: 'settle' },
          { k: 'rogue', what: 'comment' },
          { k: 'rogue', what: 'merge' },
        ],
      });
      const clauses = new Set(result.violations.map((v) => v.clause));
      expect(clauses.has('b'), JSON.stringify(result.violations)).toBe(true);
      expect(clauses.has('c'), JSON.stringify(result.violations)).toBe(true);
    }, 30_000);
  });

  it(`holds on ${CASES} random cases from seed ${SEED}`, async () => {
    const report = await runModel({
      seed: SEED,
      cases: CASES,
      batch: 20,
      lanes: LANES,
      maxSteps: STEPS,
      shrinkBudgetMs: 20_000,
      maxReported: 3,
    });
    const text = formatReport(report, { seed: SEED, maxSteps: STEPS });
    if (report.failures.length > 0) console.log(text);
    expect(
      report.failures.map(
        (f) => `seed ${f.seed}: ${f.violations.map((v) => `(${v.clause}) ${v.message}`).join('; ')}`,
      ),
      text,
    ).toEqual([]);
    expect(report.cases).toBe(CASES);
  }, 900_000);
});
