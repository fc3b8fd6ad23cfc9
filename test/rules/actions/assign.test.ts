import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction } from '../support.ts';

describe('assign action', () => {
  it.each([
    {
      name: 'assigns an unassigned issue',
      item: issue('issue-open'),
      outcome: [
        {
          call: { op: 'issues.assign', args: { project: 8, issue_id: 43, username: 'carol' } },
          reason: 'assign to @carol',
        },
      ],
    },
    {
      name: 'reassigns a merge request',
      item: mergeRequest('mr-green'),
      outcome: [
        {
          call: { op: 'mergeRequests.assign', args: { project: 8, merge_request_id: 7, username: 'carol' } },
          reason: 'assign to @carol',
        },
      ],
    },
    {
      name: 'plans nothing when already assigned',
      item: issue('issue-stale'),
      outcome: { skipped: 'already assigned to @carol' },
    },
  ])('$name', ({ item, outcome }) => {
    expect(runAction({ assign: { to: 'carol' } }, item)).toEqual(outcome);
  });
});
