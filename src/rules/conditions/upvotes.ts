import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';
import { compileNumber, describeNumber, numberMatcherSchema } from '../matchers/number-matcher.ts';

export const upvotes = defineCondition({
  name: 'upvotes',
  summary:
    "The number of upvotes of the merge request: a number (equal), or `at_least`, `at_most`, `more_than`, `less_than`. Anyone who may comment adds one (a non-member on a public project, a second account of the author's) and the v3 API does not say who: a measure of interest, never a review (for a review, a member's command: [Members' commands](#members-commands)).",
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
