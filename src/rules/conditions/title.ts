import { defineCondition } from '../engine/define-condition.ts';
import { compileText, describeText, preview, textMatcherSchema } from '../matchers/text-matcher.ts';

export const title = defineCondition({
  name: 'title',
  summary:
    'The title: equal to a text (plain string), one of several (`in`), matching a regular expression (`matches`), containing a text (`contains`) or a glob (`glob`).',
  example: { matches: '(?i)\\b(bug|crash)\\b' },
  params: textMatcherSchema,
  describe: (matcher) => describeText('title', matcher),
  compile: (matcher) => {
    const test = compileText(matcher);
    return ({ snapshot }) => {
      const text = snapshot.title;
      return { value: preview(text), ok: test(text) };
    };
  },
});
