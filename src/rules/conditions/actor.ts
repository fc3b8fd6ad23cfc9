import { z } from 'zod';
import { defineCondition } from '../engine/define-condition.ts';
import { compileUser, describeUser, showUser } from '../matchers/user-matcher.ts';
import { usernameSchema } from '../engine/param-schemas.ts';

export const actor = defineCondition({
  name: 'actor',
  summary:
    "Who caused the event, as the server confirms it: `alice`, `{ in: [alice, bob] }`, and/or `{ by_bot: true }` (the bot itself). Known for comments (the note's author, read through the API); unknown for other events (the API cannot confirm who made an edit, and a delivery's user is never believed) and for sweeps: unknown never holds.",
  example: { in: ['alice', 'bob'], by_bot: false },
  params: z.union([
    usernameSchema,
    z
      .strictObject({ in: z.array(usernameSchema).min(1).optional(), by_bot: z.boolean().optional() })
      .refine((p) => p.in !== undefined || p.by_bot !== undefined, {
        message: 'give in, by_bot or both',
        when: (payload) => payload.issues.length === 0,
      }),
  ]),
  describe: (p) => {
    if (typeof p === 'string') return describeUser('actor', p);
    const parts: string[] = [];
    if (p.in) parts.push(describeUser('actor', { in: p.in }));
    if (p.by_bot !== undefined) parts.push(p.by_bot ? 'the actor is the bot' : 'the actor is not the bot');
    return parts.join(' and ');
  },
  compile: (p) => {
    const byName = typeof p === 'string' ? compileUser(p) : p.in ? compileUser({ in: p.in }) : undefined;
    const byBot = typeof p === 'string' ? undefined : p.by_bot;
    return ({ snapshot: { trigger } }) => {
      const value = trigger.byBot ? `${showUser(trigger.actor) ?? 'the bot'} (bot)` : showUser(trigger.actor);
      // Only what the server confirmed (a note's author) counts: a delivery's user is never believed.
      if (!trigger.actor)
        return { value, ok: false, unknown: true, note: 'the server confirms no actor for this event' };
      if (byBot !== undefined && trigger.byBot !== byBot) return { value, ok: false };
      if (!byName) return { value, ok: true };
      return { value, ok: byName(trigger.actor) };
    };
  },
});
