import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { skip } from '../engine/planned-call.ts';
import { assignCall } from '../engine/build-calls.ts';

export const unassign = defineAction({
  inRepositories: 'allowed',
  name: 'unassign',
  summary: 'Removes the assignee; nothing when there is none.',
  example: null,
  bareParams: null,
  params: z.null(),
  describe: () => 'unassign',
  plan: (_params, { snapshot }) => {
    if (!snapshot.assignee) return skip('nobody is assigned');
    return [{ call: assignCall(snapshot, null), reason: `unassign @${snapshot.assignee.username}` }];
  },
});
