/**
 * Building a merge train's cars (docs/merge-queue.md#merge-trains): up to `depth` cars, each the merge
 * of its members' heads (fetched from the target's `refs/merge-requests/<iid>/head`) into the car
 * ahead, recorded before anything is pushed (dates and identity fixed, so a rebuild makes the same
 * sha), then pushed together to `<prefix><target>/<queue>/<iid>` at the end of the run.
 */
import type { MergeRequest } from '../../api/index.ts';
import type { QueueEntry, TrainCar } from '../../state/index.ts';
import { blockedBy, pushFailure, trainBranch, type Car } from './train-cars.ts';
import { forkSettling } from './train-riders.ts';
import { aboard, lastBranch, sameCar, short, withoutCar, type TrainRun } from './train-run.ts';
import { carsToPush, landPending, pushLandingWithCars } from './train-land.ts';
import type { PushOutcome } from '../../git/index.ts';

/**
 * Builds a recorded car (pushed with the others at the end of the run): the car with its sha, false
 * when a member left (the car is formed again), undefined when the run must stop (git refused, the
 * base is gone).
 */
async function build(
  run: TrainRun,
  car: TrainCar,
  members: QueueEntry[],
  baseBranch: string,
  mrs?: MergeRequest[],
): Promise<TrainCar | false | undefined> {
  const { deps } = run;
  const outcome = await deps.updater.train.buildCar({
    targetUrl: run.targetUrl,
    base: car.base,
    baseBranch,
    members: members.map((e, i) => ({
      iid: e.iid,
      head: car.heads[i]!,
      message: `Merge branch of !${e.iid} into ${e.targetBranch} (merge train ${e.queue}, car ${car.position})\n`,
    })),
    date: car.date,
    identity: car.identity,
  });
  if (outcome.kind === 'unrelated') {
    const entry = members[outcome.index]!;
    for (const m of members) await run.patch(m.itemKey, withoutCar);
    const mr = mrs?.[outcome.index] ?? (await run.readMr(entry));
    const why = `${mr?.source_branch ?? `!${entry.iid}`} has no history in common with ${entry.targetBranch} (git refuses to merge unrelated histories)`;
    if (mr)
      run.say(
        entry,
        'removed',
        (await deps.remove(entry, mr, 'conflict', why, car.heads[outcome.index]!)).detail,
      );
    return false;
  }
  if (outcome.kind === 'conflict' || outcome.kind === 'moved') {
    const entry = members[outcome.index]!;
    for (const m of members) await run.patch(m.itemKey, withoutCar);
    if (outcome.kind === 'moved')
      run.say(
        entry,
        'dropped',
        (
          await deps.pushedOut(
            entry,
            `pushed by someone else: the train read ${short(car.heads[outcome.index])}${outcome.sha ? `, its ref is at ${short(outcome.sha)}` : ''}`,
          )
        ).detail,
      );
    else {
      const mr = mrs?.[outcome.index] ?? (await run.readMr(entry));
      const why = `${mr?.source_branch ?? `!${entry.iid}`} conflicts with ${entry.targetBranch} at ${short(car.base)}${car.position > 1 ? ' (with the cars ahead of it in the merge train)' : ''} in ${outcome.files.map((f) => `\`${f}\``).join(', ')}`;
      const at = car.heads[outcome.index]!;
      if (mr) run.say(entry, 'removed', (await deps.remove(entry, mr, 'conflict', why, at)).detail);
    }
    return false;
  }
  if (outcome.kind !== 'built') {
    const why =
      outcome.kind === 'refused'
        ? `git refused the bot: ${outcome.message}`
        : `the commit below car ${car.position} (${short(car.base)}) could not be fetched`;
    for (const m of members) await run.patch(m.itemKey, withoutCar);
    for (const m of members) run.say(m, 'error', why);
    return undefined;
  }
  if (car.sha !== undefined && car.sha !== outcome.sha)
    deps.log.error(
      { sweep: 'merge_queue', car: car.id, recorded: car.sha, built: outcome.sha },
      'merge train: a car rebuilt from its record made another commit',
    );
  const withSha: TrainCar = { ...car, sha: outcome.sha };
  for (const m of members) await run.patch(m.itemKey, (e) => ({ ...e, car: withSha }));
  run.toPush.push({ car: withSha, entries: members });
  return withSha;
}

/**
 * A car built again from a new record (a failed car's retry: train-flaky.ts), pushed with the others
 * at the end of the run; false when it could not be (its members said why, and ride no car).
 */
export async function buildAgain(run: TrainRun, one: Car, car: TrainCar): Promise<boolean> {
  const i = run.cars.indexOf(one);
  const below = run.cars[i - 1]?.car.branch ?? lastBranch(run, true);
  const built = await build(run, car, one.entries, below);
  if (!built) {
    run.stale.set(one.car.branch, one.car.sha);
    run.cars = run.cars.slice(0, i);
    return false;
  }
  one.car = built;
  return true;
}

/**
 * The cars recorded but not pushed (a failed push, a crash between record and push) built again from
 * their records (the same commits). False when a branch blocks their names: nothing is pushed then.
 */
export async function rebuildUnpushed(run: TrainRun): Promise<boolean> {
  // Cars built in this run (a retry) are pushed with the others, and a push tells what blocks it.
  const built = new Set(run.toPush.map((one) => one.car.id));
  const unpushed = run.cars.filter((one) => one.car.pushedAt === undefined && !built.has(one.car.id));
  if (unpushed.length > 0) {
    const blocked = await run.deps.updater.train.findBlocker({
      targetUrl: run.targetUrl,
      branches: unpushed.map((one) => one.car.branch),
    });
    if (blocked) {
      for (const one of unpushed)
        for (const entry of one.entries) run.say(entry, 'error', blockedBy(blocked));
      return false;
    }
  }
  for (const [i, one] of run.cars.entries())
    if (one.car.pushedAt === undefined && !built.has(one.car.id)) {
      const baseBranch = run.cars[i - 1]?.car.branch ?? lastBranch(run, true);
      const again = await build(run, one.car, one.entries, baseBranch);
      if (!again) {
        await run.cut(run.cars.slice(i));
        run.cars = run.cars.slice(0, i);
        break;
      }
      one.car = again;
    }
  return true;
}

/**
 * The next car's members: the first merge requests riding nothing, up to the car's size. Bisection
 * (docs/merge-queue.md, Batches): the second half of a split car waits while its first half is in the
 * queue, and nothing rides on top of it once it rides (the failed car's tree again, most likely red).
 */
function nextMembers(run: TrainRun): QueueEntry[] {
  if (run.cars.at(-1)?.entries.some((e) => e.carAfter !== undefined)) return [];
  const queue = run.queueNow();
  const riding = aboard(run);
  const rest = queue.filter((e) => !riding.has(e.itemKey));
  if (rest.length === 0) return [];
  if (rest[0]!.carAfter?.some((key) => queue.some((e) => e.itemKey === key))) return [];
  const cap = Math.min(run.batch, rest[0]!.carCap ?? run.batch);
  return rest.slice(0, cap);
}

/**
 * The merge requests the next cars will carry (as far as the queue tells now), read at once, and
 * their heads fetched into the git cache in one fetch: each car is then built without a round trip
 * of its own (a round of a train builds up to `depth` cars; one fetch per car was most of the time
 * between a landing and the next cars' push). A read is used once, by the car built right after.
 */
async function prefetch(run: TrainRun): Promise<Map<string, Promise<MergeRequest | undefined>>> {
  const riding = aboard(run);
  const room = (run.depth - run.cars.length) * run.batch;
  const next =
    room > 0
      ? run
          .queueNow()
          .filter((e) => !riding.has(e.itemKey))
          .slice(0, room)
      : [];
  const reads = new Map(next.map((e) => [e.itemKey, run.readMr(e)] as const));
  // A read that failed fails where its car is built (awaited there), not here.
  for (const read of reads.values()) read.catch(() => undefined);
  const members = [];
  for (const entry of next) {
    const mr = await reads.get(entry.itemKey)!.catch(() => undefined);
    if (mr?.sha) members.push({ iid: entry.iid, head: mr.sha });
  }
  await run.deps.updater.train.fetchHeads({ targetUrl: run.targetUrl, members });
  return reads;
}

/** New cars behind the ones there, up to `depth`. */
export async function buildNewCars(run: TrainRun): Promise<void> {
  const { deps, head } = run;
  let below = run.cars.at(-1)?.car.sha ?? run.target;
  let belowBranch = lastBranch(run);
  const read = await prefetch(run);
  for (let guard = 0; run.cars.length < run.depth && guard < 4 * run.depth * run.batch + 8; guard++) {
    let members = nextMembers(run);
    if (members.length === 0) break;
    let mrs = await Promise.all(members.map((m) => read.get(m.itemKey) ?? run.readMr(m)));
    for (const m of members) read.delete(m.itemKey);
    let fine = true;
    for (const [i, entry] of members.entries()) if (!(await run.stillRides(entry, mrs[i]))) fine = false;
    if (!fine) continue;
    // A fork's approval still settling: the car stops before it, and so does the train this run.
    const settling = members.findIndex((entry, i) => forkSettling(entry, mrs[i], deps.now(), run.settleMs));
    if (settling === 0) {
      run.say(
        members[0]!,
        'waiting',
        `its approval by @${members[0]!.approval!.by} settles (${run.settleMs / 1000} s, api.push_note_lag_ms) before a fork's head rides: the server may not have noted a push right after the comment yet`,
      );
      break;
    }
    if (settling > 0) {
      members = members.slice(0, settling);
      mrs = mrs.slice(0, settling);
    }
    const iids = members.map((e) => e.iid);
    const made = {
      position: run.cars.length + 1,
      base: below,
      members: members.map((e) => e.itemKey),
      heads: mrs.map((mr) => mr!.sha!),
      branch: trainBranch(deps.updater.train.prefix, head.targetBranch, head.queue, iids[0]!),
    };
    // The same car as one given up before (train-run.ts `givenUp`): its date and identity again, so
    // the same commit, which the CI built already.
    const was = members[0]!.carsBefore?.find((one) => sameCar(one, made));
    const car: TrainCar = {
      id: `${iids[0]}-${short(below)}-${made.position}`,
      ...made,
      iids,
      date: was ? was.date : Math.floor(deps.now() / 1000),
      identity: was ? { ...was.identity } : { ...deps.updater.train.identity },
    };
    // Recorded before anything is pushed: a rebuild from this record makes the same commit.
    for (const entry of members) await run.patch(entry.itemKey, (e) => ({ ...e, car }));
    const built = await build(run, car, members, belowBranch, mrs as MergeRequest[]);
    if (built === undefined) break;
    if (!built) continue;
    run.cars.push({ car: built, entries: members });
    below = built.sha!;
    belowBranch = built.branch;
  }
}

/**
 * After a push of cars, the heads of the merge requests waiting behind them (as many as the next
 * round may carry) fetched into the git cache while the CI builds: when the cars ahead land, the next
 * cars are built from the cache at once (`prefetch` then finds them, or fetches only what moved).
 */
export async function fetchAhead(run: TrainRun): Promise<void> {
  if (run.toPush.length === 0) return;
  const riding = new Set(run.queueNow().flatMap((e) => (e.car ? [e.itemKey] : [])));
  const waiting = run
    .queueNow()
    .filter((e) => !riding.has(e.itemKey))
    .slice(0, run.depth * run.batch);
  await run.deps.updater.train
    .fetchHeads({ targetUrl: run.targetUrl, members: waiting.map((e) => ({ iid: e.iid })) })
    .catch(() => undefined);
}

/** The run's cars in one push: with the leases the driver knows when it knows them all (no read first). */
function pushCars(run: TrainRun): Promise<PushOutcome> {
  const known = carsToPush(run);
  return run.deps.updater.train.pushCars({
    targetUrl: run.targetUrl,
    cars: known ?? run.toPush.map(({ car }) => ({ branch: car.branch, sha: car.sha! })),
    ...(known ? { known: true } : {}),
  });
}

/**
 * Pushes the cars built in this run, in one push, with the landing recorded in the run when there is
 * one (train-land.ts `pushLandingWithCars`: the next cars start building the moment the target
 * lands); true when done. A landing that could not go with them is pushed alone first (`landPending`):
 * when it does not land, the cars built on it are given up and nothing more is pushed.
 */
export async function pushBuilt(run: TrainRun): Promise<boolean> {
  const { deps } = run;
  let together = false;
  if (run.landing) {
    together = await pushLandingWithCars(run);
    if (!together && (await landPending(run)) !== 'landed') return false;
  }
  if (run.toPush.length === 0) return true;
  const pushed = together ? { kind: 'pushed' as const } : await pushCars(run);
  if (pushed.kind !== 'pushed') {
    for (const { car, entries } of run.toPush)
      for (const m of entries) run.say(m, 'error', pushFailure(pushed, car.branch));
    return false;
  }
  const at = deps.now();
  for (const { car, entries } of run.toPush) {
    const done: TrainCar = { ...car, pushedAt: at };
    for (const m of entries) await run.patch(m.itemKey, (e) => ({ ...e, car: done }));
    run.stale.delete(car.branch);
    for (const m of entries)
      run.say(
        m,
        'updated',
        `car ${car.position}: pushed ${short(car.sha)} to ${car.branch} (${car.iids.map((n) => `!${n}`).join(', ')} on ${short(car.base)}); waiting for ${m.required.join(', ')}`,
      );
  }
  return true;
}
