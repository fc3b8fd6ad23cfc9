/** `mergeRequests.assign`: Composite: as `issues.assign`, for a merge request. */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { assignItem } from '../item-calls.ts';

export const mergeRequestsAssign: CallHandler<'mergeRequests.assign'> = {
  key: (call) => argsKey(call),
  freshCheck: false,
  perform: (ctx, call) => assignItem(ctx, call.args),
};
