/**
 * A train car's commit statuses, judged for EVERY merge request it carries (docs/merge-queue.md#merge-trains):
 * each member's own `required` names must all have passed on the car's commit, and each member's own
 * `status_timeout` bounds the wait for its own names. Before, the head of the queue decided for every
 * car: a merge request whose rule required `review/approved` landed in a car judged by the head's rule,
 * which did not (issue 36).
 */
import type { QueueEntry, StateStore, TrainCar } from '../../state/index.ts';
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

/**
 * The cars behind a front car still tested: their statuses read, and recorded on the car when they
 * are final (`TrainCar.checked`), so the queue page tells a car that passed and waits for the cars
 * ahead from one whose build runs, and a failed one; and a build seen passing gives the queue's
 * estimates their build time (`trainCiMs`) from the first round on, before anything landed. Nothing
 * else changes: a car is judged (split, taken out) only when it is the front.
 */
export async function checkCarsBehind(
  deps: { client: HeadClient; store: Pick<StateStore, 'queued' | 'enqueue'>; now: () => number },
  projectId: number,
  cars: readonly { car: TrainCar; entries: QueueEntry[] }[],
): Promise<void> {
  const { store } = deps;
  for (const one of cars) {
    const { car } = one;
    const first = one.entries[0];
    if (!first || car.sha === undefined || car.pushedAt === undefined || car.landing !== undefined) continue;
    const now = deps.now();
    const where = { sha: car.sha, branch: car.branch };
    const verdict = await carStatuses(deps.client, projectId, where, one.entries, now - car.pushedAt);
    const state = verdict.kind === 'green' ? 'passed' : verdict.kind === 'red' ? 'failed' : undefined;
    if (state === undefined || car.checked?.state === state) continue;
    const checked: NonNullable<TrainCar['checked']> =
      verdict.kind === 'red'
        ? { state: 'failed', at: now, failed: verdict.red }
        : { state: 'passed', at: now };
    one.car = { ...car, checked };
    const sameQueue = (e: QueueEntry) =>
      !e.left &&
      e.project === first.project &&
      e.targetBranch === first.targetBranch &&
      e.queue === first.queue;
    for (const entry of store.queued().filter(sameQueue)) {
      const mine = entry.car?.id === car.id;
      if (!mine && state === 'failed') continue;
      await store.enqueue({
        ...entry,
        ...(mine ? { car: one.car } : {}),
        // What a build took, as seen here: the queue page's estimates (merge-train.ts sets it at a landing too).
        ...(state === 'passed' ? { trainCiMs: now - car.pushedAt } : {}),
      });
    }
  }
}
