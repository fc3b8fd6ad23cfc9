/** `mergeRequests.mergeWhenBuildSucceeds`: Arms merge-when-build-succeeds at the evaluated head, and puts the merge request on the merge watch. It decides a merge: made only on a fresh evaluation that still plans it. */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { mergeWhenBuildSucceeds } from '../merge-calls.ts';

export const mergeRequestsMergeWhenBuildSucceeds: CallHandler<'mergeRequests.mergeWhenBuildSucceeds'> = {
  key: (call) => argsKey(call),
  freshCheck: true,
  effects: () => ['would arm merge when build succeeds on {items}'],
  perform: (ctx, call) => mergeWhenBuildSucceeds(ctx, call.args),
};
