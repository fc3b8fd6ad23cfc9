import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';
import { compileText, describeText, preview, textMatcherSchema } from '../matchers/text-matcher.ts';

export const targetBranch = defineCondition({
  name: 'target_branch',
  summary: 'The target branch of a merge request, matched like `title`.',
  example: { in: ['master', 'main'] },
  params: textMatcherSchema,
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (matcher) => describeText('target_branch', matcher),
  compile: (matcher) => {
    const test = compileText(matcher);
    return ({ snapshot }) => {
      const text = snapshot.kind === 'merge_request' ? snapshot.target_branch : '';
      return { value: preview(text), ok: test(text) };
    };
  },
});
