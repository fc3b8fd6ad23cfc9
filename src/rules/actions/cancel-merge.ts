import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { mergeRequestTarget, skip } from '../engine/planned-call.ts';
import { isOpenState } from '../../api/index.ts';

export const cancelMerge = defineAction({
  inRepositories: 'operator',
  name: 'cancel_merge',
  summary:
    "Cancels merge-when-build-succeeds, the server's and the bot's own (its watch); nothing when neither is set.",
  example: null,
  bareParams: null,
  params: z.null(),
  itemKinds: ['merge_request'],
  describe: () => 'cancel merge_when_build_succeeds',
  plan: (_params, { snapshot }) => {
    if (snapshot.kind !== 'merge_request') return [];
    if (!isOpenState(snapshot.state)) return skip(`the merge request is ${snapshot.state}`);
    if (!snapshot.merge_when_build_succeeds && snapshot.botMerge !== true)
      return skip('merge_when_build_succeeds is not set');
    return [
      {
        call: { op: 'mergeRequests.cancelMergeWhenBuildSucceeds', args: mergeRequestTarget(snapshot) },
        reason: 'cancel merge_when_build_succeeds',
      },
    ];
  },
});
