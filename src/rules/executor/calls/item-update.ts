/**
 * `issues.update` and `mergeRequests.update`: `PUT /projects/:id/issues/:issue_id` (or
 * `.../merge_requests/:merge_request_id`): labels (as a delta on the current set) and close or reopen.
 */
import type { CallHandler } from '../types.ts';
import { editKey } from './keys.ts';
import { updateItem } from '../item-calls.ts';

export const itemUpdate: CallHandler<'issues.update' | 'mergeRequests.update'> = {
  key: (call) => editKey(call),
  freshCheck: false,
  perform: (ctx, call) => updateItem(ctx, call.args, call.labels),
  effects: (call) => {
    const { edit } = call.args;
    const effects: string[] = [];
    for (const name of call.labels?.add ?? []) effects.push(`would add label ${name} to {items}`);
    for (const name of call.labels?.remove ?? []) effects.push(`would remove label ${name} from {items}`);
    if (!call.labels && edit.labels) effects.push(`would set labels ${edit.labels.join(', ')} on {items}`);
    if (edit.state_event) effects.push(`would ${edit.state_event} {items}`);
    return effects;
  },
};
