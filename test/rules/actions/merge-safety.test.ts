import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../src/rules/engine/engine.ts';
import { mergeRequest, NOW, rulesFrom } from '../support.ts';

// Merge safety in planning, over whole rules: what a careless rule file cannot make the bot do.
describe('merge safety', () => {
  const ops = (yaml: string, item = mergeRequest('mr-green')) =>
    evaluate(rulesFrom(yaml), item, { now: NOW }).plan.map((call) => call.call.op);

  it('never merges without a statuses condition, even when every condition holds', () => {
    expect(
      ops('rules: [ { name: r, on: [status.changed], if: [ { state: opened } ], do: [merge] } ]'),
    ).toEqual([]);
  });

  it('never merges on a statuses condition that holds because it is negated', () => {
    const yaml = `
rules:
  - name: r
    on: [status.changed]
    if: [ { not: { statuses: { required: [ci/build, ci/deploy], state: success } } } ]
    do: [merge]
`;
    expect(ops(yaml)).toEqual([]);
  });

  it('never counts a missing required status as success', () => {
    const yaml =
      'rules: [ { name: r, on: [status.changed], if: [ { statuses: { required: [ci/build, ci/deploy] } } ], do: [merge] } ]';
    expect(ops(yaml)).toEqual([]);
    const evaluation = evaluate(rulesFrom(yaml), mergeRequest('mr-green'), { now: NOW });
    expect(evaluation.rules[0]?.conditions[0]?.value).toEqual({
      'ci/build': 'success',
      'ci/deploy': 'missing',
    });
  });

  it('merges through statuses nested under all, pinned to the head sha it evaluated', () => {
    const yaml =
      'rules: [ { name: r, on: [status.changed], if: [ { all: [ { statuses: { required: [ci/build] } } ] } ], do: [merge] } ]';
    const [call] = evaluate(rulesFrom(yaml), mergeRequest('mr-green'), { now: NOW }).plan;
    expect(call?.call).toEqual({
      op: 'mergeRequests.merge',
      args: { project: 8, merge_request_id: 7, sha: '1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c' },
    });
  });

  it('never arms merge_when_build_succeeds on a head commit with no status yet', () => {
    const yaml = `
rules:
  - name: arm
    on: [merge_request.open]
    if: [ { any: [ { statuses: { required: [ci/build], state: pending } }, { state: opened } ] } ]
    do: [merge_when_build_succeeds]
`;
    const evaluation = evaluate(rulesFrom(yaml), mergeRequest('mr-no-status'), { now: NOW });
    expect(evaluation.rules[0]?.matched).toBe(true);
    expect(evaluation.plan).toEqual([]);
    expect(evaluation.rules[0]?.actions[0]?.skipped).toBe(
      'the head commit has no status yet: merge_when_build_succeeds is never armed on it',
    );
  });

  it('arms merge_when_build_succeeds while the required statuses of the head run', () => {
    const yaml = `
rules:
  - name: arm
    on: [merge_request.update]
    if: [ { statuses: { required: [ci/build, ci/test], state: pending } } ]
    do: [merge_when_build_succeeds]
`;
    expect(ops(yaml, mergeRequest('mr-pending'))).toEqual(['mergeRequests.mergeWhenBuildSucceeds']);
  });
});
