import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { skip } from '../engine/planned-call.ts';
import { updateCall } from '../engine/build-calls.ts';

export const reopen = defineAction({
  inRepositories: 'allowed',
  name: 'reopen',
  summary: 'Reopens a closed issue or merge request; nothing when it is open (a merged one cannot reopen).',
  example: null,
  bareParams: null,
  params: z.null(),
  describe: () => 'reopen',
  plan: (_params, { snapshot }) => {
    if (snapshot.state !== 'closed') return skip(`it is ${snapshot.state}, not closed`);
    return [{ call: updateCall(snapshot, { state_event: 'reopen' }), reason: 'reopen' }];
  },
});
