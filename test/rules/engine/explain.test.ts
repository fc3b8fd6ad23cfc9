import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../src/rules/engine/engine.ts';
import { blockingReasons, explainJson, explainText } from '../../../src/rules/engine/explain.ts';
import { issue, mergeRequest, NOW, rulesFrom } from '../support.ts';

const rules = rulesFrom(
  `
rules:
  - name: triage
    on: [issue.open]
    if:
      - title: { matches: '(?i)\\bcrash\\b' }
      - labels: { none: [bug] }
    do:
      - label: { add: [bug] }
      - comment: "Thanks @{{ author.username }}!"
  - name: merge when green
    on: [merge_request.update]
    if:
      - labels: { any: [automerge] }
      - any: [ { upvotes: { at_least: 1 } }, { author: alice } ]
      - files: { none_match: ['**/*.lock'] }
      - statuses: { required: [ci/build, ci/test] }
    do: [ { merge: { remove_source_branch: true } } ]
  - name: stale
    schedule: daily
    do: [close]
`,
  'rules/acme/web.yml',
);

describe('explainText', () => {
  it('shows, per rule, whether it applied and matched, each condition with the value seen, and the plan', () => {
    const text = explainText(evaluate(rules, issue('issue-open'), { now: NOW }));
    expect(text.split('\n')).toEqual([
      'issue #3 in acme/web: "App crash on start" (opened), labels [ui]',
      'event issue.open by @alice at 2016-03-20T00:00:00.000Z',
      '3 rules, 1 applied, 1 matched',
      '',
      '✓ triage: matched',
      '    ✓ title matches /\\bcrash\\b/i: "App crash on start"',
      '    ✓ labels include none of [bug]: [ui]',
      '  → label: add bug',
      '  → comment: post "Thanks @alice!"',
      '- merge when green: does not apply: issue.open is not in on: [merge_request.update]',
      '- stale: does not apply: the rule runs on its schedule, not on issue.open',
      '',
      'plan (2 calls):',
      '  1. issues.update labels=[ui, bug]  [triage] add bug',
      '  2. notes.createIssueNote body="Thanks @alice!"  [triage] post "Thanks @alice!"',
    ]);
  });

  it('shows nested verdicts, unknown values and held-back actions', () => {
    const mr = mergeRequest('mr-pending', { changedFiles: null });
    const text = explainText(evaluate(rules, mr, { now: NOW }));
    expect(text.split('\n').slice(4, 13)).toEqual([
      '- triage: does not apply: merge_request.update is not in on: [issue.open]',
      '✗ merge when green: did not match',
      '    ✓ labels include any of [automerge]: [automerge]',
      '    ✓ any of (upvotes at least 1; author is @alice): "1 of 2 hold"',
      '        ✗ upvotes at least 1: 0',
      '        ✓ author is @alice: "@alice"',
      '    ? changed files: none match [**/*.lock]: unknown (the changed files were not read)',
      '    ✗ statuses ci/build, ci/test are all success: ci/build=success, ci/test=running',
      '- stale: does not apply: the rule runs on its schedule, not on merge_request.update',
    ]);
    const held = explainText(
      evaluate(rules, mergeRequest('mr-green', { merge_status: 'cannot_be_merged', trigger: mr.trigger }), {
        now: NOW,
      }),
    );
    expect(held).toContain(
      '  ✗ merge, removing the source branch: held back: the merge request has conflicts (cannot_be_merged)',
    );
    expect(held.endsWith('plan: nothing to do')).toBe(true);
  });
});

describe('explainJson', () => {
  it('is the evaluation as plain JSON, with counts', () => {
    const evaluation = evaluate(
      rules,
      mergeRequest('mr-green', { trigger: mergeRequest('mr-pending').trigger }),
      { now: NOW },
    );
    const json = explainJson(evaluation);
    expect(json.summary).toEqual({ rules: 3, applied: 1, matched: 1, calls: 1 });
    expect(json.rules[1]?.conditions[3]).toEqual({
      describe: 'statuses ci/build, ci/test are all success',
      value: { 'ci/build': 'success', 'ci/test': 'success' },
      ok: true,
    });
    expect(json.plan[0]?.call.op).toBe('mergeRequests.merge');
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });
});

describe('blockingReasons', () => {
  const update = mergeRequest('mr-pending').trigger;
  it.each([
    {
      name: 'failing and unknown conditions',
      item: mergeRequest('mr-pending', { labels: [], changedFiles: null }),
      // Whole reasons only: the second would pass 140 characters.
      text: 'blocked: labels include any of [automerge] (seen []); +2 more',
    },
    {
      name: 'two reasons that fit',
      item: mergeRequest('mr-pending', { labels: [] }),
      text: 'blocked: labels include any of [automerge] (seen []); statuses ci/build, ci/test are all success (seen ci/build=success, ci/test=running)',
    },
    {
      name: 'a held-back merge',
      item: mergeRequest('mr-green', { work_in_progress: true, trigger: update }),
      text: 'blocked: the merge request is work in progress',
    },
    {
      name: 'nothing',
      item: mergeRequest('mr-green', { trigger: update }),
      text: 'ready: every condition holds',
    },
    {
      name: 'a rule that does not apply',
      item: mergeRequest('mr-green'),
      text: 'not evaluated: status.changed is not in on: [merge_request.update]',
    },
  ])('says what blocks the merge rule: $name', ({ item, text }) => {
    const sentence = blockingReasons(evaluate(rules, item, { now: NOW }), 'merge when green');
    expect(sentence).toBe(text);
    expect(sentence.length).toBeLessThanOrEqual(140);
  });

  it('cuts a single reason too long for a status', () => {
    const long = rulesFrom(
      `rules: [ { name: long, on: [issue.open], if: [ { title: '${'x'.repeat(200)}' } ], do: [close] } ]`,
    );
    const sentence = blockingReasons(evaluate(long, issue('issue-open'), { now: NOW }), 'long');
    expect(sentence).toBe(`blocked: title is "${'x'.repeat(200)}"`.slice(0, 139) + '…');
  });

  it('names an unknown rule', () => {
    expect(blockingReasons(evaluate(rules, issue('issue-open'), { now: NOW }), 'nope')).toBe(
      'no rule named "nope"',
    );
  });
});
