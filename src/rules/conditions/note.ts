import { defineCondition } from '../engine/define-condition.ts';
import { compileText, describeText, preview, textMatcherSchema } from '../matchers/text-matcher.ts';

export const note = defineCondition({
  name: 'note',
  summary:
    "The text of the comment that caused the event, as the server returns it (read by the note's id, never taken from the delivery), matched like `title` (for commands such as `/hookbot merge`); does not hold for other events nor for system notes.",
  example: { matches: '^/hookbot merge\\b' },
  params: textMatcherSchema,
  describe: (matcher) => describeText('note', matcher),
  compile: (matcher) => {
    const test = compileText(matcher);
    return ({ snapshot }) => {
      const trigger = snapshot.trigger;
      if (trigger.kind !== 'note') return { value: null, ok: false, note: 'the event is not a comment' };
      // Unknown never acts: a note the server did not confirm has no text to match.
      if (trigger.note === undefined)
        return { value: null, ok: false, unknown: true, note: 'the note was not read from the server' };
      const text = trigger.note;
      if (trigger.system)
        return { value: preview(text), ok: false, note: 'a system note, written by the server' };
      return { value: preview(text), ok: test(text) };
    };
  },
});
