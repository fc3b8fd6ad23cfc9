/** `issues.assign`: Composite: the username resolved to an id (`GET /users?username=`), then the issue's `assignee_id` written (null unassigns). */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { assignItem } from '../item-calls.ts';

export const issuesAssign: CallHandler<'issues.assign'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  perform: (ctx, call) => assignItem(ctx, call.args),
};
