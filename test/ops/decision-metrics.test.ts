import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withDecisionMetrics } from '../../src/ops/decision-metrics.ts';
import { runInNewLogContext } from '../../src/ops/log-context.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { createFileStore } from '../../src/state/file/file-store.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';

describe('decision metrics', () => {
  it('counts evaluations and matches per rule, and leaves every store method working', async () => {
    const store = createFileStore({
      path: path.join(mkdtempSync(path.join(tmpdir(), 'hookbot-dm-')), 'state.json'),
    });
    await store.open();
    const metrics = createMetrics({ defaultMetrics: false });
    const observed = withDecisionMetrics(store, metrics);
    // Methods of the file store use private fields: they must run on the store itself.
    await observed.setNextRun('rules', 'acme/web', 42);
    expect(observed.nextRun('rules', 'acme/web')).toBe(42);
    await observed.recordDecision('issue:1:2', {
      evaluation: {
        trigger: { kind: 'issue' },
        rules: [
          { rule: 'triage', matched: true },
          { rule: 'other', matched: false },
        ],
      },
      execution: {
        calls: [
          { rule: 'triage', action: 'label', status: 'done' },
          { rule: 'triage, other', action: 'label', status: 'skipped' },
        ],
      },
    });
    expect(observed.latestDecision('issue:1:2')).toBeDefined();
    const text = await metrics.text();
    expect(text).toMatch(/hookbot_rule_matches_total\{rule="triage"\} 1/);
    expect(text).not.toMatch(/hookbot_rule_matches_total\{rule="other"\}/);
    expect(text).toMatch(/hookbot_evaluations_total\{source="hook"\} 1/);
    // Actions are counted where the executor settles them (every outcome, decision or not), not
    // here: counting both would count each action twice.
    expect(text).not.toMatch(/hookbot_rule_actions_total\{/);
    await store.close();
  });

  it('counts an evaluation made in a sweep run as a sweep, whatever its trigger', async () => {
    const store = createMemoryStore();
    await store.open();
    const metrics = createMetrics({ defaultMetrics: false });
    const observed = withDecisionMetrics(store, metrics);
    // The reconcile sweep evaluates items under a hook-like trigger (issue, update): the run's job
    // id, not the trigger, says a sweep did it.
    const decision = { evaluation: { trigger: { kind: 'issue' }, rules: [] } };
    await runInNewLogContext({ job: 'reconcile:20250301T140500Z-1' }, () =>
      observed.recordDecision('issue:1:2', decision),
    );
    await runInNewLogContext({ delivery: 'd1', deliveries: ['d1'] }, () =>
      observed.recordDecision('issue:1:3', decision),
    );
    const text = await metrics.text();
    expect(text).toMatch(/hookbot_evaluations_total\{source="sweep"\} 1/);
    expect(text).toMatch(/hookbot_evaluations_total\{source="hook"\} 1/);
    await store.close();
  });
});
