import { defineCondition } from '../engine/define-condition.ts';
import { compileText, describeText, preview, textMatcherSchema } from '../matchers/text-matcher.ts';

export const description = defineCondition({
  name: 'description',
  summary: 'The description, matched like `title`; an empty description reads as an empty text.',
  example: { contains: 'Steps to reproduce' },
  params: textMatcherSchema,
  describe: (matcher) => describeText('description', matcher),
  compile: (matcher) => {
    const test = compileText(matcher);
    return ({ snapshot }) => {
      const text = snapshot.description ?? '';
      return { value: preview(text), ok: test(text) };
    };
  },
});
