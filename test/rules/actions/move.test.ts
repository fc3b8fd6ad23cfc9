import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction } from '../support.ts';

describe('move action', () => {
  it.each([
    {
      name: 'moves an issue to another project',
      item: issue('issue-open'),
      outcome: [
        {
          call: { op: 'issues.move', args: { project: 8, issue_id: 43, to_project: 'support/helpdesk' } },
          reason: 'move to support/helpdesk',
        },
      ],
    },
    {
      name: 'plans nothing when the issue is already there',
      item: issue('issue-open', { project: { id: 12, path_with_namespace: 'Support/Helpdesk' } }),
      outcome: { skipped: 'already in support/helpdesk' },
    },
    {
      name: 'does not move merge requests',
      item: mergeRequest('mr-green'),
      outcome: { skipped: 'applies to issues only' },
    },
  ])('$name', ({ item, outcome }) => {
    expect(runAction({ move: { to: 'support/helpdesk' } }, item)).toEqual(outcome);
  });
});
