/** `issues.subscribe` and `mergeRequests.subscribe`: Subscribes the bot to the item (304 from the server: it already was). */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { subscription } from '../item-calls.ts';

export const itemSubscribe: CallHandler<'issues.subscribe' | 'mergeRequests.subscribe'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  perform: (ctx, call) => subscription(ctx, call.args, true),
  effects: () => ['would subscribe to {items}'],
};
