import { describe, expect, it } from 'vitest';
import type { Trigger as HookTrigger } from '../../src/events/hints.ts';
import { triggerOf } from '../../src/receiver/trigger.ts';

const alice = { id: 5, username: 'alice' };
const bot = { id: 9, username: 'hookbot' };

describe('triggerOf: from a hook hint to the engine trigger', () => {
  it.each<{ name: string; hook: HookTrigger; expected: object }>([
    {
      name: "an issue opened by a person: the payload's user is not believed, so no actor",
      hook: { kind: 'issue', action: 'open', actor: alice },
      expected: { kind: 'issue', action: 'open', byBot: false },
    },
    {
      name: "the bot's own comment (by id): the note's id, never its text",
      hook: { kind: 'note', actor: { id: 9 }, note: 'Thanks!', noteId: 31 },
      expected: { kind: 'note', noteId: 31, byBot: true },
    },
    {
      name: "the bot's own comment (by username, no id in the payload)",
      hook: { kind: 'note', actor: { username: 'hookbot' }, note: 'Thanks!', noteId: 32 },
      expected: { kind: 'note', noteId: 32, byBot: true },
    },
    {
      name: 'a status change carries no item action',
      hook: { kind: 'status', action: 'success', actor: alice },
      expected: { kind: 'status', byBot: false },
    },
  ])('$name', ({ hook, expected }) => {
    expect(triggerOf(hook, bot)).toEqual(expected);
  });

  it('without a known bot identity nothing is the bot', () => {
    expect(triggerOf({ kind: 'note', actor: { id: 9, username: 'hookbot' } }, undefined).byBot).toBe(false);
  });
});
