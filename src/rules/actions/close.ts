import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { skip } from '../engine/planned-call.ts';
import { isOpenState } from '../../api/index.ts';
import { updateCall } from '../engine/build-calls.ts';

export const close = defineAction({
  inRepositories: 'allowed',
  name: 'close',
  summary: 'Closes the issue or merge request; nothing when it is already closed or merged.',
  example: null,
  bareParams: null,
  params: z.null(),
  describe: () => 'close',
  plan: (_params, { snapshot }) => {
    if (!isOpenState(snapshot.state)) return skip(`already ${snapshot.state}`);
    return [{ call: updateCall(snapshot, { state_event: 'close' }), reason: 'close' }];
  },
});
