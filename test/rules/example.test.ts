import { beforeAll, describe, expect, it } from 'vitest';
import { templateMarker } from '../../src/rules/engine/comment-marker.ts';
import type { CompiledRuleSet } from '../../src/rules/engine/compile.ts';
import { evaluate } from '../../src/rules/engine/engine.ts';
import { loadRules } from '../../src/rules/grammar/load.ts';
import type { ItemSnapshot } from '../../src/rules/engine/snapshot.ts';
import { issue, mergeRequest, NOW } from './support.ts';

// The issue's example rule file, evaluated whole on fixtures of fresh state.
describe('the example rule file', () => {
  let rules: CompiledRuleSet;
  beforeAll(async () => {
    const loaded = await loadRules('test/fixtures/rules/example');
    expect(loaded.problems).toEqual([]);
    rules = loaded.byProject('acme/web');
  });
  const plan = (item: ItemSnapshot) =>
    evaluate(rules, item, { now: NOW }).plan.map(({ rule, action, call }) => ({ rule, action, call }));
  const mrUpdate = { kind: 'merge_request', action: 'update', byBot: false } as const;

  it('triages a new bug report: one labels write and a welcome comment', () => {
    const text = 'Thanks @alice, a maintainer will look at this soon.';
    const marker = templateMarker(
      'triage bug reports',
      'Thanks @{{ author.username }}, a maintainer will look at this soon.',
    ).id;
    expect(plan(issue('issue-open'))).toEqual([
      {
        rule: 'triage bug reports',
        action: 'label',
        call: {
          op: 'issues.update',
          args: { project: 8, issue_id: 43, edit: { labels: ['ui', 'bug', 'needs-triage'] } },
          labels: { add: ['bug', 'needs-triage'], remove: [] },
        },
      },
      {
        rule: 'triage bug reports',
        action: 'comment',
        call: {
          op: 'notes.createIssueNote',
          args: { project: 8, issue_id: 43, body: `${text}\n\n<!-- ${marker} -->` },
          marker,
        },
      },
    ]);
  });

  it.each([
    { name: 'a report already labelled bug', item: issue('issue-open', { labels: ['bug'] }) },
    { name: 'a title without bug or crash', item: issue('issue-open', { title: 'Crashes on start' }) },
    {
      name: 'the same report, updated',
      item: issue('issue-open', { trigger: { kind: 'issue', action: 'update', byBot: false } }),
    },
    {
      name: 'an issue the bot itself opened',
      item: issue('issue-open', { trigger: { kind: 'issue', action: 'open', byBot: true } }),
    },
  ])('leaves alone $name', ({ item }) => {
    expect(plan(item)).toEqual([]);
  });

  it('moves a support question, on open and on update', () => {
    for (const action of ['open', 'update'] as const) {
      const question = issue('issue-open', {
        title: 'How do I log in?',
        labels: ['question'],
        trigger: { kind: 'issue', action, byBot: false },
      });
      expect(plan(question)).toEqual([
        {
          rule: 'move support questions',
          action: 'move',
          call: { op: 'issues.move', args: { project: 8, issue_id: 43, to_project: 'support/helpdesk' } },
        },
      ]);
    }
  });

  it('merges a green merge request labelled automerge, at the evaluated head', () => {
    expect(plan(mergeRequest('mr-green'))).toEqual([
      {
        rule: 'merge when green',
        action: 'merge',
        call: {
          op: 'mergeRequests.merge',
          args: {
            project: 8,
            merge_request_id: 7,
            sha: '1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c',
            should_remove_source_branch: true,
          },
        },
      },
    ]);
  });

  it.each([
    { name: 'a required status still running', item: mergeRequest('mr-pending') },
    { name: 'no status on the head yet', item: mergeRequest('mr-no-status') },
    {
      name: 'a head that was not read',
      item: mergeRequest('mr-unread', { labels: ['automerge'], trigger: mrUpdate }),
    },
    { name: 'work in progress', item: mergeRequest('mr-green', { work_in_progress: true }) },
    { name: 'no automerge label', item: mergeRequest('mr-green', { labels: [] }) },
    { name: 'already merged', item: mergeRequest('mr-green', { state: 'merged' }) },
  ])('does not merge with $name', ({ item }) => {
    expect(plan(item)).toEqual([]);
  });

  it('cancels merge-when-build-succeeds on a blocked merge request', () => {
    const blocked = mergeRequest('mr-pending', { labels: ['do-not-merge'], merge_when_build_succeeds: true });
    expect(plan(blocked)).toEqual([
      {
        rule: 'stop auto-merge when blocked',
        action: 'cancel_merge',
        call: { op: 'mergeRequests.cancelMergeWhenBuildSucceeds', args: { project: 8, merge_request_id: 8 } },
      },
    ]);
  });

  it('closes a stale issue in the daily sweep, with a comment first', () => {
    expect(plan(issue('issue-stale')).map((call) => `${call.action}: ${call.call.op}`)).toEqual([
      'comment: notes.createIssueNote',
      'close: issues.update',
    ]);
    expect(plan(issue('issue-stale', { labels: ['pinned'] }))).toEqual([]);
    expect(plan(issue('issue-stale', { updated_at: '2016-03-01T00:00:00.000Z' }))).toEqual([]);
  });

  it('applies the default rules to every project without a file of its own', async () => {
    const loaded = await loadRules('test/fixtures/rules/example');
    expect(loaded.byProject('other/project')).toBe(loaded.byProject('acme/web'));
    expect(loaded.byProject('acme/web').rules.map((rule) => rule.name)).toEqual([
      'triage bug reports',
      'move support questions',
      'merge when green',
      'stop auto-merge when blocked',
      'close stale issues',
    ]);
  });
});
