/**
 * A train car's commit statuses, judged for EVERY merge request it carries (docs/merge-queue.md#merge-trains):
 * each member's own `required` names must all have passed on the car's commit, and each member's own
 * `status_timeout` bounds the wait for its own names. Before, the head of the queue decided for every
 * car: a merge request whose rule required `review/approved` landed in a car judged by the head's rule,
 * which did not (issue 36).
 */
import type { QueueEntry } from '../../state/index.ts';
import type { StatusBucket } from '../../rules/index.ts';
import { bucketsAt, type HeadClient } from './head-statuses.ts';

export type CarStatuses =
  | { kind: 'green'; statuses: Record<string, StatusBucket> }
  /** Names that failed (each required by a member). */
  | { kind: 'red'; red: string[]; statuses: Record<string, StatusBucket> }
  | {
      kind: 'pending';
      /** Every required name not passed yet, with its bucket. */
      pending: [string, StatusBucket][];
      statuses: Record<string, StatusBucket>;
      /** A member whose own timeout is over while one of its own names has not passed. */
      late?: { entry: QueueEntry; names: [string, StatusBucket][] };
    };

/** The statuses of `sha` (a car's commit in `projectId`) for the car's members, `waitedMs` after its push. */
export async function carStatuses(
  client: HeadClient,
  projectId: number,
  car: { sha: string; branch: string },
  members: readonly QueueEntry[],
  waitedMs: number,
): Promise<CarStatuses> {
  const names = [...new Set(members.flatMap((entry) => entry.required))];
  // The car's own build: the statuses of its commit on its own branch.
  const statuses = await bucketsAt(client, projectId, car.sha, names, car.branch);
  const red = names.filter((name) => statuses[name] === 'failed');
  if (red.length > 0) return { kind: 'red', red, statuses };
  const pending = names.flatMap((name): [string, StatusBucket][] =>
    statuses[name] === 'passed' ? [] : [[name, statuses[name]!]],
  );
  if (pending.length === 0) return { kind: 'green', statuses };
  for (const entry of members) {
    if (waitedMs < entry.statusTimeoutMs) continue;
    const own = pending.filter(([name]) => entry.required.includes(name));
    if (own.length > 0) return { kind: 'pending', pending, statuses, late: { entry, names: own } };
  }
  return { kind: 'pending', pending, statuses };
}
