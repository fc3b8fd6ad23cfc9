/** `issues.unsubscribe`: Unsubscribes the bot from an issue (304 from the server: it was not subscribed). */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { subscription } from '../item-calls.ts';

export const issuesUnsubscribe: CallHandler<'issues.unsubscribe'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  perform: (ctx, call) => subscription(ctx, call.args, false),
};
