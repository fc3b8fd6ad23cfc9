import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { skip } from '../engine/planned-call.ts';
import { subscriptionCall } from '../engine/build-calls.ts';

export const subscribe = defineAction({
  inRepositories: 'allowed',
  name: 'subscribe',
  summary:
    'Subscribes the bot to the item (it then gets its notifications); nothing when already subscribed.',
  example: null,
  bareParams: null,
  params: z.null(),
  describe: () => 'subscribe',
  plan: (_params, { snapshot }) => {
    // `subscribed` is absent when not read: plan the call, the server answers 304 if it holds.
    if (snapshot.subscribed === true) return skip('already subscribed');
    return [{ call: subscriptionCall(snapshot, true), reason: 'subscribe' }];
  },
});
