import { describe, expect, it } from 'vitest';
import { issue, runCondition } from '../support.ts';

describe('milestone condition', () => {
  it.each([
    { name: 'title equality', milestone: 'v1.0', spec: 'v1.0', ok: true },
    { name: 'matches', milestone: 'v1.2', spec: { matches: '^v1\\.' }, ok: true },
    { name: 'null: no milestone', milestone: null, spec: null, ok: true },
    { name: 'null: with a milestone', milestone: 'v1.0', spec: null, ok: false },
    { name: 'a title on an item without milestone', milestone: null, spec: 'v1.0', ok: false },
  ])('$name', ({ milestone, spec, ok }) => {
    expect(runCondition({ milestone: spec }, issue('issue-stale', { milestone }))).toEqual({
      value: milestone,
      ok,
    });
  });
});
