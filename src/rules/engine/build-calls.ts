/**
 * Builders of planned calls, for the actions and the engine (which merges label writes and plans the
 * summary status): calls that exist for both kinds of item are picked by the item's kind. The
 * executor's calls/ performs them.
 */
import type { EvalInput } from './eval-input.ts';
import type { ApiCall, ItemEdit, Proposal } from './planned-call.ts';
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

/**
 * One label change as a write of the whole set, with its delta: the engine merges every label
 * change for an item into one write (the v3 API replaces the set, so two writes would race).
 */
export function labelProposal(input: EvalInput, add: string[], remove: string[], reason: string): Proposal {
  // Plain loops: this runs for every label rule that matches, on every event.
  const item = input.snapshot;
  const labels: string[] = [];
  for (const name of item.labels) if (remove.length === 0 || !remove.includes(name)) labels.push(name);
  for (const name of add) labels.push(name);
  const edit = { labels };
  const delta = { add, remove };
  const call: ApiCall =
    item.kind === 'issue'
      ? { op: 'issues.update', args: { project: item.project.id, issue_id: item.id, edit }, labels: delta }
      : {
          op: 'mergeRequests.update',
          args: { project: item.project.id, merge_request_id: item.id, edit },
          labels: delta,
        };
  return { call, reason };
}
