import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { skip } from '../engine/planned-call.ts';
import { subscriptionCall } from '../engine/build-calls.ts';

export const unsubscribe = defineAction({
  inRepositories: 'allowed',
  name: 'unsubscribe',
  summary: 'Unsubscribes the bot from the item; nothing when not subscribed.',
  example: null,
  bareParams: null,
  params: z.null(),
  describe: () => 'unsubscribe',
  plan: (_params, { snapshot }) => {
    // `subscribed` is absent when not read: plan the call, the server answers 304 if it holds.
    if (snapshot.subscribed === false) return skip('not subscribed');
    return [{ call: subscriptionCall(snapshot, false), reason: 'unsubscribe' }];
  },
});
