import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction } from '../support.ts';

describe('unsubscribe action', () => {
  it.each([
    {
      name: 'unsubscribes from a merge request',
      item: mergeRequest('mr-green'),
      outcome: [
        {
          call: { op: 'mergeRequests.unsubscribe', args: { project: 8, merge_request_id: 7 } },
          reason: 'unsubscribe',
        },
      ],
    },
    {
      name: 'plans nothing when not subscribed',
      item: issue('issue-open'),
      outcome: { skipped: 'not subscribed' },
    },
  ])('$name', ({ item, outcome }) => {
    expect(runAction('unsubscribe', item)).toEqual(outcome);
  });
});
