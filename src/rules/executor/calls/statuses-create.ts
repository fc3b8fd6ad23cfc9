/** `statuses.create`: A commit status on the evaluated head: skipped when the head already carries it. */
import type { CallHandler } from '../types.ts';
import { statusKey } from './keys.ts';
import { postStatus } from '../item-calls.ts';

export const statusesCreate: CallHandler<'statuses.create'> = {
  key: (call) => statusKey(call),
  freshCheck: false,
  effects: (call) => [`would set status ${call.args.name} to ${call.args.state} on {items}`],
  perform: (ctx, call) => postStatus(ctx, call.args),
};
