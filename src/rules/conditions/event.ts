import { z } from 'zod';
import { defineCondition } from '../engine/define-condition.ts';
import { EVENT_NAMES, eventMatches } from '../engine/event-names.ts';

const eventName = z.enum(EVENT_NAMES).meta({ title: 'event' });

export const event = defineCondition({
  name: 'event',
  summary:
    'The event that caused this evaluation, or any event of the coalesced burst (`issue.open`, `merge_request.update`, `note.created`, `status.changed`, `push`, `schedule`, `manual`; `issue.*` and `merge_request.*` cover every action), or `{ in: [...] }`.',
  example: { in: ['merge_request.open', 'merge_request.reopen'] },
  params: z.union([eventName, z.strictObject({ in: z.array(eventName).min(1) })]),
  describe: (p) => (typeof p === 'string' ? `event is ${p}` : `event is one of [${p.in.join(', ')}]`),
  compile: (p) => {
    const patterns: readonly string[] = typeof p === 'string' ? [p] : p.in;
    // A coalesced burst holds several events: the condition holds when any of them matches.
    return ({ event: shown, events }) => ({
      value: shown,
      ok: events.some((one) => patterns.some((pattern) => eventMatches(pattern, one.name))),
    });
  },
});
