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

  it("moves a confidential issue for the operator's rules, never for a project's own .hookbot.yml", () => {
    const secret = issue('issue-open', { confidential: true });
    const move = { move: { to: 'acme/helpdesk' } };
    expect(runAction(move, secret)).toEqual([
      {
        call: { op: 'issues.move', args: { project: 8, issue_id: 43, to_project: 'acme/helpdesk' } },
        reason: 'move to acme/helpdesk',
      },
    ]);
    expect(runAction(move, secret, [], 'test rule', true)).toEqual({
      skipped:
        "a confidential issue is not moved by a project's own .hookbot.yml: it could reach readers of acme/helpdesk who may not read it here (the operator's rules may move it)",
    });
    // Not confidential: a repository rule moves it (within the namespace, as allowed).
    expect(runAction(move, issue('issue-open'), [], 'test rule', true)).toHaveLength(1);
  });
});
