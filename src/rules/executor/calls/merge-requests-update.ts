/** `mergeRequests.update`: `PUT /projects/:id/merge_requests/:merge_request_id`: labels (as a delta on the current set) and close or reopen. */
import type { CallHandler } from '../types.ts';
import { editKey } from './keys.ts';
import { updateItem } from '../item-calls.ts';

export const mergeRequestsUpdate: CallHandler<'mergeRequests.update'> = {
  key: (call) => editKey(call),
  freshCheck: false,
  perform: (ctx, call) => updateItem(ctx, call.args, call.labels),
};
