/** `mergeRequests.merge`: The merge, pinned to the evaluated head (`sha`). It cannot be taken back: made only on a fresh evaluation that still plans it. */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { merge } from '../merge-calls.ts';

export const mergeRequestsMerge: CallHandler<'mergeRequests.merge'> = {
  key: (call) => argsKey(call),
  freshCheck: true,
  effects: () => ['would merge now'],
  perform: (ctx, call) => merge(ctx, call.args),
};
