/**
 * The merge train driver (docs/merge-queue.md#merge-trains): a queue whose entries ask `depth > 1` or
 * `batch > 1`. The serial queue (merge-queue.ts) stays as it is for the others; it hands a train's
 * queue here, with its own ways of taking a merge request out (the same comments and memory).
 *
 * Each run, under one lock per queue (one driver per queue at a time, across replicas where the
 * item runs are fleet-wide), in steps of their own files (the run's shared data: train-run.ts):
 *   1. The cars as the store holds them, in queue order, valid while they chain: car 1 on the
 *      target's head, car k on car k-1's commit, each car's members in the queue in its order
 *      (train-cars.ts); a car whose landing a crash interrupted is recognised (train-land.ts).
 *   2. The front (train-judge.ts): the consecutive green cars land in one fast-forward push
 *      (train-land.ts), each member evaluated again first; the first car that is not green is
 *      judged: failed or past the timeout -> a car of one leaves with one comment, a car of more is
 *      split in halves (bisection); a member closed, merged, gone or pushed -> out at once, rebuilt.
 *   3. Cars are built up to `depth` (train-build.ts): each the merge of its members' heads into the
 *      car ahead, recorded (dates and identity fixed, so a rebuild makes the same sha) and pushed to
 *      `<prefix><target>/<queue>/<iid>`.
 * Branches of cars that landed, left or were rebuilt differently are deleted (only train branches:
 * train-cleanup.ts), in the run's tail (train-tail.ts), which news hands to the next run.
 */
import type { QueueEntry, QueueShape } from '../../state/index.ts';
import type { TrainDeps, TrainStep } from './train-deps.ts';
import { carsOf } from './train-cars.ts';
import { landPending, landRecorded } from './train-land.ts';
import { landFront, landLate, readStatusesEarly } from './train-judge.ts';
import { buildNewCars, pushBuilt, rebuildUnpushed } from './train-build.ts';
import { startTrainRun, type TrainRun } from './train-run.ts';
import { cutStaleRiders } from './train-watch.ts';
import { finishTail, giveBackTail, takeOverTail } from './train-tail.ts';

export { FORK_APPROVAL_SETTLE_MS } from './train-riders.ts';

/**
 * Drives one train's queue once (`initial` in queue order; `shape`, the queue's depth and batch: the
 * smallest its entries ask, or the window of `depth: auto`, state/queue-order.ts `queueShape`).
 */
export async function driveTrain(
  deps: TrainDeps,
  initial: QueueEntry[],
  shape: Pick<QueueShape, 'depth' | 'batch' | 'auto'>,
): Promise<TrainStep[]> {
  const run = await startTrainRun(deps, initial[0]!, shape);
  // What the queue's last run left when news came (train-tail.ts): this run finishes it, or gives it
  // back when it fails.
  takeOverTail(run);
  try {
    return await drive(run);
  } catch (error) {
    giveBackTail(run);
    throw error;
  }
}

async function drive(run: TrainRun): Promise<TrainStep[]> {
  // 1. A front car that landed already is never landed twice; then the cars that still chain.
  await landRecorded(run);
  const chained = carsOf(run.queueNow(), run.target);
  run.cars = chained.cars;
  await run.cut(chained.broken);
  // A member of any car pushed, closed or retargeted since: that car and those behind are given up now.
  readStatusesEarly(run);
  await cutStaleRiders(run);
  // 2. The front.
  if ((await landFront(run)) === 'stop') return finish(run, false);
  // 3. Cars up to `depth`: the recorded ones not pushed yet again (same sha), then new ones behind.
  let pushed = false;
  let building = false;
  try {
    building = await rebuildUnpushed(run);
    if (building) await buildNewCars(run);
  } catch (error) {
    // A car that cannot be built never holds up a landing decided before it: the landing goes alone.
    if (run.landing) await landPending(run);
    throw error;
  }
  // News during the run (the rest of a round's statuses, often): the front's green cars join the landing.
  await landLate(run);
  if (building) pushed = await pushBuilt(run);
  return finish(run, true, pushed);
}

/**
 * The run's end, once the cars are pushed: a landing still waiting for its push pushed alone, then the
 * tail (train-tail.ts): none of it holds up a push, and with news the next run takes it over.
 */
async function finish(run: TrainRun, cleanUp = true, pushed = false): Promise<TrainStep[]> {
  // A landing that was to go with cars none of which could be built or pushed: alone.
  if (run.landing && (await landPending(run)) === 'stop') cleanUp = false;
  await finishTail(run, cleanUp, pushed);
  return run.steps;
}
