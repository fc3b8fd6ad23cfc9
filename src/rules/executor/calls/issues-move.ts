/** `issues.move`: Composite: the target path resolved to a project id, then the issue moved. It cannot be taken back: made only on a fresh evaluation that still plans it. */
import type { CallHandler } from '../types.ts';
import { argsKey } from './keys.ts';
import { moveIssue } from '../item-calls.ts';

export const issuesMove: CallHandler<'issues.move'> = {
  key: (call) => argsKey(call),
  freshCheck: true,
  effects: (call) => [`would move {items} to ${call.args.to_project}`],
  perform: (ctx, call) => moveIssue(ctx, call.args),
};
