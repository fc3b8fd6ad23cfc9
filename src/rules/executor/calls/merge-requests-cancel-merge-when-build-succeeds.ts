/** `mergeRequests.cancelMergeWhenBuildSucceeds`: Cancels merge-when-build-succeeds. It decides a merge: made only on a fresh evaluation that still plans it. */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { cancelMergeWhenBuildSucceeds } from '../merge-calls.ts';

export const mergeRequestsCancelMergeWhenBuildSucceeds: CallHandler<'mergeRequests.cancelMergeWhenBuildSucceeds'> =
  {
    key: (call) => argsKey(call),
    freshCheck: true,
    effects: () => ['would cancel merge when build succeeds on {items}'],
    perform: (ctx, call) => cancelMergeWhenBuildSucceeds(ctx, call.args),
  };
