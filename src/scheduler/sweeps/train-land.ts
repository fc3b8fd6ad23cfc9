/**
 * Landing a merge train's cars (docs/merge-queue.md#merge-trains): the target pushed (a fast-forward,
 * never forced) to the last green car's commit, the landed merge requests out of the queue, and a car
 * whose landing a crash interrupted recognised as landed, never landed twice.
 */
import type { MergeRequest } from '../../api/index.ts';
import type { QueueEntry } from '../../state/index.ts';
import type { Car } from './train-cars.ts';
import { short, type TrainRun } from './train-run.ts';
import { growAfterLanding } from './train-window.ts';

/** Reads of a landed merge request until the server shows it merged, and the gap between them. */
const LANDED_READS = 5;
const LANDED_READ_GAP_MS = 400;

/**
 * The car's merge requests after its landing push: out of the queue (the target holds them). The
 * server marks them merged itself, and 8.x does it in the background (`PostReceive`, then
 * `UpdateMergeRequestsWorker`), so a merge request read at once may still be open: those are read
 * again a few times, LANDED_READS in all, LANDED_READ_GAP_MS apart, before the report says so.
 */
export async function landed(run: TrainRun, front: Car, target: string, position = 1): Promise<void> {
  const { deps } = run;
  const reads = new Map<string, MergeRequest | undefined>();
  for (let round = 0; round < LANDED_READS; round++) {
    const open = front.entries.filter((e) => reads.get(e.itemKey)?.state !== 'merged');
    if (open.length === 0) break;
    if (round > 0) await new Promise((resolve) => setTimeout(resolve, LANDED_READ_GAP_MS));
    for (const entry of open) reads.set(entry.itemKey, await run.readMr(entry));
  }
  for (const entry of front.entries) {
    const mr = reads.get(entry.itemKey);
    await deps.store.dequeue(entry.itemKey);
    const car = { ...front.car, position };
    await deps.events?.landed(entry, { mode: 'train', car, commit: front.car.sha! }, mr);
    if (mr?.state === 'merged')
      run.say(
        entry,
        'merged',
        `landed: ${entry.targetBranch} fast-forwarded to ${short(front.car.sha)} (car ${front.car.position}), the server marked it merged`,
      );
    else {
      deps.log.warn(
        { sweep: 'merge_queue', itemKey: entry.itemKey, sha: front.car.sha, state: mr?.state },
        'merge train: the target holds the car, but the server had not marked the merge request merged',
      );
      run.say(
        entry,
        'merged',
        `landed at ${short(target)}; the server had not marked it merged ${Math.round(((LANDED_READS - 1) * LANDED_READ_GAP_MS) / 100) / 10} s after the push (it was ${mr?.state ?? 'unread'}): 8.x does it in the background, a server that never does leaves it open`,
      );
    }
  }
  run.stale.set(front.car.branch, front.car.sha);
}

/**
 * The front car landed already: the target is at its commit, or its landing was recorded and the
 * target is at the commit of a car behind it recorded in the same landing (one push lands several),
 * or the server marked its merge requests merged and someone pushed on top since. Never landed twice.
 */
export async function landRecorded(run: TrainRun): Promise<void> {
  for (;;) {
    const queue = run.queueNow();
    const car = queue[0]?.car;
    if (car?.sha === undefined) break;
    const members = queue.filter((e) => e.car?.id === car.id);
    const withOneBehind =
      car.landing !== undefined &&
      queue.some((e) => e.car !== undefined && e.car.landing === car.landing && e.car.sha === run.target);
    if (car.sha !== run.target && !withOneBehind) {
      if (car.landing === undefined) break;
      const reads = await Promise.all(members.map((m) => run.readMr(m)));
      if (!reads.every((mr) => mr?.state === 'merged')) break;
    }
    await landed(run, { car, entries: members }, run.target);
  }
}

/**
 * Lands `going` (consecutive green cars from the front) in one push of the target to the last one's
 * commit: 'landed' (they are out, `run.cars` lost them), 'on' (not landed; the run goes on: cars to
 * build again), 'stop' (the server refused the bot: the run ends here, said as the queue's trouble).
 */
export async function landCars(run: TrainRun, going: readonly Car[]): Promise<'landed' | 'on' | 'stop'> {
  const { deps, head } = run;
  const last = going.at(-1)!.car;
  // What a build took, as seen here (from the push to green): the status page's estimates.
  const ciMs = Math.max(0, deps.now() - last.pushedAt!);
  const carried = new Set(going.flatMap((one) => one.car.members));
  for (const entry of run.queueNow())
    if (!carried.has(entry.itemKey)) await run.patch(entry.itemKey, (e) => ({ ...e, trainCiMs: ciMs }));
  const at = deps.now();
  for (const one of going)
    for (const entry of one.entries)
      await run.patch(entry.itemKey, (e) => ({ ...e, car: { ...one.car, landing: at } }));
  const pushed = await deps.updater.train.land({
    targetUrl: run.targetUrl,
    targetBranch: head.targetBranch,
    base: run.target,
    sha: last.sha!,
    carBranch: last.branch,
  });
  if (pushed.kind === 'pushed') {
    run.target = last.sha!;
    for (const [i, one] of going.entries()) {
      deps.events?.carBuilt('passed');
      await landed(run, one, run.target, i + 1);
    }
    run.cars = run.cars.slice(going.length);
    await growAfterLanding(run, going.length, last.sha);
    return 'landed';
  }
  if (pushed.kind === 'missing') {
    // The last car's commit is neither in this cache nor on its branch (a replica's push of it was
    // lost): the cars going are built again from their records (the same commits) and pushed at the
    // end of the run; they land at a later run.
    deps.log.warn(
      { sweep: 'merge_queue', car: last.id, sha: last.sha },
      "merge train: the car's commit is not on its branch; built again from its record",
    );
    for (const one of going) {
      const { pushedAt: _pushed, landing: _landing, ...record } = one.car;
      one.car = record;
      for (const entry of one.entries) await run.patch(entry.itemKey, (e) => ({ ...e, car: record }));
    }
    return 'on';
  }
  for (const one of going)
    for (const entry of one.entries) await run.patch(entry.itemKey, (e) => ({ ...e, car: one.car }));
  if (pushed.kind === 'refused') {
    // The target did not move (read again after the push): the server refused the bot (no right to
    // push the protected branch, a push rule, a hook). Rebuilding would change nothing: the cars stay
    // as they are, and the train stops here until it is allowed.
    deps.log.error(
      { sweep: 'merge_queue', itemKey: head.itemKey, err: pushed.message },
      'merge train: the server refused the landing',
    );
    for (const one of going)
      for (const entry of one.entries)
        run.say(
          entry,
          'error',
          `the server refused the landing push of ${head.targetBranch} to ${short(last.sha)} (${head.targetBranch} did not move: it is still at ${short(run.target)}): ${pushed.message}; the merge train waits until the bot may push ${head.targetBranch} (docs/merge-queue.md#when-the-queue-cannot-move)`,
        );
    return 'stop';
  }
  // The target moved meanwhile: every car is built again on it.
  run.target = (await deps.client.branches.get(head.projectId, head.targetBranch)).commit.id;
  await run.cut(run.cars);
  run.cars = [];
  return 'on';
}

/** The members of `cars` whose car another evaluation changed (the rule no longer holds for them). */
export function leftTheirCar(run: TrainRun, car: Car): QueueEntry[] {
  const held = run.carIds();
  return car.entries.filter((entry) => held.get(entry.itemKey) !== car.car.id);
}
