import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction } from '../support.ts';

describe('subscribe action', () => {
  it.each([
    {
      name: 'subscribes to an issue',
      item: issue('issue-open'),
      outcome: [
        { call: { op: 'issues.subscribe', args: { project: 8, issue_id: 43 } }, reason: 'subscribe' },
      ],
    },
    {
      name: 'plans nothing when subscribed',
      item: mergeRequest('mr-green'),
      outcome: { skipped: 'already subscribed' },
    },
    {
      name: 'plans the call when the subscription was not read (the server answers 304)',
      item: mergeRequest('mr-pending'),
      outcome: [
        {
          call: { op: 'mergeRequests.subscribe', args: { project: 8, merge_request_id: 8 } },
          reason: 'subscribe',
        },
      ],
    },
  ])('$name', ({ item, outcome }) => {
    expect(runAction('subscribe', item)).toEqual(outcome);
  });
});
