/**
 * One merge request taken out of its merge queue by a person: an operator (`hookbot queue remove`,
 * the ops port: its story and metrics through the queue's events, rules/queue/queue-events.ts) or a
 * member's comment command (`/hookbot dequeue`, the `dequeue` action: the evaluation's decision tells
 * it, and process-item.ts counts it). Both write the entry's `left` memory the same way, here.
 */
import type { QueueEntry, StateStore } from '../../state/index.ts';

/**
 * Marks `entry` as left at `sha` with `reason` (the memory that keeps it out at this head: a push,
 * its rule matching anew, or a member's new comment command lets it in), its progress dropped.
 * The approval it left with is remembered as the queue driver does.
 */
export async function leaveAt(
  store: Pick<StateStore, 'enqueue'>,
  entry: QueueEntry,
  sha: string,
  reason: string,
  at: number,
): Promise<void> {
  const {
    pinnedSha: _pinned,
    targetSha: _target,
    testingSince: _since,
    trouble: _trouble,
    car: _car,
    carCap: _cap,
    carAfter: _after,
    front: _front,
    ...kept
  } = entry;
  const noteId = entry.approval?.noteId;
  await store.enqueue({
    ...kept,
    updates: 0,
    left: { at, sha, reason, ...(noteId !== undefined ? { noteId } : {}) },
  });
}
