import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';
import { compileNumber, describeNumber, numberMatcherSchema } from '../matchers/number-matcher.ts';

export const upvotes = defineCondition({
  name: 'upvotes',
  summary:
    'The number of upvotes of the merge request: a number (equal), or `at_least`, `at_most`, `more_than`, `less_than`.',
  example: { at_least: 2 },
  params: numberMatcherSchema,
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (matcher) => describeNumber('upvotes', matcher),
  compile: (matcher) => {
    const test = compileNumber(matcher);
    return ({ snapshot }) => {
      const value = snapshot.kind === 'merge_request' ? snapshot.upvotes : 0;
      return { value, ok: test(value) };
    };
  },
});
