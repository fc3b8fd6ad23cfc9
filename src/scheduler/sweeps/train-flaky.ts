/**
 * A merge train's front car that failed, with flaky CI in mind (docs/merge-queue.md#flaky-ci). Every
 * car behind the front contains it (each is built on the one ahead), so their builds test the front's
 * changes again:
 *   - one of them passed: the failure was not its members' (a flake, or a fault of the car's own
 *     build): the train lands through that car, every car up to it in one fast-forward push, once each
 *     member still rides and its rule still holds (the fresh evaluation, as for green cars);
 *   - none passed, the car right behind it is still tested (within its timeout): the front waits;
 *   - the car right behind failed too (or there is none): the front is judged as before, after `retries` builds again of a
 *     car of one that no car behind tested (its own failure is all there is to go on).
 * The trade-off: a car whose own build failed can be in the target's history (the commit of car 1
 * failed; car k's, above it, passed).
 */
import type { TrainCar } from '../../state/index.ts';
import { DEFAULT_RETRIES } from '../../rules/index.ts';
import type { Car } from './train-cars.ts';
import { buildAgain } from './train-build.ts';
import { carStatuses, checkCarsBehind, type CarStatuses } from './train-statuses.ts';
import { landCars, leftTheirCar } from './train-land.ts';
import { short, type TrainRun } from './train-run.ts';

/** The names that failed a car (or did not succeed within a member's timeout); undefined: not failed. */
export function failedNames(verdict: { kind: string } | CarStatuses): string[] | undefined {
  if (verdict.kind === 'red') return (verdict as Extract<CarStatuses, { kind: 'red' }>).red;
  const late =
    verdict.kind === 'pending' ? (verdict as Extract<CarStatuses, { kind: 'pending' }>).late : undefined;
  return late ? late.names.map(([name]) => name) : undefined;
}

/** The cars behind the front, read: each one's verdict, the last that passed, the first still tested. */
async function readBehind(run: TrainRun) {
  const { deps } = run;
  const verdicts: (CarStatuses | undefined)[] = [undefined];
  let passed: number | undefined;
  let testing: number | undefined;
  for (let i = 1; i < run.cars.length; i++) {
    const { car, entries } = run.cars[i]!;
    if (car.sha === undefined || car.pushedAt === undefined) {
      // Recorded, not pushed yet (pushed at the end of this run): it will be tested.
      verdicts.push(undefined);
      testing ??= i;
      continue;
    }
    const where = { sha: car.sha, branch: car.branch };
    const verdict = await carStatuses(
      deps.client,
      run.head.projectId,
      where,
      entries,
      deps.now() - car.pushedAt,
    );
    verdicts.push(verdict);
    if (verdict.kind === 'green') passed = i;
    else if (verdict.kind === 'pending' && !verdict.late) testing ??= i;
  }
  return { verdicts, passed, testing };
}

/** Car `k`'s commit green for the requirements of every merge request of the cars up to it. */
async function vouchesForAll(run: TrainRun, k: number): Promise<boolean> {
  const { car } = run.cars[k]!;
  const members = run.cars.slice(0, k + 1).flatMap((one) => one.entries);
  const verdict = await carStatuses(
    run.deps.client,
    run.head.projectId,
    { sha: car.sha!, branch: car.branch },
    members,
    run.deps.now() - car.pushedAt!,
  );
  return verdict.kind === 'green';
}

/** Why car `i + 1` lands though it did not pass itself (undefined: it passed). */
function throughWords(
  verdict: CarStatuses | undefined,
  i: number,
  k: number,
  front: string[],
): string | undefined {
  if (i === 0)
    return `landed through car ${k}: car 1's own build failed (${front.join(', ')}) but car ${k}, which contains it, passed`;
  if (verdict?.kind === 'green') return undefined;
  const names = failedNames(verdict ?? { kind: 'unbuilt' });
  return names
    ? `landed through car ${k}: car ${i + 1}'s own build failed (${names.join(', ')}) but car ${k}, which contains it, passed`
    : `landed through car ${k}: car ${i + 1}'s own build had not finished, and car ${k}, which contains it, passed`;
}

/** Gives up the cars from `from` on; the ones ahead stay (the front is decided again at the next run). */
async function cutBehind(run: TrainRun, from: number): Promise<'on'> {
  await run.cut(run.cars.slice(from));
  run.cars = run.cars.slice(0, from);
  return 'on';
}

/**
 * The front car failed with `names`: decided by the cars behind it. 'judge': none passed and none is
 * still tested, the front is judged as before; otherwise the run goes on ('on': it waits, or landed
 * through a car behind) or stops (git refused the landing). `held` is the fresh evaluation of the
 * first `count` cars' members (train-judge.ts): how many of them may land.
 */
export async function throughBehind(
  run: TrainRun,
  names: string[],
  held: (run: TrainRun, count: number) => Promise<number>,
): Promise<'judge' | 'on' | 'stop'> {
  const front = run.cars[0]!;
  const behind = await readBehind(run);
  const { verdicts, testing } = behind;
  // The car it lands through vouches for every merge request up to it: each one's own required
  // statuses must have passed on that car's commit, not only those of the car's own members (a
  // `review/approved` the failed car's rule requires is not vouched for by a docs car behind it).
  const passed =
    behind.passed === undefined || (await vouchesForAll(run, behind.passed)) ? behind.passed : undefined;
  if (passed === undefined) {
    // The car right behind failed too: two failures in a row are the front's changes (both flaking
    // is one chance in a hundred at a 10 % flake rate), so the front is judged now, without waiting
    // for cars further behind, pushed later, whose wait a real failure would only lengthen.
    if (testing === undefined || testing > 1) return 'judge';
    for (const entry of front.entries)
      run.say(
        entry,
        'waiting',
        `car 1 failed (${names.join(', ')} on ${short(front.car.sha)}); waiting for car ${testing + 1}, which contains it: if it passes, car 1 lands through it`,
      );
    // The queue page and explain: the front's failure and what the cars behind said so far.
    await checkCarsBehind(run.deps, run.head.projectId, run.cars);
    return 'on';
  }
  // Every member of the cars behind, up to the one that passed, still rides (the front's were read).
  for (let i = 1; i <= passed; i++) {
    const { car, entries } = run.cars[i]!;
    let fine = true;
    for (const [j, entry] of entries.entries())
      if (!(await run.stillRides(entry, await run.readMr(entry), car.heads[j]))) fine = false;
    if (!fine) return cutBehind(run, i);
  }
  const count = passed + 1;
  const landing = await held(run, count);
  if (landing < count) {
    for (const entry of leftTheirCar(run, run.cars[landing]!))
      run.say(entry, 'dropped', 'its rule no longer holds at the landing (evaluated again)');
    return cutBehind(run, landing);
  }
  const outcome = await landCars(run, run.cars.slice(0, count), (i) =>
    throughWords(verdicts[i], i, count, names),
  );
  return outcome === 'stop' ? 'stop' : 'on';
}

/**
 * A failed front car built again (a new commit: its date moves on, so the CI builds it again), when
 * it may be: a car of one (a car of several is split, and its halves test it again), not out of a
 * split (the car it came from failed too), with no car behind it (those behind, each of which
 * contains it, failed too: that is not a flake), within its member's `retries`. The retry is recorded
 * on the car (`retried`) with its new date before anything is pushed: a crash rebuilds the same
 * commit and does not reset the count. True when it was built again.
 */
export async function retried(run: TrainRun, names: string[]): Promise<boolean> {
  const front: Car = run.cars[0]!;
  const entry = front.entries[0]!;
  if (front.entries.length !== 1 || entry.carCap !== undefined || run.cars.length > 1) return false;
  const limit = entry.retries ?? DEFAULT_RETRIES;
  const done = front.car.retried?.count ?? 0;
  if (done >= limit) return false;
  const { sha, pushedAt: _pushed, checked: _checked, landing: _landing, ...kept } = front.car;
  const car: TrainCar = {
    ...kept,
    date: Math.max(Math.floor(run.deps.now() / 1000), front.car.date + 1),
    retried: { count: done + 1, failed: [...names] },
  };
  // The branch holds the failed commit until the retry is pushed over it: known, so a push of the
  // retry with a landing (train-land.ts `pushLandingWithCars`) leases on it.
  if (sha) run.stale.set(front.car.branch, sha);
  if (!(await buildAgain(run, front, car))) return true;
  run.say(
    entry,
    'waiting',
    `car 1 failed (${names.join(', ')} on ${short(sha)}) and no car behind it tested it: built again as ${short(front.car.sha)} (retry ${done + 1} of ${limit}, the queue's retries)`,
  );
  return true;
}
