import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction } from '../support.ts';

describe('reopen action', () => {
  it.each([
    {
      name: 'reopens a closed issue',
      item: issue('issue-open', { state: 'closed' }),
      outcome: [
        {
          call: { op: 'issues.update', args: { project: 8, issue_id: 43, edit: { state_event: 'reopen' } } },
          reason: 'reopen',
        },
      ],
    },
    {
      name: 'plans nothing on an open issue',
      item: issue('issue-open'),
      outcome: { skipped: 'it is opened, not closed' },
    },
    {
      name: 'plans nothing on a merged merge request',
      item: mergeRequest('mr-green', { state: 'merged' }),
      outcome: { skipped: 'it is merged, not closed' },
    },
  ])('$name', ({ item, outcome }) => {
    expect(runAction('reopen', item)).toEqual(outcome);
  });
});
