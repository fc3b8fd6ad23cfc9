/**
 * A merge train's branches going away (docs/merge-queue.md#the-trains-branches): the branches of cars
 * given up, landed or left, deleted only while each holds the car's own commit; a branch someone
 * pushed to is left where it is, and said in the log.
 */
import type { BranchUpdater } from '../../git/index.ts';
import type { QueueEntry, StateStore } from '../../state/index.ts';
import { messageOf, type SweepLog } from '../types.ts';
import { trainBranch } from './train-cars.ts';

export interface CleanupRequest {
  updater: BranchUpdater;
  targetUrl: string;
  log: SweepLog;
  /** Branches given up, with the car commit each was recorded at (undefined: not recorded). */
  stale: ReadonlyMap<string, string | undefined>;
  /** Branches a car in the queue still holds: never deleted. */
  holding: ReadonlySet<string>;
  /**
   * The queue whose folder is listed too (`<prefix><target>/<queue>/<iid>`), for the branches of cars
   * whose every member left the queue elsewhere (a removed label, a push): their record went with
   * them, so they are deleted only if they hold a commit the train made (train-git.ts).
   */
  list?: { targetBranch: string; queue: string };
}

export async function deleteCarBranches(request: CleanupRequest): Promise<void> {
  const { updater, targetUrl, log } = request;
  const stale = new Map(request.stale);
  try {
    if (request.list) {
      // `<prefix><iid>` only: a target branch named like `<this target>/<this queue>/...` has its own.
      const prefix = trainBranch(
        updater.train.prefix,
        request.list.targetBranch,
        request.list.queue,
        0,
      ).slice(0, -1);
      const listed = await updater.train.listCars({ targetUrl, prefix });
      for (const branch of listed.keys())
        if (/^\d+$/.test(branch.slice(prefix.length)) && !stale.has(branch)) stale.set(branch, undefined);
      // What the listing shows gone (a landed car's branch, deleted with its landing) is not asked
      // for again.
      for (const branch of [...stale.keys()])
        if (branch.startsWith(prefix) && !listed.has(branch)) stale.delete(branch);
    }
    const going = [...stale].filter(([branch]) => !request.holding.has(branch));
    const outcome = await updater.train.deleteCars({
      targetUrl,
      cars: going.map(([branch, sha]) => ({ branch, ...(sha ? { sha } : {}) })),
    });
    for (const left of outcome.left)
      log.warn(
        { sweep: 'merge_queue', branch: left.branch, sha: left.sha },
        `merge train: left the branch ${left.branch} where it is: ${left.why}`,
      );
  } catch (error) {
    log.warn({ sweep: 'merge_queue', err: messageOf(error) }, 'merge train: could not delete train branches');
  }
}

/**
 * A queue that was a train and is serial now (its entries' rules changed, or a serial rule's merge
 * request joined it: state/queue-order.ts `queueShape`): its cars are given up, their branches
 * deleted, and its entries go on in the serial queue from the start.
 */
export async function dismantleTrain(
  deps: { updater: BranchUpdater | undefined; store: Pick<StateStore, 'queued' | 'enqueue'>; log: SweepLog },
  entries: readonly QueueEntry[],
  targetUrl: () => Promise<string>,
): Promise<void> {
  const riding = entries.filter((entry) => entry.car !== undefined || entry.carCap !== undefined);
  if (riding.length === 0) return;
  const stale = new Map(riding.flatMap((entry) => (entry.car ? [[entry.car.branch, entry.car.sha]] : [])));
  for (const entry of riding) {
    const now = deps.store.queued().find((one) => one.itemKey === entry.itemKey && !one.left);
    if (!now) continue;
    const { car: _car, carCap: _cap, carAfter: _after, ...rest } = now;
    await deps.store.enqueue(rest);
  }
  if (deps.updater && stale.size > 0)
    await deleteCarBranches({
      updater: deps.updater,
      targetUrl: await targetUrl(),
      log: deps.log,
      stale,
      holding: new Set(),
    });
}
