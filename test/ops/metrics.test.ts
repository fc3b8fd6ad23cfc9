import { describe, expect, it } from 'vitest';
import { ACTION_RESULTS, actionResultOf, createMetrics, SWEEP_RESULTS } from '../../src/ops/metrics.ts';
import type { CallStatus } from '../../src/rules/executor/types.ts';

const MERGE_ROUTE = '/projects/:id/merge_requests/:merge_request_id/merge';

describe('createMetrics', () => {
  it('exposes each metric with its labels after recording', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.delivery('merge_request', 'accepted');
    metrics.delivery('merge_request', 'accepted');
    metrics.delivery('push', 'ignored');
    metrics.queueDepth(3);
    metrics.evaluation('hook');
    metrics.ruleMatch('automerge');
    metrics.ruleAction('automerge', 'merge', 'done');
    metrics.apiCall({ method: 'GET', route: '/projects/:id/issues', status: 200, durationMs: 120 });
    metrics.apiCall({ method: 'PUT', route: MERGE_ROUTE, status: undefined, durationMs: 10_000 });
    metrics.ack(0.002);
    metrics.evaluationTime(0.03);
    metrics.hookToAction(1.5);
    metrics.stateCommit(0.003);
    metrics.sweepRun('merge_watch', 'ok');
    metrics.breakerTrip('close-stale');

    const lines = (await metrics.text()).split('\n');
    const expected = [
      'hookbot_deliveries_total{kind="merge_request",outcome="accepted"} 2',
      'hookbot_deliveries_total{kind="push",outcome="ignored"} 1',
      'hookbot_queue_depth 3',
      'hookbot_evaluations_total{source="hook"} 1',
      'hookbot_rule_matches_total{rule="automerge"} 1',
      'hookbot_rule_actions_total{rule="automerge",action="merge",result="done"} 1',
      'hookbot_api_calls_total{method="GET",route="/projects/:id/issues",status="200"} 1',
      `hookbot_api_calls_total{method="PUT",route="${MERGE_ROUTE}",status="error"} 1`,
      'hookbot_api_call_duration_seconds_bucket{le="0.1",method="GET",route="/projects/:id/issues"} 0',
      'hookbot_api_call_duration_seconds_bucket{le="0.25",method="GET",route="/projects/:id/issues"} 1',
      'hookbot_api_call_duration_seconds_sum{method="GET",route="/projects/:id/issues"} 0.12',
      'hookbot_ack_seconds_bucket{le="0.0025"} 1',
      'hookbot_ack_seconds_count 1',
      'hookbot_state_commit_seconds_bucket{le="0.0025"} 0',
      'hookbot_state_commit_seconds_bucket{le="0.005"} 1',
      'hookbot_evaluation_seconds_count 1',
      'hookbot_hook_to_action_seconds_bucket{le="1"} 0',
      'hookbot_hook_to_action_seconds_bucket{le="2.5"} 1',
      'hookbot_sweep_runs_total{sweep="merge_watch",result="ok"} 1',
      'hookbot_breaker_trips_total{rule="close-stale"} 1',
    ];
    for (const line of expected) expect(lines, line).toContain(line);
  });

  it('includes the default process metrics, and can leave them out', async () => {
    expect(await createMetrics().text()).toMatch(/^process_cpu_user_seconds_total /m);
    expect(await createMetrics({ defaultMetrics: false }).text()).not.toMatch(
      /^process_cpu_user_seconds_total /m,
    );
  });

  it('each instance has its own registry (no global state shared between them)', async () => {
    const first = createMetrics({ defaultMetrics: false });
    const second = createMetrics({ defaultMetrics: false });
    first.ruleMatch('only-first');
    expect(await first.text()).toContain('hookbot_rule_matches_total{rule="only-first"} 1');
    expect(await second.text()).not.toContain('only-first');
    expect(first.registry).not.toBe(second.registry);
  });

  it('names its content type for GET /metrics', () => {
    expect(createMetrics({ defaultMetrics: false }).contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('labels deliveries from a closed set: the known kinds, unknown (none given) and other', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    for (let n = 0; n < 100; n++) metrics.delivery(`made-up-${n}`, 'ignored');
    metrics.delivery(undefined, 'bad_request');
    metrics.delivery('note', 'accepted');
    const lines = (await metrics.text()).split('\n').filter((l) => l.startsWith('hookbot_deliveries_total{'));
    expect(lines.sort()).toEqual([
      'hookbot_deliveries_total{kind="note",outcome="accepted"} 1',
      'hookbot_deliveries_total{kind="other",outcome="ignored"} 100',
      'hookbot_deliveries_total{kind="unknown",outcome="bad_request"} 1',
    ]);
  });

  it('gives every outcome of the executor its own result label, from a closed set', () => {
    const statuses: Record<CallStatus, string> = {
      done: 'done',
      skipped: 'skipped',
      failed: 'failed',
      ambiguous: 'ambiguous',
      withdrawn: 'withdrawn',
      'dry-run': 'dry_run',
    };
    for (const [status, label] of Object.entries(statuses))
      expect(actionResultOf({ status: status as CallStatus }), status).toBe(label);
    // A failure that parked the action is apart from one that will be retried.
    expect(actionResultOf({ status: 'failed', parked: 'gave up after 5 attempts' })).toBe('parked');
    // A withdrawn action was never "failed" (the label it had before).
    expect(actionResultOf({ status: 'withdrawn' })).not.toBe('failed');
    const labels = new Set([...Object.values(statuses), 'parked']);
    expect([...ACTION_RESULTS].sort()).toEqual([...labels].sort());
  });

  it('counts sweep runs by a result of a closed set', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    for (const result of SWEEP_RESULTS) metrics.sweepRun('rules', result);
    const text = await metrics.text();
    for (const result of SWEEP_RESULTS)
      expect(text).toContain(`hookbot_sweep_runs_total{sweep="rules",result="${result}"} 1`);
  });
});
