import { z } from 'zod';
import { defineCondition, MERGE_REQUESTS_ONLY } from '../engine/define-condition.ts';

export const workInProgress = defineCondition({
  name: 'work_in_progress',
  summary: 'Whether the merge request is marked work in progress (`WIP:` in its title).',
  example: false,
  params: z.boolean(),
  itemKinds: MERGE_REQUESTS_ONLY,
  describe: (wanted) => `work_in_progress is ${wanted}`,
  compile:
    (wanted) =>
    ({ snapshot }) => {
      const value = snapshot.kind === 'merge_request' && snapshot.work_in_progress;
      return { value, ok: value === wanted };
    },
});
