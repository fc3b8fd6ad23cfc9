/** Calls that exist for both kinds of item, picked by the item's kind. */
import type { ApiCall, ItemEdit } from './planned-call.ts';
import { issueTarget, mergeRequestTarget } from './planned-call.ts';
import type { ItemSnapshot } from './snapshot.ts';

export function updateCall(item: ItemSnapshot, edit: ItemEdit): ApiCall {
  return item.kind === 'issue'
    ? { op: 'issues.update', args: { ...issueTarget(item), edit } }
    : { op: 'mergeRequests.update', args: { ...mergeRequestTarget(item), edit } };
}

export function assignCall(item: ItemSnapshot, username: string | null): ApiCall {
  return item.kind === 'issue'
    ? { op: 'issues.assign', args: { ...issueTarget(item), username } }
    : { op: 'mergeRequests.assign', args: { ...mergeRequestTarget(item), username } };
}

export function subscriptionCall(item: ItemSnapshot, subscribe: boolean): ApiCall {
  if (item.kind === 'issue')
    return { op: subscribe ? 'issues.subscribe' : 'issues.unsubscribe', args: issueTarget(item) };
  return {
    op: subscribe ? 'mergeRequests.subscribe' : 'mergeRequests.unsubscribe',
    args: mergeRequestTarget(item),
  };
}

/** `opened`, and `reopened` which v3-era servers report for a reopened merge request. */
export const isOpen = (item: ItemSnapshot): boolean => item.state === 'opened' || item.state === 'reopened';
