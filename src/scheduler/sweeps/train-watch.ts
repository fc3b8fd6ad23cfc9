/**
 * Every car's members, read at the start of each run (docs/merge-queue.md#merge-trains): a push to a
 * car's source, a closed or retargeted merge request, a removed approval act on the train when the
 * hook that says so wakes it, wherever the car is in the train. The first car with a member that may
 * not ride any more is given up with every car behind it (they hold that member's old head); the cars
 * ahead of it stay as they are. Before (issue 38), only the front cars were read, so a push to the
 * source of a car behind the front was noticed when that car reached the front: the stale car and the
 * cars behind it kept the CI busy for nothing until then, and new cars were built on top of it.
 */
import { short, type TrainRun } from './train-run.ts';

export async function cutStaleRiders(run: TrainRun): Promise<void> {
  const pushed = run.cars
    .map((one, index) => ({ one, index }))
    .filter(({ one }) => one.car.sha !== undefined);
  if (pushed.length === 0) return;
  // One read per member, all at once: the train's round waits for the slowest, not for their sum.
  const reads = await Promise.all(
    pushed.map(({ one }) => Promise.all(one.entries.map((entry) => run.readMr(entry)))),
  );
  for (const [k, { one }] of pushed.entries())
    for (const [i, entry] of one.entries.entries()) run.riders.set(entry.itemKey, reads[k]![i]);
  for (const [k, { one, index }] of pushed.entries()) {
    // Each member that may not ride any more is taken out, with its reason (said in the steps).
    let fine = true;
    for (const [i, entry] of one.entries.entries())
      if (!(await run.stillRides(entry, reads[k]![i], one.car.heads[i]))) fine = false;
    if (fine) continue;
    run.deps.log.info(
      { sweep: 'merge_queue', car: one.car.id, behind: run.cars.length - index - 1 },
      `merge train: car ${index + 1} (${short(one.car.sha)}) holds a head that is not its merge request's any more: it and the cars behind it are built again`,
    );
    await run.cut(run.cars.slice(index));
    run.cars = run.cars.slice(0, index);
    return;
  }
}
