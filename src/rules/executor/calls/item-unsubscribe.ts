/** `issues.unsubscribe` and `mergeRequests.unsubscribe`: Unsubscribes the bot from the item (304 from the server: it was not subscribed). */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { subscription } from '../item-calls.ts';

export const itemUnsubscribe: CallHandler<'issues.unsubscribe' | 'mergeRequests.unsubscribe'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  perform: (ctx, call) => subscription(ctx, call.args, false),
  effects: () => ['would unsubscribe from {items}'],
};
