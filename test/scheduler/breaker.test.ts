/**
 * The brakes' pieces: when the circuit breaker trips, what counts as a new definition, pauses and
 * approvals; and the echo brake of hook-driven rules (rules/item/echo-brake.ts).
 */
import { describe, expect, it } from 'vitest';
import { loadRules } from '../../src/rules/grammar/load.ts';
import {
  approve,
  definitionHash,
  isApproved,
  pause,
  pauseOf,
  pauseReason,
  pausedDefinition,
  tripReason,
} from '../../src/scheduler/breaker.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { evaluate, type Evaluation } from '../../src/rules/engine/engine.ts';
import type { ExecutionReport } from '../../src/rules/executor/executor.ts';
import { approveEcho, createEchoBrake, echoPauses } from '../../src/rules/item/echo-brake.ts';
import { issue, NOW, rulesFrom } from '../rules/support.ts';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const limits = { maxItems: 50, maxShare: 0.5 };

describe('tripReason', () => {
  it.each([
    ['nothing to touch', 0, 10, undefined],
    ['as many as max_items', 50, 1000, undefined],
    ['more than max_items', 51, 1000, 'would touch 51 items, more than max_items 50'],
    ['exactly half', 5, 10, undefined],
    ['more than half', 6, 10, 'would touch 6 of 10 items (60%), more than max_share 0.5'],
    ['nothing looked at', 0, 0, undefined],
  ])('%s', (_name, touched, lookedAt, expected) => {
    expect(tripReason(touched, lookedAt, limits)).toBe(expected);
  });
});

async function ruleOf(yaml: string) {
  const dir = await mkdtemp(join(tmpdir(), 'hookbot-breaker-'));
  await writeFile(join(dir, 'default.yml'), yaml);
  const rules = await loadRules(dir);
  expect(rules.problems).toEqual([]);
  const rule = rules.byProject('acme/web').rules[0];
  if (!rule) throw new Error('no rule');
  return rule;
}

const stale = (age: string, comment = 'Closing.') => `
rules:
  - name: close stale issues
    schedule: daily
    for: issues
    if: [ { updated: { older_than: ${age} } } ]
    do: [ { comment: "${comment}" }, close ]
`;

describe('definitionHash', () => {
  it('is stable for the same rule and changes with a condition or an action', async () => {
    const base = definitionHash(await ruleOf(stale('60d')));
    expect(definitionHash(await ruleOf(stale('60d')))).toBe(base);
    expect(definitionHash(await ruleOf(stale('90d')))).not.toBe(base);
    expect(definitionHash(await ruleOf(stale('60d', 'Closed for inactivity.')))).not.toBe(base);
    expect(base).toMatch(/^[0-9a-f]{12}$/);
  });
});

describe('pauses and approvals', () => {
  it('a pause keeps the definition that tripped; approval lifts it and exempts that definition only', async () => {
    const store = createMemoryStore();
    await store.open();
    await pause(store, 'close stale issues', 'abcdef012345', 'acme/web: would touch 60 items');

    const paused = pauseOf(store, 'close stale issues');
    expect(paused && pausedDefinition(paused)).toBe('abcdef012345');
    expect(paused && pauseReason(paused)).toBe('acme/web: would touch 60 items');

    await approve(store, 'close stale issues', ['abcdef012345'], Date.now());
    expect(pauseOf(store, 'close stale issues')).toBeUndefined();
    expect(isApproved(store, 'close stale issues', 'abcdef012345')).toBe(true);
    expect(isApproved(store, 'close stale issues', '000000000000')).toBe(false);
  });

  it('a pause made without a hash has no definition (it never lifts by itself)', async () => {
    const store = createMemoryStore();
    await store.open();
    await store.pauseRule('r', 'paused by hand');
    const paused = pauseOf(store, 'r');
    expect(paused && pausedDefinition(paused)).toBeUndefined();
  });
});

describe('the echo brake (hook-driven rules answering the bot’s own changes)', () => {
  const SWAP = `
rules:
  - name: ping to pong
    on: [issue.update]
    allow_bot: true
    if: [ { labels: { any: [ping] } } ]
    do: [ { label: { add: [pong], remove: [ping] } } ]
`;
  const KEY = 'issue:8:43';
  const limits = { writes: 3, windowMs: 60_000 };

  async function world() {
    const store = createMemoryStore();
    await store.open();
    let now = NOW;
    const brake = createEchoBrake({ store, limits, now: () => now });
    return {
      store,
      brake,
      advance: (ms: number) => (now += ms),
      /** One evaluation of the swap rule on the issue labelled ping; `byBot`: caused by the bot only. */
      evaluation(byBot: boolean, text = SWAP) {
        const set = rulesFrom(text);
        const snapshot = issue('issue-open', {
          labels: ['ping'],
          trigger: { kind: 'issue', action: 'update', byBot },
        });
        return { set, evaluation: evaluate(set, snapshot, { now }) };
      },
    };
  }

  /** What the executor reports when every planned call was made. */
  const allDone = (evaluation: Evaluation): ExecutionReport =>
    ({
      itemKey: KEY,
      dryRun: false,
      headMoved: false,
      calls: evaluation.plan.map((planned) => ({ status: 'done', rule: planned.rule })),
      counts: {},
    }) as unknown as ExecutionReport;

  it('trips when an echo evaluation would write past the bound, pauses the rule in the project, and says why', async () => {
    const w = await world();
    for (let i = 0; i < limits.writes; i++) {
      const { set, evaluation } = w.evaluation(true);
      expect(await w.brake.trip(KEY, evaluation, set.rules, false)).toEqual(new Map());
      w.brake.record(KEY, evaluation, allDone(evaluation), set.rules);
      w.advance(1_000);
    }
    // A person's events are never counted, and never trip it.
    const human = w.evaluation(false);
    expect(await w.brake.trip(KEY, human.evaluation, human.set.rules, false)).toEqual(new Map());
    w.brake.record(KEY, human.evaluation, allDone(human.evaluation), human.set.rules);

    const { set, evaluation } = w.evaluation(true);
    const tripped = await w.brake.trip(KEY, evaluation, set.rules, false);
    const reason = tripped.get('ping to pong');
    expect(reason).toBe(
      'rule "ping to pong" wrote 3 times to #3 in 3 s, each time after the bot\'s own change (at most 3 in 1 min: scheduler.breaker.echo_writes); approve with hookbot sweep --once --approve "ping to pong" --project acme/web',
    );
    expect(echoPauses(w.store).map((one) => [one.rule, one.project, one.ruleName])).toEqual([
      ['echo:acme/web:ping to pong', 'acme/web', 'ping to pong'],
    ]);
    expect(await w.brake.paused('acme/web', set.rules, false)).toEqual(new Map([['ping to pong', reason]]));
    expect(await w.brake.paused('acme/other', set.rules, false)).toEqual(new Map());
    // Held, the rule does not run: explain says why.
    const held = evaluate(
      set,
      issue('issue-open', { labels: ['ping'], trigger: { kind: 'issue', action: 'update', byBot: false } }),
      {
        now: NOW,
        paused: new Map([['ping to pong', reason!]]),
      },
    );
    expect(held.plan).toEqual([]);
    expect(held.rules[0]).toMatchObject({ applies: false, why: `paused: ${reason}` });
  });

  it('counts in a sliding window: writes older than the window no longer count', async () => {
    const w = await world();
    for (let i = 0; i < limits.writes; i++) {
      const { set, evaluation } = w.evaluation(true);
      w.brake.record(KEY, evaluation, allDone(evaluation), set.rules);
    }
    w.advance(limits.windowMs + 1);
    const { set, evaluation } = w.evaluation(true);
    expect(await w.brake.trip(KEY, evaluation, set.rules, false)).toEqual(new Map());
  });

  it('approval lifts the pause and starts the count afresh; a dry run trips nothing', async () => {
    const w = await world();
    for (let i = 0; i < limits.writes; i++) {
      const { set, evaluation } = w.evaluation(true);
      w.brake.record(KEY, evaluation, allDone(evaluation), set.rules);
    }
    const { set, evaluation } = w.evaluation(true);
    expect((await w.brake.trip(KEY, evaluation, set.rules, true)).size).toBe(1);
    expect(echoPauses(w.store)).toEqual([]); // a dry run writes nothing
    expect((await w.brake.trip(KEY, evaluation, set.rules, false)).size).toBe(1);
    expect(echoPauses(w.store)).toHaveLength(1);

    w.advance(1_000);
    expect(await approveEcho(w.store, 'ping to pong', undefined, NOW + 1_000)).toEqual(['acme/web']);
    expect(echoPauses(w.store)).toEqual([]);
    w.advance(1);
    // The writes before the approval no longer count, though they are still in the window.
    expect(await w.brake.trip(KEY, evaluation, set.rules, false)).toEqual(new Map());
  });

  it('a changed or removed rule lifts its pause (the definition that looped is gone)', async () => {
    const w = await world();
    for (let i = 0; i <= limits.writes; i++) {
      const { set, evaluation } = w.evaluation(true);
      await w.brake.trip(KEY, evaluation, set.rules, false);
      w.brake.record(KEY, evaluation, allDone(evaluation), set.rules);
    }
    expect(echoPauses(w.store)).toHaveLength(1);
    const same = w.evaluation(true);
    expect((await w.brake.paused('acme/web', same.set.rules, true)).size).toBe(1);
    const changed = rulesFrom(SWAP.replace('allow_bot: true', 'allow_bot: false'));
    // A dry run only looks.
    expect((await w.brake.paused('acme/web', changed.rules, true)).size).toBe(0);
    expect(echoPauses(w.store)).toHaveLength(1);
    expect((await w.brake.paused('acme/web', changed.rules, false)).size).toBe(0);
    expect(echoPauses(w.store)).toEqual([]);
  });
});
