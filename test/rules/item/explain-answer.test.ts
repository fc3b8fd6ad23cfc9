/**
 * Explain's answer from kept decisions (rules/item/explain-answer.ts), on records as the store keeps
 * them: the actions with the decision that planned each (a withdrawal with the earlier decision that
 * had planned it), a decision asked for by id, by the action it planned or by the rule that acted,
 * the latest record when the kept ones lag it, and records of earlier versions (no id, no `acted`).
 */
import { describe, expect, it } from 'vitest';
import { explainAnswer } from '../../../src/rules/item/explain-answer.ts';
import { findDecision } from '../../../src/rules/item/find-decision.ts';
import type { DecisionRecord } from '../../../src/state/index.ts';

const KEY = 'issue:5:60';

interface Call {
  id: string;
  op: string;
  rule: string;
  status: string;
  detail: string;
}

function record(
  id: string | undefined,
  at: number,
  event: string,
  calls: Call[],
  acted?: boolean,
): DecisionRecord {
  return {
    ...(id === undefined ? {} : { id }),
    itemKey: KEY,
    at,
    ...(acted ? { acted: true as const } : {}),
    decision: {
      itemKey: KEY,
      at: new Date(at).toISOString(),
      evaluation: {
        item: { kind: 'issue', id: 60, iid: 3, project: 'acme/web' },
        event,
        trigger: { kind: event.split('.')[0], byBot: false, actor: { username: 'alice' } },
        rules: [
          {
            rule: 'flaky',
            applies: true,
            matched: calls.some((c) => c.status !== 'withdrawn'),
            conditions: [{ describe: 'title matches /flaky/i', value: event, ok: true }],
            actions: [],
            planned: [],
          },
        ],
      },
      execution: {
        calls: calls.map((c) => ({ ...c, action: 'comment', reason: 'r', call: `${c.op} body` })),
      },
      text: `text of ${id ?? 'an old one'}`,
    },
  };
}

const comment = (status: string, detail: string): Call => ({
  id: 'comment-1',
  op: 'notes.createIssueNote',
  rule: 'flaky',
  status,
  detail,
});

function answer(kept: DecisionRecord[], latest = kept[0]!, selector = {}) {
  const found = findDecision([latest], { project: 'acme/web', kind: 'issue', number: 3 });
  if (!found.found) throw new Error(found.message);
  return explainAnswer(found, kept, selector);
}

// Newest first, as keptDecisions gives them: planned (failed, waiting for its retry), an echo,
// then withdrawn by a fresh evaluation once the title changed, then an echo.
const planned = record('aaaaaaaaaaa1', 1_000, 'issue.open', [comment('failed', '503 from the server')], true);
const echo = record('aaaaaaaaaaa2', 2_000, 'issue.update', [], false);
const withdrawn = record(
  'aaaaaaaaaaa3',
  3_000,
  'issue.update',
  [comment('withdrawn', 'no longer planned')],
  true,
);
const latest = record('aaaaaaaaaaa4', 4_000, 'note.created', [], false);
const KEPT = [latest, withdrawn, echo, planned];

describe('explain answer', () => {
  it('lists each action with the decision that reports it; a withdrawal names the decision that planned it', () => {
    const result = answer(KEPT);
    if (!result.found) throw new Error(result.message);
    expect(result.body.id).toBe('aaaaaaaaaaa4');
    expect(result.body.actions.map((a) => [a.status, a.decision, a.plannedBy])).toEqual([
      ['withdrawn', 'aaaaaaaaaaa3', 'aaaaaaaaaaa1'],
      ['failed', 'aaaaaaaaaaa1', undefined],
    ]);
    expect(result.body.acting.map((d) => d.id)).toEqual(['aaaaaaaaaaa3', 'aaaaaaaaaaa1']);
    expect(result.body.history.map((h) => [h.id, h.acted, h.outcome])).toEqual([
      ['aaaaaaaaaaa4', false, 'nothing to do'],
      ['aaaaaaaaaaa3', true, '1 withdrawn'],
      ['aaaaaaaaaaa2', false, 'nothing to do'],
      ['aaaaaaaaaaa1', true, '1 failed'],
    ]);
    const text = result.body.explanation;
    expect(text).toMatch(/^why it acted: 2 actions/);
    expect(text).toContain(
      '\ndecision aaaaaaaaaaa3 at 1970-01-01T00:00:03.000Z, on event issue.update by @alice:\n  1. withdrawn: notes.createIssueNote body: no longer planned\n     planned by decision aaaaaaaaaaa1 at 1970-01-01T00:00:01.000Z\n',
    );
    expect(text).toContain('  2. failed: notes.createIssueNote body: 503 from the server\n');
    expect(text).toContain(
      'latest evaluation (decision aaaaaaaaaaa4, 1970-01-01T00:00:04.000Z):\ntext of aaaaaaaaaaa4',
    );
    expect(text).toContain('  1970-01-01T00:00:01.000Z  aaaaaaaaaaa1  issue.open: 1 failed (acted)');
  });

  it('one decision kept: its text alone, as explain always answered', () => {
    const result = answer([planned]);
    expect(result.found && result.body.explanation).toBe('text of aaaaaaaaaaa1');
  });

  it('a decision asked for by id, by the action it planned, or by the rule that acted', () => {
    const byId = answer(KEPT, latest, { decision: 'aaaaaaaaaaa2' });
    expect(byId.found && byId.body.id).toBe('aaaaaaaaaaa2');
    expect(byId.found && byId.body.explanation).toMatch(
      /^decision aaaaaaaaaaa2 \(1970-01-01T00:00:02.000Z\), as asked; the latest is aaaaaaaaaaa4 \(1970-01-01T00:00:04.000Z\):\ntext of aaaaaaaaaaa2\n/,
    );
    expect(byId.found && byId.body.lookup).toEqual({ by: 'iid', decision: 'aaaaaaaaaaa2' });
    // The action's planner, not the decision that withdrew it.
    const byAction = answer(KEPT, latest, { action: 'comment-1' });
    expect(byAction.found && byAction.body.id).toBe('aaaaaaaaaaa1');
    const byRule = answer(KEPT, latest, { rule: 'flaky' });
    expect(byRule.found && byRule.body.id).toBe('aaaaaaaaaaa1');
    expect(answer(KEPT, latest, { decision: 'bbbbbbbbbbbb' })).toEqual({
      found: false,
      message: 'no decision bbbbbbbbbbbb is kept for issue #3 of acme/web',
    });
    expect(answer(KEPT, latest, { action: 'other' })).toMatchObject({ found: false });
    expect(answer(KEPT, latest, { rule: 'other rule' })).toMatchObject({ found: false });
  });

  it('a latest decision the kept ones do not hold yet comes first; a record of an earlier version is judged by its calls', () => {
    const newer = record('aaaaaaaaaaa5', 5_000, 'status.changed', [], false);
    const lagging = answer(KEPT, newer);
    expect(lagging.found && lagging.body.history.map((h) => h.id)).toEqual([
      'aaaaaaaaaaa5',
      'aaaaaaaaaaa4',
      'aaaaaaaaaaa3',
      'aaaaaaaaaaa2',
      'aaaaaaaaaaa1',
    ]);
    // Written before decisions had ids and the store knew which acted.
    const old = record(undefined, 500, 'issue.open', [comment('done', 'commented')]);
    const result = answer([old]);
    expect(result.found && result.body.actions.map((a) => [a.status, a.decision])).toEqual([
      ['done', undefined],
    ]);
    expect(result.found && result.body.history).toEqual([
      {
        at: '1970-01-01T00:00:00.500Z',
        event: 'issue.open',
        acted: true,
        outcome: '1 done',
        matched: ['flaky'],
      },
    ]);
  });
});
