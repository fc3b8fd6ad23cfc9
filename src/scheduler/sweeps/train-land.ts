/**
 * Landing a merge train's cars (docs/merge-queue.md#merge-trains): the target pushed (a fast-forward,
 * never forced) to the last green car's commit, the landed merge requests out of the queue, and a car
 * whose landing a crash interrupted recognised as landed, never landed twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { MergeRequest } from '../../api/index.ts';
import type { QueueEntry } from '../../state/index.ts';
import type { Car } from './train-cars.ts';
import { short, withoutCar, type TrainRun } from './train-run.ts';
import { deleteCarBranches } from './train-cleanup.ts';
import { growAfterLanding, windowTo } from './train-window.ts';
import type { Unconfirmed } from './train-deps.ts';

/** Reads of a landed merge request until the server shows it merged, and the gap between them. */
const LANDED_READS = 5;
const LANDED_READ_GAP_MS = 400;

/**
 * The cars' merge requests after their landing push: out of the queue at once (the target holds
 * them). Their branches go first, in one push, before any of their merge requests leaves the queue
 * (`gone`: the landing push deleted them already): a crash in between leaves them queued, and the
 * next run finds the cars landed and deletes what is left (an empty queue's branches would be
 * nobody's). The server marks them merged itself, and 8.x does it in the background (`PostReceive`,
 * then `UpdateMergeRequestsWorker`), so a merge request read at once may still be open: those are
 * read again at the end of the run (`confirmLanded`), after the next cars were built and pushed, so
 * the train's next round never waits for the server's job.
 */
async function landedCars(
  run: TrainRun,
  going: readonly Car[],
  target: string,
  options: { through?: (index: number) => string | undefined; gone?: boolean } = {},
): Promise<void> {
  if (!options.gone)
    await deleteCarBranches({
      updater: run.deps.updater,
      targetUrl: run.targetUrl,
      log: run.deps.log,
      stale: new Map(going.map((one) => [one.car.branch, one.car.sha])),
      holding: new Set(),
    });
  const members = going.flatMap((one, i) => one.entries.map((entry) => ({ one, i, entry })));
  const reads = await Promise.all(members.map(({ entry }) => run.readMr(entry)));
  // What the run said of them before they landed (waiting: a car that joined the landing late,
  // train-judge.ts `landLate`) is not so any more.
  const landed = new Set(members.map(({ entry }) => entry.itemKey));
  for (let k = run.steps.length - 1; k >= 0; k--)
    if (run.steps[k]!.outcome === 'waiting' && landed.has(run.steps[k]!.entry.itemKey))
      run.steps.splice(k, 1);
  for (const [k, { one, i, entry }] of members.entries()) {
    await run.deps.store.dequeue(entry.itemKey);
    const mr = reads[k];
    const through = options.through?.(i);
    const landing: Unconfirmed = {
      entry,
      car: one.car,
      position: i + 1,
      target,
      ...(through ? { through } : {}),
      reads: 1,
    };
    if (mr?.state === 'merged') await told(run, landing, mr);
    else run.unconfirmed.push(landing);
  }
  // A landing run lists the train's folder at its end (train-cleanup.ts), which deletes the branches
  // of cars whose members left the queue elsewhere (a removed label).
  run.list = true;
}

/** A landed merge request told (explain, metrics, the run's steps), with what the server showed of it. */
async function told(run: TrainRun, landing: Unconfirmed, mr: MergeRequest | undefined): Promise<void> {
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
 * The landed merge requests not shown merged at once, read again (LANDED_READS reads in all, counted
 * across runs, LANDED_READ_GAP_MS apart) at the end of the run, then told; one still open is said in
 * the log. `news` (train-tail.ts): a wake came during the run, whose next run follows at once; what is
 * still open when it comes is returned rather than waited for (that run reads it again). Each run
 * reads what it confirms at least once, so a merge request is told after LANDED_READS runs at most.
 */
export async function confirmLanded(run: TrainRun, news?: AbortSignal): Promise<Unconfirmed[]> {
  const waiting = run.unconfirmed.splice(0);
  const last = new Map<string, MergeRequest | undefined>();
  const open = (landing: Unconfirmed) =>
    landing.reads < LANDED_READS && last.get(landing.entry.itemKey)?.state !== 'merged';
  let left: Unconfirmed[] = [];
  for (let round = 0; ; round++) {
    const reading = waiting.filter(open);
    if (reading.length === 0) break;
    // The run's pushes since the landing took a while already: the first read again waits for nothing.
    if (round > 0 && !(await pause(LANDED_READ_GAP_MS, news))) {
      left = reading;
      break;
    }
    const again = await Promise.all(reading.map(({ entry }) => run.readMr(entry)));
    for (const [i, landing] of reading.entries()) {
      last.set(landing.entry.itemKey, again[i]);
      landing.reads++;
    }
  }
  for (const landing of waiting)
    if (!left.includes(landing)) await told(run, landing, last.get(landing.entry.itemKey));
  return left;
}

/** Waits `ms`; false (at once) when `news` comes first. */
function pause(ms: number, news?: AbortSignal): Promise<boolean> {
  return sleep(ms, true, news ? { signal: news } : {}).catch(() => false);
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
    await landedCars(run, [{ car, entries: members }], run.target);
  }
}

/**
 * Lands `going` (consecutive green cars from the front) in one push of the target to the last one's
 * commit: 'landed' (they are out, `run.cars` lost them), 'on' (not landed; the run goes on: cars to
 * build again), 'stop' (the server refused the bot: the run ends here, said as the queue's trouble).
 * `through`: the words for a car that failed and lands through the last car, which contains it and
 * passed (train-flaky.ts), by its index in `going`.
 *
 * `together`: the landing is recorded now and pushed with the run's next cars, in one push at its end
 * (`pushLandingWithCars`): the round's next cars start building the moment the target lands, with no
 * round trip of their own between (issue 38, "no lag between rounds"). The run goes on as if landed;
 * when that push cannot be made, the landing is pushed alone and, if it fails, the cars built on it
 * are given up (`landPending`).
 */
export async function landCars(
  run: TrainRun,
  going: readonly Car[],
  through?: (index: number) => string | undefined,
  together = false,
): Promise<'landed' | 'on' | 'stop'> {
  const { deps } = run;
  // A landing recorded to go with the cars lands first, alone (a failed car landed through a car
  // behind it, train-flaky.ts, flushes it before it counts its cars): not landed, the caller's cars
  // are not the run's any more, and the run goes on from what it is now.
  if (run.landing && !together) {
    const first = await landPending(run);
    if (first !== 'landed') return first === 'stop' ? 'stop' : 'on';
  }
  const last = going.at(-1)!.car;
  // What a build took, as seen here (from the push to green): the status page's estimates, written
  // once the landing push is made (nothing of it is needed before: the push waits for nothing else).
  const ciMs = Math.max(0, deps.now() - last.pushedAt!);
  // A landing that joins one recorded in this run (news came: train-judge.ts `landLate`) is the same
  // landing: its cars hold its time, and the target goes to the last of them in the same push.
  const joining = together ? run.landing : undefined;
  const at = joining?.at ?? deps.now();
  // Recorded before the push (a crash after it finds the landing), each entry its own write, together.
  await Promise.all(
    going.flatMap((one) =>
      one.entries.map((entry) =>
        run.patch(entry.itemKey, (e) => ({ ...e, car: { ...one.car, landing: at } })),
      ),
    ),
  );
  if (joining) {
    joining.going.push(...going);
    joining.ciMs = ciMs;
  } else if (together) {
    run.landing = { going: [...going], base: run.target, at, ciMs, depth: run.depth, exits: [], held: [] };
  }
  if (together) {
    run.target = last.sha!;
    run.cars = run.cars.slice(going.length);
    await growAfterLanding(run, going.length, last.sha);
    return 'landed';
  }
  return pushLanding(run, going, ciMs, through);
}

/** The landing push of `going` (recorded already), alone, and what follows from its outcome. */
async function pushLanding(
  run: TrainRun,
  going: readonly Car[],
  ciMs: number,
  through?: (index: number) => string | undefined,
  grow = true,
): Promise<'landed' | 'on' | 'stop'> {
  const { deps, head } = run;
  const last = going.at(-1)!.car;
  const pushed = await deps.updater.train.land({
    targetUrl: run.targetUrl,
    targetBranch: head.targetBranch,
    base: run.target,
    sha: last.sha!,
    carBranch: last.branch,
  });
  if (pushed.kind === 'pushed') {
    run.target = last.sha!;
    for (const _one of going) deps.events?.carBuilt('passed');
    await landedCars(run, going, run.target, { ...(through ? { through } : {}) });
    run.cars = run.cars.slice(going.length);
    await afterLanding(run, ciMs);
    if (grow) await growAfterLanding(run, going.length, last.sha);
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

/** What a build took, on every entry left in the queue (the status page's estimates). */
async function afterLanding(run: TrainRun, ciMs: number): Promise<void> {
  await Promise.all(
    run.queueNow().map((entry) => run.patch(entry.itemKey, (e) => ({ ...e, trainCiMs: ciMs }))),
  );
}

/**
 * The landing recorded by `landCars(..., together)` and the cars built after it, in one push: the
 * target fast-forwarded, the cars' branches set, the landed cars' branches deleted, all or nothing
 * (train-git.ts `landWithCars`). True when it went: the landed merge requests are out of the queue,
 * and the cars are to be marked pushed. False when it could not be made in one (a car's branch not
 * as the driver knows it, a refusal, a server without atomic pushes): nothing changed, and
 * `landPending` lands alone.
 */
export async function pushLandingWithCars(run: TrainRun): Promise<boolean> {
  const landing = run.landing;
  if (!landing) return false;
  const cars = carsToPush(run);
  if (!cars) return false;
  const last = landing.going.at(-1)!.car;
  const went = await run.deps.updater.train.landWithCars({
    targetUrl: run.targetUrl,
    targetBranch: run.head.targetBranch,
    sha: last.sha!,
    cars,
    landed: landing.going.map((one) => ({ branch: one.car.branch, sha: one.car.sha! })),
  });
  if (!went) return false;
  run.landing = undefined;
  for (const _one of landing.going) run.deps.events?.carBuilt('passed');
  await landedCars(run, landing.going, last.sha!, { gone: true });
  await afterLanding(run, landing.ciMs);
  for (const exit of landing.exits) await exit();
  return true;
}

/**
 * The run's cars to push, each with what the driver knows its branch holds (`was`): absent, or the
 * commit of a car given up there. Undefined when it does not know (a branch listed as given up whose
 * commit was never recorded).
 */
export function carsToPush(run: TrainRun): { branch: string; sha: string; was?: string }[] | undefined {
  const cars = [];
  for (const { car } of run.toPush) {
    if (run.stale.has(car.branch) && run.stale.get(car.branch) === undefined) return undefined;
    const was = run.stale.get(car.branch);
    cars.push({ branch: car.branch, sha: car.sha!, ...(was ? { was } : {}) });
  }
  return cars;
}

/**
 * A landing recorded to go with the cars (`landCars(..., together)`) that did not go with them: pushed
 * alone now. 'landed': the cars built on it stay good; otherwise the run's view is put back (the
 * target, the cars), the cars built in this run on top of it are given up unpushed, and the outcome
 * is the one a landing alone has ('on': built again next run; 'stop': refused).
 */
export async function landPending(run: TrainRun): Promise<'landed' | 'on' | 'stop' | 'none'> {
  const landing = run.landing;
  if (!landing) return 'none';
  run.landing = undefined;
  const landedAt = run.target;
  const built = new Set(run.toPush.map((one) => one.car.id));
  run.target = landing.base;
  const behind = run.cars;
  run.cars = [...landing.going, ...behind.filter((one) => !built.has(one.car.id))];
  const outcome = await pushLanding(run, landing.going, landing.ciMs, undefined, false);
  if (outcome === 'landed' && run.target === landedAt) {
    run.cars = behind;
    for (const exit of landing.exits) await exit();
    return 'landed';
  }
  // Not landed: the window grew for nothing (it is put back), and the cars built on it this run
  // were never pushed; they ride nothing again.
  await windowTo(run, landing.depth);
  for (const one of behind)
    if (built.has(one.car.id)) for (const entry of one.entries) await run.patch(entry.itemKey, withoutCar);
  run.toPush.length = 0;
  return outcome;
}

/** The members of `cars` whose car another evaluation changed (the rule no longer holds for them). */
export function leftTheirCar(run: TrainRun, car: Car): QueueEntry[] {
  const held = run.carIds();
  return car.entries.filter((entry) => held.get(entry.itemKey) !== car.car.id);
}
