import { defineCondition } from '../engine/define-condition.ts';
import { accessParamsSchema, compileAccess, describeAccess, showAccess } from '../engine/access-levels.ts';

export const actorAccess = defineCondition({
  name: 'actor_access',
  summary:
    "The access level to the item's project of who caused the event, as the server confirms it: the author of the comment (read by the note's id), read through the members API like `author_access`. Levels as `author_access` (a bare level means at least). Unknown for every other event, as `actor` is (the API cannot confirm who made an edit or set a label): unknown never holds. See [Members' commands](#members-commands).",
  example: 'developer',
  params: accessParamsSchema,
  describe: (params) => describeAccess('actor_access', params),
  compile: (params) => {
    const test = compileAccess(params);
    return ({ snapshot: { trigger } }) => {
      // Only a note's author, as the API returned the note, is a confirmed actor.
      if (trigger.kind !== 'note' || !trigger.actor)
        return { value: null, ok: false, unknown: true, note: 'the server confirms no actor for this event' };
      if (trigger.actorAccess === undefined)
        return { value: null, ok: false, unknown: true, note: "the comment author's access was not read" };
      return { value: showAccess(trigger.actorAccess), ok: test(trigger.actorAccess) };
    };
  },
});
