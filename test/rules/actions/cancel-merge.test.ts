import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction } from '../support.ts';

describe('cancel_merge action', () => {
  it.each([
    {
      name: 'cancels merge_when_build_succeeds',
      item: mergeRequest('mr-pending', { merge_when_build_succeeds: true }),
      outcome: [
        {
          call: {
            op: 'mergeRequests.cancelMergeWhenBuildSucceeds',
            args: { project: 8, merge_request_id: 8 },
          },
          reason: 'cancel merge_when_build_succeeds',
        },
      ],
    },
    {
      name: 'plans nothing when it is not set',
      item: mergeRequest('mr-pending'),
      outcome: { skipped: 'merge_when_build_succeeds is not set' },
    },
    {
      name: 'plans nothing on a merged merge request',
      item: mergeRequest('mr-pending', { state: 'merged', merge_when_build_succeeds: true }),
      outcome: { skipped: 'the merge request is merged' },
    },
    {
      name: 'does not apply to issues',
      item: issue('issue-open'),
      outcome: { skipped: 'applies to merge requests only' },
    },
  ])('$name', ({ item, outcome }) => {
    expect(runAction('cancel_merge', item)).toEqual(outcome);
  });
});
