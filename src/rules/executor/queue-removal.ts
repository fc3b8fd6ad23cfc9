/**
 * One merge request taken out of its merge queue by a person: an operator (`hookbot queue remove`,
 * the ops port) or a member's comment command (`/hookbot dequeue`, the `dequeue` action). Both write
 * the entry's `left` memory the same way, here, and report the removal through `queueRemoved`, the
 * single place a queue's story (explain, metrics) learns of such a removal.
 */
import type { QueueEntry, StateStore } from '../../state/index.ts';

/** The stable codes of a person's removal (the other codes are the queue driver's). */
export type PersonRemovalCode = 'operator' | 'dequeue_command';

export interface QueueRemoval {
  entry: QueueEntry;
  code: PersonRemovalCode;
  /** In words, as the entry's `left.reason` keeps it. */
  reason: string;
  /** The username of who took it out. */
  by: string;
  /** A comment on the merge request says so. */
  commented: boolean;
  at: number;
}

export interface QueueRemovalLog {
  info(obj: object, msg: string): void;
}

/**
 * Told of every removal by a person, once its memory is written. Today it logs one line with the
 * reason code; the queue's events (explain's story, the `hookbot_merge_queue_*` metrics) are fed
 * from here.
 */
export function queueRemoved(log: QueueRemovalLog | undefined, removal: QueueRemoval): void {
  log?.info(
    {
      itemKey: removal.entry.itemKey,
      queue: removal.entry.queue,
      targetBranch: removal.entry.targetBranch,
      code: removal.code,
      by: removal.by,
      commented: removal.commented,
    },
    `merge queue: removed: ${removal.reason}`,
  );
}

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
