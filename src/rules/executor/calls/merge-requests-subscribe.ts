/** `mergeRequests.subscribe`: Subscribes the bot to a merge request (304 from the server: it already was). */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { subscription } from '../item-calls.ts';

export const mergeRequestsSubscribe: CallHandler<'mergeRequests.subscribe'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  perform: (ctx, call) => subscription(ctx, call.args, true),
};
