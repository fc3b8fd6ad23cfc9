import { describe, expect, it } from 'vitest';
import { describeCondition, issue, runCondition } from '../support.ts';

describe('assignee condition', () => {
  it.each([
    { name: 'null: unassigned item', fixture: 'issue-open' as const, spec: null, ok: true, value: null },
    { name: 'null: assigned item', fixture: 'issue-stale' as const, spec: null, ok: false, value: '@carol' },
    {
      name: 'username of the assignee',
      fixture: 'issue-stale' as const,
      spec: 'carol',
      ok: true,
      value: '@carol',
    },
    {
      name: 'a username on an unassigned item',
      fixture: 'issue-open' as const,
      spec: 'carol',
      ok: false,
      value: null,
    },
    {
      name: 'in',
      fixture: 'issue-stale' as const,
      spec: { in: ['dave', 'carol'] },
      ok: true,
      value: '@carol',
    },
  ])('$name', ({ fixture, spec, ok, value }) => {
    expect(runCondition({ assignee: spec }, issue(fixture))).toEqual({ value, ok });
  });

  it('describes nobody', () => {
    expect(describeCondition({ assignee: null })).toBe('assignee is nobody');
  });
});
