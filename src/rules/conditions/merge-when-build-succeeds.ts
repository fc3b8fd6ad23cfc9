import { z } from 'zod';
import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';

export const mergeWhenBuildSucceeds = defineCondition({
  name: 'merge_when_build_succeeds',
  summary:
    "Whether the merge request is set to merge when its build succeeds: the server's merge-when-build-succeeds, or the bot's own (the `merge_when_build_succeeds` action's watch).",
  example: true,
  params: z.boolean(),
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (wanted) => `merge_when_build_succeeds is ${wanted}`,
  compile:
    (wanted) =>
    ({ snapshot }) => {
      const value =
        snapshot.kind === 'merge_request' &&
        (snapshot.merge_when_build_succeeds || snapshot.botMerge === true);
      return { value, ok: value === wanted };
    },
});
