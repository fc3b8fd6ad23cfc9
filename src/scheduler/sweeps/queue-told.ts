/**
 * What the queue drivers (merge-queue.ts, merge-train.ts) need to tell their events
 * (rules/queue/queue-events.ts): the reason code of a merge request that is out at once, and the
 * serial queue's landing with the commit the target is at after the merge.
 */
import type { Client, MergeRequest } from '../../api/index.ts';
import type { QueueEvents, RemovalCode } from '../../rules/index.ts';
import type { QueueEntry } from '../../state/index.ts';

/** Why a merge request read as it is (or not found) is out of its queue at once. */
export function goneCode(mr: MergeRequest | undefined, targetBranch: string): RemovalCode {
  if (!mr) return 'gone';
  if (mr.state === 'merged') return 'merged_elsewhere';
  if (mr.state !== 'opened' && mr.state !== 'reopened') return 'closed';
  if (mr.target_branch !== targetBranch) return 'target_changed';
  return 'gone';
}

/**
 * The serial queue merged `entry` at its tested head `tested`: the target's head right after the
 * merge is its merge commit (v3 does not return it; a push in between would be a later commit, which
 * holds it). A failed read only leaves the commit out.
 */
export async function serialLanded(
  client: { branches: Pick<Client['branches'], 'get'> },
  events: QueueEvents,
  entry: QueueEntry,
  mr: MergeRequest,
  tested: string,
): Promise<void> {
  const commit = await client.branches
    .get(entry.projectId, entry.targetBranch)
    .then((branch) => branch.commit.id)
    .catch(() => undefined);
  await events.landed(
    entry,
    { mode: 'serial', tested, ...(commit ? { commit } : {}) },
    { title: mr.title, state: 'merged', sha: tested },
  );
}
