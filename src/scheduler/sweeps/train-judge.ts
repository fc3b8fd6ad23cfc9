/**
 * Judging a merge train's front (docs/merge-queue.md#merge-trains): the consecutive green cars at the
 * front land (train-land.ts), each merge request evaluated again first (the serial queue's fresh
 * check); the first car that is not green is judged: failed or past a member's timeout, it waits for
 * the cars behind it, which contain it, and lands through one that passes (train-flaky.ts); when none
 * does, a car of one is built again within `retries` or leaves with one comment, and a car of more is
 * split in halves, the second waiting for the first; a member that may not ride any more is out at
 * once. Every car behind a car given up is built again.
 */
import type { QueueEntry } from '../../state/index.ts';
import type { Trigger } from '../../rules/index.ts';
import type { Car } from './train-cars.ts';
import { carStatuses, checkCarsBehind, type CarStatuses } from './train-statuses.ts';
import { landCars, leftTheirCar } from './train-land.ts';
import { short, withoutCar, type TrainRun } from './train-run.ts';
import { failedNames, retried, throughBehind } from './train-flaky.ts';
import { shrinkAfterFailure } from './train-window.ts';
import { riderVerdict } from './train-riders.ts';

type Verdict = CarStatuses | { kind: 'unbuilt' } | { kind: 'left' };

/** The car's members still ride, and its statuses for each member's own requirements (train-statuses.ts). */
async function judge(run: TrainRun, one: Car, statuses?: Promise<CarStatuses>): Promise<Verdict> {
  if (one.car.pushedAt === undefined) return { kind: 'unbuilt' };
  let fine = true;
  for (const [i, entry] of one.entries.entries()) {
    // Read at the start of this run (train-watch.ts), or now.
    const mr = run.riders.has(entry.itemKey) ? run.riders.get(entry.itemKey) : await run.readMr(entry);
    if (!(await run.stillRides(entry, mr, one.car.heads[i]))) fine = false;
  }
  if (!fine) return { kind: 'left' };
  return statuses ?? statusesOf(run, one);
}

/** Runs whose front car was judged still waiting for its statuses (`landLate`). */
const waitingFront = new WeakSet<TrainRun>();

/** Statuses read before the front is judged (`readStatusesEarly`), by run and car. */
const early = new WeakMap<TrainRun, Map<string, Promise<CarStatuses>>>();

/**
 * Every pushed car's statuses, read now, while the run reads the cars' merge requests
 * (train-watch.ts): the front's judging then waits for neither in turn. A read not used (its car given
 * up meanwhile) is dropped.
 */
export function readStatusesEarly(run: TrainRun): void {
  for (const one of run.cars) if (one.car.pushedAt !== undefined) statusRead(run, one);
}

/** The car's statuses as read early in the run, or read now (a failure is awaited where it is used). */
function statusRead(run: TrainRun, one: Car): Promise<CarStatuses> {
  let reads = early.get(run);
  if (!reads) early.set(run, (reads = new Map()));
  let read = reads.get(one.car.id);
  if (!read) {
    read = statusesOf(run, one);
    read.catch(() => undefined);
    reads.set(one.car.id, read);
  }
  return read;
}

function statusesOf(run: TrainRun, one: Car): Promise<CarStatuses> {
  return carStatuses(
    run.deps.client,
    run.head.projectId,
    { sha: one.car.sha!, branch: one.car.branch },
    one.entries,
    run.deps.now() - one.car.pushedAt!,
  );
}

/** A front car that failed (statuses or timeout): one alone leaves with a comment, more are split. */
async function failed(
  run: TrainRun,
  front: Car,
  code: 'status_failed' | 'status_timeout',
  why: (entry: QueueEntry) => string,
): Promise<void> {
  const { deps } = run;
  run.stale.set(front.car.branch, front.car.sha);
  deps.events?.carBuilt(code === 'status_failed' ? 'failed' : 'timed_out');
  // The second half of a split that waited for this car: it is not the failed car's tree any more
  // (this one failed), so it rides as any car, on what is below it.
  const members = new Set(front.car.members);
  for (const entry of run.queueNow())
    if (entry.carAfter?.some((key) => members.has(key)))
      await run.patch(entry.itemKey, ({ carAfter: _after, ...rest }) => rest);
  await shrinkAfterFailure(run, front.car.sha);
  if (front.entries.length === 1) {
    const entry = front.entries[0]!;
    const at = front.car.heads[0]!;
    const leave = async () => {
      const mr = await run.readMr(entry);
      if (mr) run.say(entry, 'removed', (await deps.remove(entry, mr, code, why(entry), at)).detail);
      else
        run.say(entry, 'dropped', (await deps.drop(entry, 'gone', 'the merge request is gone (404)')).detail);
    };
    // Behind a landing that goes with the next cars (train-land.ts), it leaves once that landed: its
    // car held the landing's cars, and a landing that does not go (the target moved) must not have
    // cost it its place. Meanwhile it rides nothing built in this run.
    if (run.landing) {
      run.landing.exits.push(leave);
      run.landing.held.push(entry.itemKey);
    } else await leave();
    return;
  }
  const half = Math.ceil(front.entries.length / 2);
  // The second half waits for the first (docs/merge-queue.md, Batches): built on top of a first half
  // that passes, it is the failed car's tree again, tested once; on a first half that failed, wasted.
  const first = front.car.members.slice(0, half);
  for (const [i, entry] of front.entries.entries()) {
    const cap = i < half ? half : front.entries.length - half;
    await run.patch(entry.itemKey, ({ carAfter: _after, ...e }) => ({
      ...withoutCar(e),
      carCap: cap,
      ...(i < half ? {} : { carAfter: first }),
    }));
    run.say(
      entry,
      'waiting',
      `the car of ${front.entries.length} failed (${why(entry)}): split in cars of ${half} and ${front.entries.length - half}`,
    );
  }
}

/**
 * Green cars from the front, each member evaluated again (the rule must still hold: the serial
 * queue's fresh check before a merge): how many land. A car with a member the rule no longer holds
 * for ends the landing before it.
 */
async function stillHeld(run: TrainRun, green: number): Promise<number> {
  const { deps } = run;
  if (!deps.processItem || green === 0) return green;
  const trigger: Trigger = { kind: 'merge_request', action: 'update', byBot: false };
  // Under the member's comment that queued it, when one did: the note read again, its author's
  // access read again, no push after it (docs/rules.md#members-commands).
  // Each its own item (its own lock): evaluated side by side, so the landing waits for the slowest.
  const evaluate = deps.processItem;
  await Promise.all(
    run.cars
      .slice(0, green)
      .flatMap((one) => one.entries)
      .map((entry) =>
        evaluate({ type: 'merge_request', projectId: entry.projectId, id: entry.mrId }, [
          entry.trigger ?? trigger,
        ]),
      ),
  );
  const riding = run.carIds();
  const landing = run.cars.findIndex(
    (one, i) => i < green && one.entries.some((e) => riding.get(e.itemKey) !== one.car.id),
  );
  return landing === -1 ? green : landing;
}

/** Gives up every car from `from` on (the front car's verdict made them stale). */
async function cutFrom(run: TrainRun, from: number): Promise<'on'> {
  await run.cut(run.cars.slice(from));
  run.cars = [];
  return 'on';
}

/**
 * Step 2 of a run, once: every consecutive green car at the front lands, all in one fast-forward push
 * to the last one's commit (each car's commit holds every car ahead of it); then the first car that is
 * not green is judged as the front. 'stop' when the run must end here (git refused the landing).
 */
export async function landFront(run: TrainRun): Promise<'on' | 'stop'> {
  if (run.cars.length === 0) return 'on';
  // Every pushed car's statuses read at once: a round whose cars all passed waits for one read, not
  // for one per car (a read not used, past the first car that is not green, is dropped).
  const statuses = run.cars.map((one) => (one.car.pushedAt === undefined ? undefined : statusRead(run, one)));
  let green = 0;
  let stop: Verdict = { kind: 'green', statuses: {} };
  for (; green < run.cars.length; green++) {
    stop = await judge(run, run.cars[green]!, statuses[green]);
    if (stop.kind !== 'green') break;
  }
  const landing = await stillHeld(run, green);
  if (landing > 0) {
    // The landing goes with the next cars in one push at the end of the run (the car behind is judged
    // meanwhile: its verdict is its own commit's, landed or not). Not when a car's rule no longer
    // holds: the landing stops before it, and the cars from it are given up.
    const outcome = await landCars(run, run.cars.slice(0, landing), undefined, landing === green);
    if (outcome !== 'landed') return outcome;
  }
  if (landing < green) {
    for (const entry of leftTheirCar(run, run.cars[0]!))
      run.say(entry, 'dropped', 'its rule no longer holds at the landing (evaluated again)');
    return cutFrom(run, 0);
  }
  if (run.cars.length === 0 || stop.kind === 'unbuilt') return 'on';
  // The first car that is not green is the front now.
  const front = run.cars[0]!;
  const onTop = (entry: QueueEntry) =>
    `the train's car ${short(front.car.sha)} (${entry.targetBranch} at ${short(front.car.base)} with ${front.car.iids.map((n) => `!${n}`).join(', ')})`;
  if (stop.kind === 'left') return cutFrom(run, 0);
  const names = failedNames(stop);
  if (names) {
    // Flaky CI (train-flaky.ts): the cars behind, each of which contains the front, speak first.
    const behind = await throughBehind(run, names, stillHeld);
    if (behind !== 'judge') return behind;
    if (await retried(run, names)) return 'on';
  }
  if (stop.kind === 'red') {
    const { red } = stop;
    await failed(run, front, 'status_failed', (e) => `${red.join(', ')} failed on ${onTop(e)}`);
    return cutFrom(run, 1);
  }
  if (stop.kind === 'pending') {
    const { pending, statuses, late } = stop;
    if (late) {
      await failed(
        run,
        front,
        'status_timeout',
        (e) =>
          `${late.names.map(([n, b]) => `${n} (${b})`).join(', ')} did not succeed on ${onTop(e)} within ${Math.round(late.entry.statusTimeoutMs / 1000)} s${late.entry === e ? '' : ` (the status_timeout of !${late.entry.iid}, in the same car)`}`,
      );
      return cutFrom(run, 1);
    }
    waitingFront.add(run);
    for (const entry of front.entries)
      run.say(
        entry,
        'waiting',
        `car 1: waiting for ${pending.map(([n, b]) => `${n} ${b}`).join(', ')} on ${short(front.car.sha)}`,
        statuses,
      );
    await checkCarsBehind(run.deps, run.head.projectId, run.cars.slice(1));
  }
  return 'on';
}

/**
 * News came during the run (a wake: often the rest of a round's statuses, a few milliseconds after
 * the ones this run read): before the run pushes, the cars at the front that were still waiting are
 * judged again on fresh reads (their merge requests and statuses), and the consecutive green ones
 * whose members the rule still holds for join the landing (train-land.ts `landCars`, the same landing
 * and push). The cars built in this run are behind them already. So the second wave of a round lands
 * with the first, rather than after this run and the next (docs/merge-queue.md#a-runs-tail-and-news-during-a-run).
 * Anything else (a failure, a member that left) is left to the next run, which the news makes.
 */
export async function landLate(run: TrainRun): Promise<void> {
  if (!run.deps.news?.aborted || !waitingFront.delete(run)) return;
  const unpushed = run.cars.findIndex((one) => one.car.pushedAt === undefined);
  const pushed = unpushed === -1 ? run.cars : run.cars.slice(0, unpushed);
  if (pushed.length === 0) return;
  const statuses = pushed.map((one) => statusesOf(run, one));
  for (const read of statuses) read.catch(() => undefined);
  const fresh = await Promise.all(pushed.map((one) => Promise.all(one.entries.map((e) => run.readMr(e)))));
  let green = 0;
  for (const [i, one] of pushed.entries()) {
    const verdicts = await Promise.all(
      one.entries.map((entry, j) => riderVerdict(run.deps.client, entry, fresh[i]![j], one.car.heads[j])),
    );
    if (verdicts.some((v) => v.kind !== 'rides') || (await statuses[i]!).kind !== 'green') break;
    green++;
  }
  if (green === 0 || (await stillHeld(run, green)) < green) return;
  // What this run said of them (waiting) goes once they land (train-land.ts `landedCars`); a landing
  // that does not go leaves it said.
  await landCars(run, run.cars.slice(0, green), undefined, true);
}
