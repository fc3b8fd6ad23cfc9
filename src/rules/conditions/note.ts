import { defineCondition } from '../define-condition.ts';
import { compileText, describeText, preview, textMatcherSchema } from '../matchers/text-matcher.ts';

export const note = defineCondition({
  name: 'note',
  summary:
    'The text of the comment that caused the event, matched like `title` (for commands such as `/hookbot merge`); does not hold for other events.',
  example: { matches: '^/hookbot merge\\b' },
  params: textMatcherSchema,
  describe: (matcher) => describeText('note', matcher),
  compile: (matcher) => {
    const test = compileText(matcher);
    return ({ snapshot }) => {
      const text = snapshot.trigger.kind === 'note' ? (snapshot.trigger.note ?? '') : null;
      if (text === null) return { value: null, ok: false, note: 'the event is not a comment' };
      return { value: preview(text), ok: test(text) };
    };
  },
});
