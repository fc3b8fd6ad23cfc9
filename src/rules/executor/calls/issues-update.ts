/** `issues.update`: `PUT /projects/:id/issues/:issue_id`: labels (as a delta on the current set) and close or reopen. */
import type { CallHandler } from '../types.ts';
import { editKey } from './keys.ts';
import { updateItem } from '../item-calls.ts';

export const issuesUpdate: CallHandler<'issues.update'> = {
  key: (call) => editKey(call),
  freshCheck: false,
  perform: (ctx, call) => updateItem(ctx, call.args, call.labels),
};
