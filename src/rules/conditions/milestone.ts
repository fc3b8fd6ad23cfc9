import { defineCondition } from '../engine/define-condition.ts';
import { compileText, describeText, nullableTextMatcherSchema } from '../matchers/text-matcher.ts';

export const milestone = defineCondition({
  name: 'milestone',
  summary: 'The title of the milestone, matched like `title`; `null` means no milestone.',
  example: { matches: '^v1\\.' },
  params: nullableTextMatcherSchema,
  describe: (matcher) => describeText('milestone', matcher),
  compile: (matcher) => {
    const test = compileText(matcher);
    return ({ snapshot }) => ({ value: snapshot.milestone, ok: test(snapshot.milestone) });
  },
});
