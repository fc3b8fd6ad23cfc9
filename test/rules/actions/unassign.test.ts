import { describe, expect, it } from 'vitest';
import { issue, runAction } from '../support.ts';

describe('unassign action', () => {
  it.each([
    {
      name: 'removes the assignee',
      item: issue('issue-stale'),
      outcome: [
        {
          call: { op: 'issues.assign', args: { project: 8, issue_id: 51, username: null } },
          reason: 'unassign @carol',
        },
      ],
    },
    {
      name: 'plans nothing without assignee',
      item: issue('issue-open'),
      outcome: { skipped: 'nobody is assigned' },
    },
  ])('$name', ({ item, outcome }) => {
    expect(runAction('unassign', item)).toEqual(outcome);
  });
});
