import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';
import { compileNumber, describeNumber, numberMatcherSchema } from '../matchers/number-matcher.ts';

export const downvotes = defineCondition({
  name: 'downvotes',
  summary:
    'The number of downvotes of the merge request: a number (equal), or `at_least`, `at_most`, `more_than`, `less_than`.',
  example: 0,
  params: numberMatcherSchema,
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (matcher) => describeNumber('downvotes', matcher),
  compile: (matcher) => {
    const test = compileNumber(matcher);
    return ({ snapshot }) => {
      const value = snapshot.kind === 'merge_request' ? snapshot.downvotes : 0;
      return { value, ok: test(value) };
    };
  },
});
