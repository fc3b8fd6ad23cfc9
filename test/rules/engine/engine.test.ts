import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../src/rules/engine/engine.ts';
import type { Trigger } from '../../../src/rules/engine/snapshot.ts';
import { issue, mergeRequest, NOW, rulesFrom } from '../support.ts';

const opened: Trigger = { kind: 'issue', action: 'open', actor: { id: 5, username: 'alice' }, byBot: false };

describe('evaluate: which rules apply', () => {
  const set = rulesFrom(`
rules:
  - name: on open
    on: [issue.open]
    do: [subscribe]
  - name: on any issue event
    on: [issue.*]
    do: [subscribe]
  - name: for merge requests
    on: [note.created, issue.open]
    for: merge_requests
    do: [subscribe]
  - name: daily sweep
    schedule: daily
    do: [subscribe]
  - name: hourly sweep
    schedule: hourly
    do: [subscribe]
  - name: bots welcome
    on: [note.created]
    allow_bot: true
    do: [subscribe]
  - name: notes
    on: [note.created]
    do: [subscribe]
`);
  const applying = (trigger: Trigger, item = issue('issue-open', { trigger })) =>
    evaluate(set, item, { now: NOW })
      .rules.filter((rule) => rule.applies)
      .map((rule) => rule.rule);

  it.each([
    { name: 'an issue opened', trigger: opened, rules: ['on open', 'on any issue event'] },
    {
      name: 'an issue closed',
      trigger: { ...opened, action: 'close' as const },
      rules: ['on any issue event'],
    },
    {
      name: 'the daily sweep',
      trigger: { kind: 'schedule' as const, schedule: 'daily', byBot: false },
      rules: ['daily sweep'],
    },
    {
      name: 'a sweep of any schedule',
      trigger: { kind: 'schedule' as const, byBot: false },
      rules: ['daily sweep', 'hourly sweep'],
    },
    {
      name: 'a comment by a person',
      trigger: { kind: 'note' as const, note: 'hi', byBot: false },
      rules: ['bots welcome', 'notes'],
    },
    {
      name: 'a comment by the bot (loop prevention)',
      trigger: { kind: 'note' as const, note: 'hi', byBot: true },
      rules: ['bots welcome'],
    },
    {
      name: 'a manual run (every rule for the item)',
      trigger: { kind: 'manual' as const, byBot: false },
      rules: ['on open', 'on any issue event', 'daily sweep', 'hourly sweep', 'bots welcome', 'notes'],
    },
  ])('$name', ({ trigger, rules }) => {
    expect(applying(trigger)).toEqual(rules);
  });

  it('says why a rule does not apply', () => {
    const why = Object.fromEntries(
      evaluate(set, issue('issue-open', { trigger: { ...opened, byBot: true } }), { now: NOW }).rules.map(
        (r) => [r.rule, r.why],
      ),
    );
    expect(why).toEqual({
      'on open': 'the bot caused the event (allow_bot is off)',
      'on any issue event': 'the bot caused the event (allow_bot is off)',
      'for merge requests': 'the rule is for merge requests',
      'daily sweep': 'the bot caused the event (allow_bot is off)',
      'hourly sweep': 'the bot caused the event (allow_bot is off)',
      'bots welcome': 'issue.open is not in on: [note.created]',
      notes: 'the bot caused the event (allow_bot is off)',
    });
    const sweep = evaluate(
      set,
      issue('issue-open', { trigger: { kind: 'schedule', schedule: 'daily', byBot: false } }),
      { now: NOW },
    );
    expect(sweep.rules.find((r) => r.rule === 'hourly sweep')?.why).toBe(
      'the rule runs hourly, this sweep is daily',
    );
    expect(sweep.rules.find((r) => r.rule === 'on open')?.why).toBe('the rule has no schedule');
  });

  it("says in a sentence that no event of a burst is in a rule's on:", () => {
    const why = (events: { name: string; byBot: boolean }[]) =>
      evaluate(
        set,
        issue('issue-open', { trigger: { kind: 'issue', action: 'update', byBot: false, events } }),
        { now: NOW },
      ).rules.find((r) => r.rule === 'bots welcome')?.why;
    // Two events of one name (the bot's status and someone else's) are one event to name.
    expect(
      why([
        { name: 'status.changed', byBot: true },
        { name: 'status.changed', byBot: false },
      ]),
    ).toBe('status.changed is not in on: [note.created]');
    expect(
      why([
        { name: 'issue.update', byBot: false },
        { name: 'status.changed', byBot: false },
      ]),
    ).toBe('none of issue.update, status.changed is in on: [note.created]');
  });

  it('decides applicability once per kind of event: records of idle rules are shared and frozen', () => {
    const first = evaluate(set, issue('issue-open', { trigger: opened }), { now: NOW });
    const again = evaluate(set, issue('issue-open', { trigger: opened, title: 'another' }), { now: NOW });
    const idle = (evaluation: typeof first) => evaluation.rules.filter((rule) => !rule.applies);
    expect(idle(first).map((rule) => rule.rule)).toEqual(idle(again).map((rule) => rule.rule));
    idle(first).forEach((record, index) => {
      expect(record).toBe(idle(again)[index]);
      expect(Object.isFrozen(record)).toBe(true);
    });
    // Applying rules get fresh records: each evaluation sees its own item.
    expect(first.rules.find((rule) => rule.applies)).not.toBe(again.rules.find((rule) => rule.applies));
    // Another event of the same item kind is another combination, decided afresh.
    const note = issue('issue-open', { trigger: { kind: 'note', note: 'hi', byBot: false } });
    expect(
      evaluate(set, note, { now: NOW })
        .rules.filter((rule) => rule.applies)
        .map((rule) => rule.rule),
    ).toEqual(['bots welcome', 'notes']);
  });
});

describe('evaluate: conditions and plan', () => {
  it('evaluates every condition, even after one fails, for explain', () => {
    const set = rulesFrom(`
rules:
  - name: r
    on: [issue.open]
    if: [ { state: closed }, { author: alice } ]
    do: [close]
`);
    const [rule] = evaluate(set, issue('issue-open'), { now: NOW }).rules;
    expect(rule?.matched).toBe(false);
    expect(rule?.conditions).toEqual([
      { describe: 'state is closed', value: 'opened', ok: false },
      { describe: 'author is @alice', value: '@alice', ok: true },
    ]);
    expect(rule?.planned).toEqual([]);
  });

  it('merges every label change of the item into one write from the fresh set', () => {
    const set = rulesFrom(`
rules:
  - name: add bug
    on: [issue.open]
    do: [ { label: { add: [bug] } }, { label: { remove: [ui] } } ]
  - name: add triage
    on: [issue.open]
    do: [ { label: { add: [needs-triage, bug] } } ]
  - name: comment
    on: [issue.open]
    do: [ { comment: "Hello" } ]
`);
    const evaluation = evaluate(set, issue('issue-open'), { now: NOW });
    expect(evaluation.rules.map((r) => r.planned.length)).toEqual([2, 1, 1]);
    expect(evaluation.plan.map((call) => [call.action, call.rule, call.call.op])).toEqual([
      ['label', 'add bug, add triage', 'issues.update'],
      ['comment', 'comment', 'notes.createIssueNote'],
    ]);
    expect(evaluation.plan[0]?.call).toEqual({
      op: 'issues.update',
      args: { project: 8, issue_id: 43, edit: { labels: ['bug', 'needs-triage'] } },
      labels: { add: ['bug', 'needs-triage'], remove: ['ui'] },
    });
    expect(evaluation.plan[0]?.reason).toBe(
      'add bug: add bug; add bug: remove ui; add triage: add needs-triage, bug',
    );
  });

  it('writes nothing when label changes cancel out', () => {
    const set = rulesFrom(`
rules:
  - name: add
    on: [issue.open]
    do: [ { label: { add: [x] } } ]
  - name: remove
    on: [issue.open]
    if: [ { labels: { any: [ui] } } ]
    do: [ { label: { remove: [ui] } } ]
  - name: put back
    on: [issue.open]
    do: [ { label: { add: [ui] } } ]
`);
    const evaluation = evaluate(set, issue('issue-open'), { now: NOW });
    // "put back" plans nothing (ui is present); the net change is only x.
    expect(evaluation.plan.map((call) => call.call.labels)).toEqual([{ add: ['x'], remove: ['ui'] }]);
    const cancel = rulesFrom(`
rules:
  - name: toggle off
    on: [issue.open]
    if: [ { state: closed } ]
    do: [ { label: { toggle: [ui] } } ]
  - name: keep
    on: [issue.open]
    do: [ { label: { add: [bug] } }, { label: { remove: [bug] } } ]
`);
    const toggled = evaluate(cancel, issue('issue-open', { labels: ['ui', 'bug'] }), { now: NOW });
    expect(toggled.plan.map((call) => call.call.labels)).toEqual([{ add: [], remove: ['ui', 'bug'] }]);
  });

  it('removes a toggled label when an applying rule stops matching, not when it does not apply', () => {
    const set = rulesFrom(`
rules:
  - name: needs info
    on: [issue.update]
    if: [ { description: { matches: '^$' } } ]
    do: [ { label: { toggle: [needs-info] } } ]
`);
    const described = issue('issue-open', { labels: ['needs-info'] });
    const updated = evaluate(set, { ...described, trigger: { ...opened, action: 'update' } }, { now: NOW });
    expect(updated.plan).toEqual([
      {
        action: 'label',
        rule: 'needs info',
        reason: 'the rule no longer matches: remove toggled needs-info',
        call: {
          op: 'issues.update',
          args: { project: 8, issue_id: 43, edit: { labels: [] } },
          labels: { add: [], remove: ['needs-info'] },
        },
      },
    ]);
    expect(evaluate(set, described, { now: NOW }).plan).toEqual([]);
  });

  it('plans an identical call once', () => {
    const set = rulesFrom(`
rules:
  - name: one
    on: [issue.open]
    do: [close]
  - name: two
    on: [issue.open]
    do: [close, subscribe]
`);
    expect(
      evaluate(set, issue('issue-open'), { now: NOW }).plan.map((c) => `${c.rule}: ${c.call.op}`),
    ).toEqual(['one: issues.update', 'two: issues.subscribe']);
  });

  it('drops arming merge_when_build_succeeds when a merge is planned', () => {
    const set = rulesFrom(`
rules:
  - name: merge
    on: [merge_request.update]
    if: [ { statuses: { required: [ci/build] } } ]
    do: [merge]
  - name: arm
    on: [merge_request.update]
    if: [ { statuses: { required: [ci/test], state: pending } } ]
    do: [merge_when_build_succeeds]
`);
    const mr = mergeRequest('mr-pending'); // ci/build success, ci/test running
    const evaluation = evaluate(set, mr, { now: NOW });
    expect(evaluation.rules.map((r) => r.planned.map((c) => c.call.op))).toEqual([
      ['mergeRequests.merge'],
      ['mergeRequests.mergeWhenBuildSucceeds'],
    ]);
    expect(evaluation.plan.map((c) => c.call.op)).toEqual(['mergeRequests.merge']);
  });

  it('posts a summary status saying what blocks the rule', () => {
    const set = rulesFrom(`
rules:
  - name: merge when green
    on: [merge_request.update]
    summary_status: true
    if: [ { labels: { any: [automerge] } }, { statuses: { required: [ci/build, ci/test] } } ]
    do: [merge]
`);
    const blocked = evaluate(set, mergeRequest('mr-pending'), { now: NOW });
    expect(blocked.plan).toEqual([
      {
        action: 'summary_status',
        rule: 'merge when green',
        reason: 'summary of rule "merge when green": blocked',
        call: {
          op: 'statuses.create',
          args: {
            project: 8,
            sha: '2a3b4c5d6e7f80912a3b4c5d6e7f80912a3b4c5d',
            state: 'pending',
            name: 'hookbot/rules',
            ref: 'perf/start',
            description:
              'blocked: statuses ci/build, ci/test are all success (seen ci/build=success, ci/test=running)',
          },
        },
      },
    ]);
    const update = mergeRequest('mr-pending').trigger;
    const ready = evaluate(set, mergeRequest('mr-green', { trigger: update }), { now: NOW });
    expect(ready.plan.map((c) => [c.call.op, 'state' in c.call.args ? c.call.args.state : ''])).toEqual([
      ['mergeRequests.merge', ''],
      ['statuses.create', 'success'],
    ]);
    const conflicts = evaluate(
      set,
      mergeRequest('mr-green', { merge_status: 'cannot_be_merged', trigger: update }),
      {
        now: NOW,
      },
    );
    expect(conflicts.plan.map((c) => ('description' in c.call.args ? c.call.args.description : ''))).toEqual([
      'blocked: the merge request has conflicts (cannot_be_merged)',
    ]);
    const alreadyPending = mergeRequest('mr-pending', {
      statuses: [
        ...(mergeRequest('mr-pending').statuses ?? []),
        { name: 'hookbot/rules', status: 'pending', allow_failure: false },
      ],
    });
    expect(evaluate(set, alreadyPending, { now: NOW }).plan).toEqual([]);
    expect(evaluate(set, mergeRequest('mr-pending', { state: 'merged' }), { now: NOW }).plan).toEqual([]);
  });

  it('tells what the rules need read beyond the item', () => {
    const none = { authorAccess: false, actorAccess: false, mergeGate: false, noteChanges: false };
    expect(rulesFrom('rules: []').needs).toEqual({ changedFiles: false, commentMarkers: false, ...none });
    expect(
      rulesFrom(`
rules:
  - name: r
    on: [merge_request.open]
    if: [ { not: { files: { any_match: ['docs/**'] } } } ]
    do: [ { comment: hi } ]
`).needs,
    ).toEqual({ changedFiles: true, commentMarkers: true, ...none });
  });

  it('reads access levels only for the access conditions and the gate of merge-like actions', () => {
    const needs = (text: string) => rulesFrom(text).needs;
    const rule = (condition: string, action: string) =>
      `rules:\n  - name: r\n    on: [note.created]\n    if: [ ${condition} ]\n    do: [ ${action} ]\n`;
    expect(needs(rule('{ author_access: developer }', 'close'))).toMatchObject({
      authorAccess: true,
      actorAccess: false,
      mergeGate: false,
    });
    expect(needs(rule('{ actor_access: { below: master } }', 'close'))).toMatchObject({
      authorAccess: false,
      actorAccess: true,
      mergeGate: false,
    });
    for (const action of ['merge', 'merge_when_build_succeeds', '{ queue: { statuses: [ci/test] } }'])
      expect(needs(rule('{ state: opened }', action))).toMatchObject({
        authorAccess: false,
        actorAccess: false,
        mergeGate: true,
      });
    // `authors: anyone` waives the gate: nothing to read for it.
    expect(needs(rule('{ state: opened }', '{ merge: { authors: anyone } }'))).toMatchObject({
      mergeGate: false,
    });
    // `dequeue` reads the commenter's access and what changed after the comment, not the gate.
    expect(needs(rule('{ state: opened }', 'dequeue'))).toMatchObject({
      actorAccess: true,
      mergeGate: false,
      noteChanges: true,
    });
  });

  it('is pure: the same input gives the same evaluation, and it survives JSON', () => {
    const set = rulesFrom(`
rules:
  - name: r
    on: [status.changed]
    if: [ { statuses: { required: [ci/build] } }, { updated: { newer_than: 1d } } ]
    do: [ { label: { add: [green] } }, merge ]
`);
    const mr = mergeRequest('mr-green');
    const first = evaluate(set, mr, { now: NOW });
    expect(evaluate(set, mr, { now: new Date(NOW) })).toEqual(first);
    expect(JSON.parse(JSON.stringify(first))).toEqual(first);
    expect(mr.labels).toEqual(['automerge']);
    expect(first.at).toBe('2016-03-20T00:00:00.000Z');
  });
});
