/**
 * The order of merge queues (docs/merge-queue.md), from the store's entries alone: the driver, the
 * status page and explain all read it here. Priority first (higher first), then arrival, then key.
 */
import type { QueueEntry } from './store.ts';

const short = (sha: string | undefined): string => (sha ? sha.slice(0, 7) : 'none');

/** A queue's entries in order: priority (higher first), then arrival, then key. */
function queueOrder(entries: readonly QueueEntry[]): QueueEntry[] {
  return [...entries].sort(
    (a, b) => b.priority - a.priority || a.enqueuedAt - b.enqueuedAt || a.itemKey.localeCompare(b.itemKey),
  );
}

/** The queues of the store, each in order, keyed `project|target|name`. */
export function queuesOf(entries: readonly QueueEntry[]): Map<string, QueueEntry[]> {
  const groups = new Map<string, QueueEntry[]>();
  for (const entry of entries) {
    // A merge request taken out with a comment is remembered, but in no queue.
    if (entry.left) continue;
    const key = `${entry.project.toLowerCase()}|${entry.targetBranch}|${entry.queue}`;
    groups.set(key, [...(groups.get(key) ?? []), entry]);
  }
  for (const [key, group] of groups) groups.set(key, queueOrder(group));
  return groups;
}

/** Where a queued merge request stands, in words: `position 2 of 4; waiting for ci/test on 3f2a1c9`. */
export function queuePosition(
  entries: readonly QueueEntry[],
  itemKey: string,
  now: number,
): string | undefined {
  const removed = entries.find((entry) => entry.itemKey === itemKey && entry.left);
  if (removed?.left)
    return `left the ${removed.queue} queue for ${removed.targetBranch} at ${short(removed.left.sha)}: ${removed.left.reason}; it enters again after a push, or once its rule stops matching and matches again`;
  for (const group of queuesOf(entries).values()) {
    const index = group.findIndex((entry) => entry.itemKey === itemKey);
    if (index < 0) continue;
    const entry = group[index]!;
    const where = `position ${index + 1} of ${group.length} in the ${entry.queue} queue for ${entry.targetBranch}`;
    if (index > 0) return `${where}; waiting for ${group[0]!.project}!${group[0]!.iid} ahead`;
    // The queue is stuck on it: said first, it is what a reader must act on.
    if (entry.trouble)
      return `${where}; the queue cannot move: ${entry.trouble.count} step${entry.trouble.count === 1 ? '' : 's'} failed in a row for ${Math.round((now - entry.trouble.since) / 1000)} s, the last with: ${entry.trouble.error}`;
    if (entry.pinnedSha === undefined)
      return `${where}; its branch is being brought up to ${entry.targetBranch}`;
    const left = Math.max(0, entry.statusTimeoutMs - (now - (entry.testingSince ?? now)));
    return `${where}; waiting for ${entry.required.join(', ')} on ${short(entry.pinnedSha)} (timeout in ${Math.ceil(left / 1000)} s)`;
  }
  return undefined;
}
