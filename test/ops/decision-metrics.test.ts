import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withDecisionMetrics } from '../../src/ops/decision-metrics.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { createFileStore } from '../../src/state/file/file-store.ts';

describe('decision metrics', () => {
  it('counts evaluations, matches and actions per rule, and leaves every store method working', async () => {
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
    expect(text).toMatch(/hookbot_rule_actions_total\{rule="triage",action="label",result="done"\} 1/);
    expect(text).toMatch(/hookbot_rule_actions_total\{rule="other",action="label",result="noop"\} 1/);
    await store.close();
  });
});
