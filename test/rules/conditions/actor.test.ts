import { describe, expect, it } from 'vitest';
import type { Trigger } from '../../../src/rules/engine/snapshot.ts';
import { describeCondition, issue, runCondition } from '../support.ts';

const by = (trigger: Trigger) => issue('issue-open', { trigger });
const alice: Trigger = { kind: 'issue', action: 'open', actor: { id: 5, username: 'alice' }, byBot: false };
const bot: Trigger = { kind: 'note', note: 'x', actor: { id: 99, username: 'hookbot' }, byBot: true };
const sweep: Trigger = { kind: 'schedule', byBot: false };

describe('actor condition', () => {
  it.each([
    { name: 'username', trigger: alice, spec: 'alice', ok: true, value: '@alice' },
    { name: 'in', trigger: alice, spec: { in: ['bob'] }, ok: false, value: '@alice' },
    { name: 'by_bot false on a person', trigger: alice, spec: { by_bot: false }, ok: true, value: '@alice' },
    {
      name: 'by_bot true on the bot',
      trigger: bot,
      spec: { by_bot: true },
      ok: true,
      value: '@hookbot (bot)',
    },
    {
      name: 'by_bot false on the bot',
      trigger: bot,
      spec: { by_bot: false },
      ok: false,
      value: '@hookbot (bot)',
    },
    {
      name: 'by_bot with a name',
      trigger: bot,
      spec: { in: ['hookbot'], by_bot: true },
      ok: true,
      value: '@hookbot (bot)',
    },
  ])('$name', ({ trigger, spec, ok, value }) => {
    expect(runCondition({ actor: spec }, by(trigger))).toEqual({ value, ok });
  });

  it('is unknown when the event names nobody', () => {
    expect(runCondition({ actor: 'alice' }, by(sweep))).toEqual({
      value: null,
      ok: false,
      unknown: true,
      note: 'the server confirms no actor for this event',
    });
  });

  it('describes', () => {
    expect(describeCondition({ actor: { in: ['a'], by_bot: false } })).toBe(
      'actor is one of [@a] and the actor is not the bot',
    );
  });
});
