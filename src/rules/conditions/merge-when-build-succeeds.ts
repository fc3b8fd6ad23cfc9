import { z } from 'zod';
import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';

export const mergeWhenBuildSucceeds = defineCondition({
  name: 'merge_when_build_succeeds',
  summary: 'Whether merge-when-build-succeeds is set on the merge request.',
  example: true,
  params: z.boolean(),
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (wanted) => `merge_when_build_succeeds is ${wanted}`,
  compile:
    (wanted) =>
    ({ snapshot }) => {
      const value = snapshot.kind === 'merge_request' && snapshot.merge_when_build_succeeds;
      return { value, ok: value === wanted };
    },
});
