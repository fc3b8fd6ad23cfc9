/**
 * Counts and their nouns agree, in the helper and in the reports that use it: the plan of a rules
 * change and the sweep summaries said "1 open items evaluated" and "1 wait for the next run".
 */
import { describe, expect, it } from 'vitest';
import { planLines } from '../../src/rules/repository/plan.ts';
import type { PlanReport } from '../../src/rules/repository/plan.ts';
import { summarise } from '../../src/scheduler/summary.ts';
import { counted } from '../../src/text/count.ts';

const noCalls = { done: 0, skipped: 0, failed: 0, ambiguous: 0, withdrawn: 0, 'dry-run': 0 };

function plan(changes: Partial<PlanReport>): PlanReport {
  return {
    project: 'acme/web',
    listed: 1,
    listedAll: true,
    evaluated: 1,
    apiCalls: 1,
    budget: { items: 1, apiCalls: 1 },
    changes: [],
    notEvaluated: [],
    ...changes,
  };
}

describe('counted', () => {
  it('says one thing in the singular, and any other number in the plural', () => {
    expect([0, 1, 2].map((n) => counted(n, 'open item'))).toEqual([
      '0 open items',
      '1 open item',
      '2 open items',
    ]);
    expect([1, 3].map((n) => counted(n, 'item waits', 'items wait'))).toEqual([
      '1 item waits',
      '3 items wait',
    ]);
  });
});

describe('reports count in agreement', () => {
  it('the plan of a rules change', () => {
    expect(planLines(plan({}))).toEqual(['no change on the 1 open issue or merge request evaluated']);
    expect(planLines(plan({ evaluated: 2 }))).toEqual([
      'no change on the 2 open issues and merge requests evaluated',
    ]);
    expect(planLines(plan({ budgetReached: 'items' })).at(-1)).toBe(
      'budget reached: 1 of 1 open item evaluated (at most 1); the plan covers those only',
    );
    expect(planLines(plan({ budgetReached: 'apiCalls' })).at(-1)).toBe(
      'budget reached: 1 API call (at most 1) after 1 item; the plan covers those only',
    );
  });

  it('the sweep summaries', () => {
    const reconcile = summarise({
      sweep: 'reconcile',
      dryRun: false,
      aborted: false,
      evaluated: 1,
      failed: 0,
      projects: [
        {
          project: 'acme/web',
          since: '2025-03-01T14:00:00Z',
          items: { issue: 1 },
          pages: 1,
          evaluated: 1,
          failed: 0,
        },
      ],
    });
    expect(reconcile).toContain('acme/web: updated since 2025-03-01T14:00:00Z: 1 item evaluated (1 page)');
    const rules = summarise({
      sweep: 'rules',
      dryRun: false,
      aborted: false,
      tripped: [],
      unpaused: [],
      projects: [
        {
          project: 'acme/web',
          schedules: ['daily'],
          items: { issue: 1 },
          pages: 1,
          rules: [
            {
              rule: 'close stale',
              project: 'acme/web',
              schedule: 'daily',
              outcome: 'ran',
              lookedAt: 3,
              matched: 2,
              acted: 1,
              waiting: 1,
              items: [],
              counts: noCalls,
            },
          ],
        },
      ],
    });
    expect(rules).toContain('acme/web: 1 open issue (1 page)');
    expect(rules).toContain(
      '"close stale" [daily]: 2 of 3 to act on, 1 acted on, 1 waits for the next run (budget)',
    );
  });
});
