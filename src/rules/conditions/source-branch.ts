import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';
import { compileText, describeText, preview, textMatcherSchema } from '../matchers/text-matcher.ts';

export const sourceBranch = defineCondition({
  name: 'source_branch',
  summary: 'The source branch of a merge request, matched like `title` (`glob` suits branch names).',
  example: { glob: 'feature/*' },
  params: textMatcherSchema,
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (matcher) => describeText('source_branch', matcher),
  compile: (matcher) => {
    const test = compileText(matcher);
    return ({ snapshot }) => {
      const text = snapshot.kind === 'merge_request' ? snapshot.source_branch : '';
      return { value: preview(text), ok: test(text) };
    };
  },
});
