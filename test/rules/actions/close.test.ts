import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction } from '../support.ts';

describe('close action', () => {
  it.each([
    {
      name: 'closes an open issue',
      item: issue('issue-open'),
      outcome: [
        {
          call: { op: 'issues.update', args: { project: 8, issue_id: 43, edit: { state_event: 'close' } } },
          reason: 'close',
        },
      ],
    },
    {
      name: 'closes a reopened merge request',
      item: mergeRequest('mr-green', { state: 'reopened' }),
      outcome: [
        {
          call: {
            op: 'mergeRequests.update',
            args: { project: 8, merge_request_id: 7, edit: { state_event: 'close' } },
          },
          reason: 'close',
        },
      ],
    },
    {
      name: 'plans nothing on a closed issue',
      item: issue('issue-open', { state: 'closed' }),
      outcome: { skipped: 'already closed' },
    },
    {
      name: 'plans nothing on a merged merge request',
      item: mergeRequest('mr-green', { state: 'merged' }),
      outcome: { skipped: 'already merged' },
    },
  ])('$name', ({ item, outcome }) => {
    expect(runAction('close', item)).toEqual(outcome);
  });

  it('may be written as a key with no value', () => {
    expect(runAction({ close: null }, issue('issue-open'))).toHaveLength(1);
  });
});
