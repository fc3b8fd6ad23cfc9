/**
 * `issues.assign` and `mergeRequests.assign`: Composite: the username resolved to an id
 * (`GET /users?username=`), then the item's `assignee_id` written (null unassigns).
 */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { assignItem } from '../item-calls.ts';

export const itemAssign: CallHandler<'issues.assign' | 'mergeRequests.assign'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  perform: (ctx, call) => assignItem(ctx, call.args),
  effects: (call) => [
    call.args.username === null ? 'would unassign {items}' : `would assign @${call.args.username} to {items}`,
  ],
};
