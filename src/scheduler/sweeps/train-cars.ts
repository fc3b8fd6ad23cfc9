/**
 * The cars of a merge train (docs/merge-queue.md#merge-trains), as data: where a car's branch goes,
 * which recorded cars still chain, and what a failed push of them means in words.
 */
import type { PushOutcome } from '../../git/index.ts';
import type { QueueEntry, TrainCar } from '../../state/index.ts';

const short = (sha: string | undefined | null): string => (sha ? sha.slice(0, 7) : 'none');

export interface Car {
  car: TrainCar;
  entries: QueueEntry[];
}

/**
 * The train branch of a car led by `iid`: unambiguous per project, target branch and queue (a queue
 * name has no `/`). `prefix` is `git.train_branch_prefix` (`hookbot/train/` by default).
 */
export function trainBranch(prefix: string, targetBranch: string, queue: string, iid: number): string {
  return `${prefix}${targetBranch}/${queue}/${iid}`;
}

/**
 * The cars as the store holds them, in queue order, valid while they chain: car 1 on the target's
 * head, car k on car k-1's commit, each car's members in the queue in its order. Everything behind
 * the first car that does not chain is `broken` (built anew).
 */
export function carsOf(queue: QueueEntry[], target: string): { cars: Car[]; broken: Car[] } {
  const cars: Car[] = [];
  const broken: Car[] = [];
  let i = 0;
  let below = target;
  while (i < queue.length) {
    const car = queue[i]!.car;
    if (!car) break;
    const entries = queue.slice(i, i + car.members.length);
    const whole =
      entries.length === car.members.length &&
      entries.every((e, j) => e.car?.id === car.id && e.itemKey === car.members[j]);
    if (!whole || car.base !== below || car.sha === undefined) break;
    cars.push({ car, entries });
    below = car.sha;
    i += car.members.length;
  }
  // Everything behind the first car that does not chain is built anew.
  const seen = new Set(cars.map((c) => c.car.id));
  for (const entry of queue.slice(i))
    if (entry.car && !seen.has(entry.car.id)) {
      seen.add(entry.car.id);
      broken.push({ car: entry.car, entries: queue.slice(i).filter((e) => e.car?.id === entry.car!.id) });
    }
  return { cars, broken };
}

/** Why the cars' push failed, in words for the status page, explain and the log. */
export function pushFailure(pushed: Exclude<PushOutcome, { kind: 'pushed' }>, branch: string): string {
  switch (pushed.kind) {
    case 'refused':
      return `the server refused the push of the train's branches: ${pushed.message}`;
    case 'moved':
      return `the train branch ${branch} moved under the push; tried again next run`;
    case 'blocked':
      return blockedBy(pushed);
  }
}

/** A branch that makes the train's branches impossible to create, named with what to do. */
export function blockedBy(blocked: { ref: string; sha: string; branch: string }): string {
  return `the branch \`${blocked.ref}\` (at ${short(blocked.sha)}) blocks the merge train's branch \`${blocked.branch}\`: git cannot make a branch inside another (nor one where a branch is a folder); delete or rename \`${blocked.ref}\`, or choose another git.train_branch_prefix (docs/merge-queue.md#the-trains-branches). The train builds nothing until then`;
}
