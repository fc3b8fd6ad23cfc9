/**
 * Landing a merge train's cars (docs/merge-queue.md#merge-trains): the target pushed (a fast-forward,
 * never forced) to the last green car's commit, the landed merge requests out of the queue, and a car
 * whose landing a crash interrupted recognised as landed, never landed twice.
 */
import type { MergeRequest } from '../../api/index.ts';
import type { QueueEntry } from '../../state/index.ts';
import type { Car } from './train-cars.ts';
import { short, type TrainRun } from './train-run.ts';
import { deleteCarBranches } from './train-cleanup.ts';
import { growAfterLanding } from './train-window.ts';

/** Reads of a landed merge request until the server shows it merged, and the gap between them. */
const LANDED_READS = 5;
const LANDED_READ_GAP_MS = 400;

type Landing = TrainRun['unconfirmed'][number];

/**
 * The car's merge requests after its landing push: out of the queue at once (the target holds them).
 * The server marks them merged itself, and 8.x does it in the background (`PostReceive`, then
 * `UpdateMergeRequestsWorker`), so a merge request read at once may still be open: those are read
 * again at the end of the run (`confirmLanded`), after the next cars were built and pushed, so the
 * train's next round never waits for the server's job.
 */
export async function landed(
  run: TrainRun,
  front: Car,
  target: string,
  position = 1,
  through?: string,
): Promise<void> {
  // Its branch goes before its merge requests leave the queue: a crash in between leaves them
  // queued, and the next run finds the car landed and deletes what is left (an empty queue's
  // branches would be nobody's).
  await deleteCarBranches({
    updater: run.deps.updater,
    targetUrl: run.targetUrl,
    log: run.deps.log,
    stale: new Map([[front.car.branch, front.car.sha]]),
    holding: new Set(),
  });
  const reads = await Promise.all(front.entries.map((entry) => run.readMr(entry)));
  for (const [i, entry] of front.entries.entries()) {
    await run.deps.store.dequeue(entry.itemKey);
    const mr = reads[i];
    const landing = { entry, car: front.car, position, target, ...(through ? { through } : {}) };
    if (mr?.state === 'merged') await told(run, landing, mr);
    else run.unconfirmed.push(landing);
  }
  run.stale.set(front.car.branch, front.car.sha);
}

/** A landed merge request told (explain, metrics, the run's steps), with what the server showed of it. */
async function told(run: TrainRun, landing: Landing, mr: MergeRequest | undefined): Promise<void> {
  const { deps } = run;
  const { entry, car: landedCar, position, target, through } = landing;
  const car = { ...landedCar, position };
  const why = through ? `; ${through}` : '';
  await deps.events?.landed(
    entry,
    { mode: 'train', car, commit: landedCar.sha!, ...(through ? { through } : {}) },
    mr,
  );
  if (mr?.state === 'merged') {
    run.say(
      entry,
      'merged',
      `landed: ${entry.targetBranch} fast-forwarded to ${short(landedCar.sha)} (car ${landedCar.position}), the server marked it merged${why}`,
    );
    return;
  }
  deps.log.warn(
    { sweep: 'merge_queue', itemKey: entry.itemKey, sha: landedCar.sha, state: mr?.state },
    'merge train: the target holds the car, but the server had not marked the merge request merged',
  );
  run.say(
    entry,
    'merged',
    `landed at ${short(target)}; the server had not marked it merged ${Math.round(((LANDED_READS - 1) * LANDED_READ_GAP_MS) / 100) / 10} s after the push (it was ${mr?.state ?? 'unread'}): 8.x does it in the background, a server that never does leaves it open${why}`,
  );
}

/**
 * The landed merge requests not shown merged at once, read again (LANDED_READS in all,
 * LANDED_READ_GAP_MS apart) at the end of the run, then told; one still open is said in the log.
 */
export async function confirmLanded(run: TrainRun): Promise<void> {
  const waiting = run.unconfirmed.splice(0);
  const reads = new Map<string, MergeRequest | undefined>();
  for (let round = 1; round < LANDED_READS; round++) {
    const open = waiting.filter(({ entry }) => reads.get(entry.itemKey)?.state !== 'merged');
    if (open.length === 0) break;
    // The run's pushes since the landing took a while already: the first read again waits for nothing.
    if (round > 1) await new Promise((resolve) => setTimeout(resolve, LANDED_READ_GAP_MS));
    for (const { entry } of open) reads.set(entry.itemKey, await run.readMr(entry));
  }
  for (const landing of waiting) await told(run, landing, reads.get(landing.entry.itemKey));
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
 * `through`: the words for a car that failed and lands through the last car, which contains it and
 * passed (train-flaky.ts), by its index in `going`.
 */
export async function landCars(
  run: TrainRun,
  going: readonly Car[],
  through?: (index: number) => string | undefined,
): Promise<'landed' | 'on' | 'stop'> {
  const { deps, head } = run;
  const last = going.at(-1)!.car;
  // What a build took, as seen here (from the push to green): the status page's estimates, written
  // once the landing push is made (nothing of it is needed before: the push waits for nothing else).
  const ciMs = Math.max(0, deps.now() - last.pushedAt!);
  const at = deps.now();
  // Recorded before the push (a crash after it finds the landing), each entry its own write, together.
  await Promise.all(
    going.flatMap((one) =>
      one.entries.map((entry) =>
        run.patch(entry.itemKey, (e) => ({ ...e, car: { ...one.car, landing: at } })),
      ),
    ),
  );
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
      await landed(run, one, run.target, i + 1, through?.(i));
    }
    run.cars = run.cars.slice(going.length);
    for (const entry of run.queueNow()) await run.patch(entry.itemKey, (e) => ({ ...e, trainCiMs: ciMs }));
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
