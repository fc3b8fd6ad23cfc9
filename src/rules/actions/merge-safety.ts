/**
 * The checks every merge-like action shares, after Kodiak and marge-bot: act only on an open,
 * non-WIP merge request whose head commit is known, and only on statuses of that very commit.
 */
import type { Guarantee } from '../engine/define-condition.ts';
import type { MergeRequestSnapshot } from '../engine/snapshot.ts';
import { classifyStatus, type StatusBucket } from '../engine/status-buckets.ts';
import { isOpen } from '../engine/build-calls.ts';

/** Why the merge request cannot be merged at all, or undefined. */
export function mergeBlocker(mr: MergeRequestSnapshot): string | undefined {
  if (!isOpen(mr)) return `the merge request is ${mr.state}`;
  if (mr.work_in_progress) return 'the merge request is work in progress';
  if (mr.sha === null) return 'the head commit is unknown';
  if (mr.merge_status === 'cannot_be_merged') return 'the merge request has conflicts (cannot_be_merged)';
  return undefined;
}

/** Required status names of the rule's `statuses` conditions with `state` that held. */
export function requiredStatuses(
  guarantees: readonly Guarantee[],
  state: Guarantee['state'],
): string[] | undefined {
  const names = new Set<string>();
  for (const guarantee of guarantees)
    if (guarantee.kind === 'statuses' && guarantee.state === state)
      for (const name of guarantee.required) names.add(name);
  return names.size > 0 ? [...names] : undefined;
}

/** Each required status of the head commit, by bucket. */
export function bucketsOf(mr: MergeRequestSnapshot, required: readonly string[]): Map<string, StatusBucket> {
  return new Map(required.map((name) => [name, classifyStatus(mr.statuses?.find((s) => s.name === name))]));
}
