import { z } from 'zod';
import { defineAction } from '../define-action.ts';
import { skip } from '../planned-call.ts';
import { assignCall } from './item-calls.ts';

export const unassign = defineAction({
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
