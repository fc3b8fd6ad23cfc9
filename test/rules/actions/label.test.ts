import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction, runActionUnmatched } from '../support.ts';

describe('label action', () => {
  const item = issue('issue-open', { labels: ['ui', 'needs-triage'] });
  it.each([
    {
      name: 'adds an absent label',
      spec: { add: ['bug'] },
      labels: ['ui', 'needs-triage', 'bug'],
      add: ['bug'],
      remove: [],
    },
    {
      name: 'does not add a present label again',
      spec: { add: ['bug', 'ui'] },
      labels: ['ui', 'needs-triage', 'bug'],
      add: ['bug'],
      remove: [],
    },
    {
      name: 'removes a present label',
      spec: { remove: ['needs-triage', 'absent'] },
      labels: ['ui'],
      add: [],
      remove: ['needs-triage'],
    },
    {
      name: 'toggle adds while the rule matches',
      spec: { toggle: ['stale'] },
      labels: ['ui', 'needs-triage', 'stale'],
      add: ['stale'],
      remove: [],
    },
    {
      name: 'add and remove in one write',
      spec: { add: ['bug'], remove: ['needs-triage'] },
      labels: ['ui', 'bug'],
      add: ['bug'],
      remove: ['needs-triage'],
    },
  ])('$name', ({ spec, labels, add, remove }) => {
    expect(runAction({ label: spec }, item)).toEqual([
      {
        call: {
          op: 'issues.update',
          args: { project: 8, issue_id: 43, edit: { labels } },
          labels: { add, remove },
        },
        reason: [
          add.length ? `add ${add.join(', ')}` : '',
          remove.length ? `remove ${remove.join(', ')}` : '',
        ]
          .filter(Boolean)
          .join('; '),
      },
    ]);
  });

  it.each([
    { name: 'labels already present', spec: { add: ['ui'] } },
    { name: 'labels already absent', spec: { remove: ['bug'] } },
    { name: 'toggled label already present', spec: { toggle: ['ui'] } },
  ])('plans nothing when $name', ({ spec }) => {
    expect(runAction({ label: spec }, item)).toEqual({ skipped: 'the labels are already as wanted' });
  });

  it('writes merge request labels through the merge request', () => {
    expect(runAction({ label: { add: ['ready'] } }, mergeRequest('mr-green'))).toMatchObject([
      {
        call: {
          op: 'mergeRequests.update',
          args: { project: 8, merge_request_id: 7, edit: { labels: ['automerge', 'ready'] } },
        },
      },
    ]);
  });

  it.each([
    {
      name: 'removes a toggled label once the rule stops matching',
      spec: { toggle: ['needs-triage'] },
      outcome: [
        {
          call: {
            op: 'issues.update',
            args: { project: 8, issue_id: 43, edit: { labels: ['ui'] } },
            labels: { add: [], remove: ['needs-triage'] },
          },
          reason: 'the rule no longer matches: remove toggled needs-triage',
        },
      ],
    },
    {
      name: 'says so when the toggled label is already absent',
      spec: { toggle: ['stale'] },
      outcome: { skipped: 'the toggled labels are already absent' },
    },
    { name: 'has nothing to say without toggles', spec: { add: ['needs-triage'] }, outcome: null },
  ])('when the rule does not match: $name', ({ spec, outcome }) => {
    expect(runActionUnmatched({ label: spec }, item)).toEqual(outcome);
  });
});
