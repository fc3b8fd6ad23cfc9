import { describe, expect, it } from 'vitest';
import { decisionView, parkedView } from '../../src/status/decision-view.ts';
import { DECISION, MR_KEY } from './status-fixture.ts';

describe('decisionView', () => {
  it('reads what the page shows from a decision as the item processor records it', () => {
    const view = decisionView({ itemKey: MR_KEY, at: 5, decision: JSON.parse(JSON.stringify(DECISION)) });
    expect(view).toMatchObject({
      itemKey: MR_KEY,
      at: 5,
      item: { kind: 'merge_request', id: 42, iid: 7, project: 'acme/web', state: 'opened' },
      event: 'merge_request.update',
      dryRun: false,
      matched: ['policy-status'],
      plan: [
        {
          rule: 'policy-status',
          action: 'status',
          op: 'statuses.create',
          reason: 'the MR follows the policy',
        },
      ],
      execution: [{ status: 'failed', call: 'statuses.create policy=success' }],
      outcome: '1 failed',
      text: DECISION.text,
    });
    expect(view.unreadable).toBeUndefined();
  });

  const odd: { name: string; decision: unknown; expected: Record<string, unknown> }[] = [
    {
      name: 'not an object at all',
      decision: 'garbage',
      expected: { unreadable: true, outcome: 'unknown', matched: [] },
    },
    {
      name: 'no evaluation (an older record)',
      decision: { text: 'closed as stale' },
      expected: { text: 'closed as stale', matched: [], plan: [], outcome: 'nothing to do' },
    },
    {
      name: 'a malformed plan: the rest still shows',
      decision: {
        evaluation: { rules: [{ rule: 'a', matched: true }], plan: 'nope' },
        execution: {
          calls: [
            { status: 'done', call: 'x' },
            { status: 'done', call: 'y' },
          ],
        },
      },
      expected: { matched: ['a'], plan: [], outcome: '2 done' },
    },
  ];
  for (const { name, decision, expected } of odd)
    it(`copes with a record that is ${name}`, () => {
      expect(decisionView({ itemKey: 'issue:1:2', at: 1, decision })).toMatchObject({
        itemKey: 'issue:1:2',
        ...expected,
      });
    });
});

describe('parkedView', () => {
  const base = { id: 'a1', itemKey: 'issue:1:2', rule: 'r', attempts: 3, nextTryAt: 0, createdAt: 10 };

  it('shows the operation, never the call arguments', () => {
    const view = parkedView({
      ...base,
      call: {
        v: 1,
        project: 'acme/web',
        planned: { action: 'comment', call: { op: 'notes.createIssueNote', args: { body: 'hello there' } } },
      },
      parked: { reason: 'gone', at: 20 },
      lastError: '404 Not found',
    });
    expect(view).toEqual({
      id: 'a1',
      itemKey: 'issue:1:2',
      rule: 'r',
      project: 'acme/web',
      action: 'comment',
      op: 'notes.createIssueNote',
      attempts: 3,
      reason: 'gone',
      parkedAt: 20,
      createdAt: 10,
      lastError: '404 Not found',
    });
    expect(JSON.stringify(view)).not.toContain('hello there');
  });

  it('leaves out a last error that only repeats the reason, and copes with an unknown call', () => {
    const view = parkedView({ ...base, call: 42, parked: { reason: 'boom', at: 20 }, lastError: 'boom' });
    expect(view).toEqual({
      id: 'a1',
      itemKey: 'issue:1:2',
      rule: 'r',
      attempts: 3,
      reason: 'boom',
      parkedAt: 20,
      createdAt: 10,
    });
  });
});
