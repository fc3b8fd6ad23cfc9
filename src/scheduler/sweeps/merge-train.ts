/**
 * The merge train driver (docs/merge-queue.md#merge-trains): a queue whose head asks `depth > 1` or
 * `batch > 1`. The serial queue (merge-queue.ts) stays as it is for the others; it hands a train's
 * queue here, with its own ways of taking a merge request out (the same comments and memory).
 *
 * Each run, under one lock per queue (one driver per queue at a time, across replicas where the
 * item runs are fleet-wide):
 *   1. The cars as the store holds them, in queue order, valid while they chain: car 1 on the
 *      target's head, car k on car k-1's commit, each car's members in the queue in its order.
 *   2. The front car: landed already (the target is at its commit: a crash after the landing push)
 *      -> done; the target moved under it (someone else pushed) -> every car is rebuilt; a member
 *      closed, merged by someone, gone -> out at once, rebuilt; a member's source pushed -> out at
 *      once and evaluated again (it enters again at the end); its required statuses on the car's
 *      commit: failed or past the timeout -> a car of one leaves with one comment, a car of more is
 *      split in halves (bisection); all passed -> every member is evaluated again (the rule must still
 *      hold, as the serial queue's fresh check), `landing` is recorded, and the target is pushed
 *      (fast-forward, never forced) to the car's commit. The server marks the merge requests merged.
 *      Then the next car is the front, in the same run.
 *   3. Cars are built up to `depth`: each the merge of its members' heads (fetched from the target's
 *      `refs/merge-requests/<iid>/head`) into the car ahead, recorded (dates and identity fixed, so
 *      a rebuild makes the same sha) and pushed to `hookbot/train/<target>/<queue>/<iid>`.
 * Branches of cars that landed, left or were rebuilt differently are deleted (only train branches).
 */
import type { QueueEntry, TrainCar } from '../../state/index.ts';
import { ApiError, type MergeRequest } from '../../api/index.ts';
import type { StatusBucket, Trigger } from '../../rules/index.ts';
import type { TrainDeps, TrainOutcome, TrainStep } from './train-deps.ts';
import { carStatuses, checkCarsBehind, type CarStatuses } from './train-statuses.ts';
import { blockedBy, carsOf, pushFailure, trainBranch, type Car } from './train-cars.ts';
import { deleteCarBranches } from './train-cleanup.ts';
import { FORK_APPROVAL_SETTLE_MS, forkSettling, riderVerdict } from './train-riders.ts';
import { goneCode } from './queue-told.ts';

export { FORK_APPROVAL_SETTLE_MS } from './train-riders.ts';

const short = (sha: string | undefined | null): string => (sha ? sha.slice(0, 7) : 'none');

/** Reads of a landed merge request until the server shows it merged, and the gap between them. */
const LANDED_READS = 5;
const LANDED_READ_GAP_MS = 400;

/**
 * Drives one train's queue once (`entries` in queue order; `shape`, the queue's depth and batch:
 * the smallest its entries ask, state/queue-order.ts `queueShape`).
 */
export async function driveTrain(
  deps: TrainDeps,
  initial: QueueEntry[],
  shape: { depth: number; batch: number },
): Promise<TrainStep[]> {
  const { client, store, updater, log } = deps;
  const head = initial[0]!;
  const { depth, batch } = shape;
  const settleMs = deps.pushNoteLagMs ?? FORK_APPROVAL_SETTLE_MS;
  const steps: TrainStep[] = [];
  const say = (
    entry: QueueEntry,
    outcome: TrainOutcome,
    detail: string,
    statuses?: Record<string, StatusBucket>,
  ) => steps.push({ entry, outcome, detail, ...(statuses ? { statuses } : {}) });
  const targetUrl = await deps.cloneUrl(head.projectId);
  /** Branches of cars that were given up (deleted at the end unless a new car holds them). */
  const stale = new Map<string, string | undefined>();
  /** Cars built in this run, pushed together at its end. */
  const toPush: Car[] = [];

  /** The queue as the store holds it now, in the order of `initial` then new arrivals. */
  const queueNow = (): QueueEntry[] => {
    const live = new Map(
      store
        .queued()
        .filter(
          (e) =>
            !e.left &&
            e.project === head.project &&
            e.targetBranch === head.targetBranch &&
            e.queue === head.queue,
        )
        .map((e) => [e.itemKey, e]),
    );
    const order = initial.map((e) => e.itemKey).filter((k) => live.has(k));
    for (const k of live.keys()) if (!order.includes(k)) order.push(k);
    return order.map((k) => live.get(k)!);
  };

  /** Writes train fields onto the entry as the store holds it now (an evaluation may have updated it). */
  async function patch(itemKey: string, change: (e: QueueEntry) => QueueEntry): Promise<void> {
    const now = store.queued().find((e) => e.itemKey === itemKey && !e.left);
    if (now) await store.enqueue(change(now));
  }
  const withoutCar = ({ car: _car, ...rest }: QueueEntry): QueueEntry => rest;

  /** Gives cars up: their members ride again in cars built anew. */
  async function cut(cars: Car[]): Promise<void> {
    for (const { car, entries } of cars) {
      if (car.pushedAt !== undefined) deps.events?.carBuilt('replaced');
      stale.set(car.branch, car.sha);
      for (const entry of entries) await patch(entry.itemKey, withoutCar);
    }
  }

  async function readMr(entry: QueueEntry): Promise<MergeRequest | undefined> {
    try {
      return await client.mergeRequests.get(entry.projectId, entry.mrId);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** A member that may not ride any more: taken out (said in the steps); true when it is still fine. */
  async function stillRides(
    entry: QueueEntry,
    mr: MergeRequest | undefined,
    headWanted?: string,
  ): Promise<boolean> {
    const verdict = await riderVerdict(client, entry, mr, headWanted);
    if (verdict.kind === 'rides') return true;
    // The car it rode in goes with it: its branch is deleted with a lease on the car's own commit.
    if (entry.car && !stale.has(entry.car.branch)) stale.set(entry.car.branch, entry.car.sha);
    if (verdict.kind === 'unapproved') {
      say(entry, 'removed', (await deps.remove(entry, mr!, 'not_allowed', verdict.why, mr!.sha!)).detail);
      return false;
    }
    const out =
      verdict.kind === 'gone'
        ? await deps.drop(entry, goneCode(mr, entry.targetBranch), verdict.why)
        : await deps.pushedOut(entry, verdict.why);
    say(entry, 'dropped', out.detail);
    return false;
  }

  /**
   * The car's merge requests after its landing push: out of the queue (the target holds them). The
   * server marks them merged itself, and 8.x does it in the background (`PostReceive`, then
   * `UpdateMergeRequestsWorker`), so a merge request read at once may still be open: those are read
   * again a few times, LANDED_READS in all, LANDED_READ_GAP_MS apart, before the report says so.
   */
  async function landed(front: Car, target: string, position = 1): Promise<void> {
    const reads = new Map<string, MergeRequest | undefined>();
    for (let round = 0; round < LANDED_READS; round++) {
      const open = front.entries.filter((e) => reads.get(e.itemKey)?.state !== 'merged');
      if (open.length === 0) break;
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, LANDED_READ_GAP_MS));
      for (const entry of open) reads.set(entry.itemKey, await readMr(entry));
    }
    for (const entry of front.entries) {
      const mr = reads.get(entry.itemKey);
      await store.dequeue(entry.itemKey);
      const car = { ...front.car, position };
      await deps.events?.landed(entry, { mode: 'train', car, commit: front.car.sha! }, mr);
      if (mr?.state === 'merged')
        say(
          entry,
          'merged',
          `landed: ${entry.targetBranch} fast-forwarded to ${short(front.car.sha)} (car ${front.car.position}), the server marked it merged`,
        );
      else {
        log.warn(
          { sweep: 'merge_queue', itemKey: entry.itemKey, sha: front.car.sha, state: mr?.state },
          'merge train: the target holds the car, but the server had not marked the merge request merged',
        );
        say(
          entry,
          'merged',
          `landed at ${short(target)}; the server had not marked it merged ${Math.round(((LANDED_READS - 1) * LANDED_READ_GAP_MS) / 100) / 10} s after the push (it was ${mr?.state ?? 'unread'}): 8.x does it in the background, a server that never does leaves it open`,
        );
      }
    }
    stale.set(front.car.branch, front.car.sha);
  }

  /** A front car that failed (statuses or timeout): one alone leaves with a comment, more are split. */
  async function failed(
    front: Car,
    code: 'status_failed' | 'status_timeout',
    why: (entry: QueueEntry) => string,
  ): Promise<void> {
    stale.set(front.car.branch, front.car.sha);
    deps.events?.carBuilt(code === 'status_failed' ? 'failed' : 'timed_out');
    if (front.entries.length === 1) {
      const entry = front.entries[0]!;
      const mr = await readMr(entry);
      const at = front.car.heads[0]!;
      if (mr) say(entry, 'removed', (await deps.remove(entry, mr, code, why(entry), at)).detail);
      else say(entry, 'dropped', (await deps.drop(entry, 'gone', 'the merge request is gone (404)')).detail);
      return;
    }
    const half = Math.ceil(front.entries.length / 2);
    for (const [i, entry] of front.entries.entries()) {
      const cap = i < half ? half : front.entries.length - half;
      await patch(entry.itemKey, (e) => ({ ...withoutCar(e), carCap: cap }));
      say(
        entry,
        'waiting',
        `the car of ${front.entries.length} failed (${why(entry)}): split in cars of ${half} and ${front.entries.length - half}`,
      );
    }
  }

  let target = (await client.branches.get(head.projectId, head.targetBranch)).commit.id;
  // The front car landed already: the target is at its commit, or its landing was recorded and the
  // target is at the commit of a car behind it recorded in the same landing (one push lands several),
  // or the server marked its merge requests merged and someone pushed on top since. Never landed twice.
  for (;;) {
    const queue = queueNow();
    const car = queue[0]?.car;
    if (car?.sha === undefined) break;
    const members = queue.filter((e) => e.car?.id === car.id);
    const withOneBehind =
      car.landing !== undefined &&
      queue.some((e) => e.car !== undefined && e.car.landing === car.landing && e.car.sha === target);
    if (car.sha !== target && !withOneBehind) {
      if (car.landing === undefined) break;
      const reads = await Promise.all(members.map(readMr));
      if (!reads.every((mr) => mr?.state === 'merged')) break;
    }
    await landed({ car, entries: members }, target);
  }
  const chained = carsOf(queueNow(), target);
  let cars = chained.cars;
  await cut(chained.broken);

  // 2. The front cars: every consecutive green one at the front lands, all in one fast-forward push
  // to the last one's commit (each car's commit holds every car ahead of it); then the first car that
  // is not green is judged as the front.
  type Verdict = CarStatuses | { kind: 'unbuilt' } | { kind: 'left' };
  /** The car's members still ride, and its statuses for each member's own requirements (train-statuses.ts). */
  async function judge(one: Car): Promise<Verdict> {
    if (one.car.pushedAt === undefined) return { kind: 'unbuilt' };
    let fine = true;
    for (const [i, entry] of one.entries.entries())
      if (!(await stillRides(entry, await readMr(entry), one.car.heads[i]))) fine = false;
    if (!fine) return { kind: 'left' };
    return carStatuses(
      client,
      head.projectId,
      { sha: one.car.sha!, branch: one.car.branch },
      one.entries,
      deps.now() - one.car.pushedAt,
    );
  }
  /** The car each merge request still in a queue rides in now (after an evaluation may have moved it). */
  const carIds = () => new Map(store.queued().flatMap((q) => (q.left ? [] : [[q.itemKey, q.car?.id]])));
  /** Step 2, once per run: 'stop' when the run must end here (git refused the landing). */
  async function landFront(): Promise<'on' | 'stop'> {
    if (cars.length === 0) return 'on';
    let green = 0;
    let stop: Verdict = { kind: 'green', statuses: {} };
    for (; green < cars.length; green++) {
      stop = await judge(cars[green]!);
      if (stop.kind !== 'green') break;
    }
    // Green: the rule must still hold for each (the serial queue's fresh check before a merge). A car
    // with a member it no longer holds for ends the landing before it; it and those behind are cut.
    let landing = green;
    if (deps.processItem && green > 0) {
      const trigger: Trigger = { kind: 'merge_request', action: 'update', byBot: false };
      // Under the member's comment that queued it, when one did: the note read again, its author's
      // access read again, no push after it (docs/rules.md#members-commands).
      for (const one of cars.slice(0, green))
        for (const entry of one.entries)
          await deps.processItem({ type: 'merge_request', projectId: entry.projectId, id: entry.mrId }, [
            entry.trigger ?? trigger,
          ]);
      const riding = carIds();
      landing = cars.findIndex(
        (one, i) => i < green && one.entries.some((e) => riding.get(e.itemKey) !== one.car.id),
      );
      if (landing === -1) landing = green;
    }
    if (landing > 0) {
      const going = cars.slice(0, landing);
      const last = going.at(-1)!.car;
      // What a build took, as seen here (from the push to green): the status page's estimates.
      const ciMs = Math.max(0, deps.now() - last.pushedAt!);
      const carried = new Set(going.flatMap((one) => one.car.members));
      for (const entry of queueNow())
        if (!carried.has(entry.itemKey)) await patch(entry.itemKey, (e) => ({ ...e, trainCiMs: ciMs }));
      const at = deps.now();
      for (const one of going)
        for (const entry of one.entries)
          await patch(entry.itemKey, (e) => ({ ...e, car: { ...one.car, landing: at } }));
      const pushed = await updater.train.land({
        targetUrl,
        targetBranch: head.targetBranch,
        base: target,
        sha: last.sha!,
        carBranch: last.branch,
      });
      if (pushed.kind === 'pushed') {
        target = last.sha!;
        for (const [i, one] of going.entries()) {
          deps.events?.carBuilt('passed');
          await landed(one, target, i + 1);
        }
        cars = cars.slice(landing);
      } else if (pushed.kind === 'missing') {
        // The last car's commit is neither in this cache nor on its branch (a replica's push of it
        // was lost): the cars going are built again from their records (the same commits) and
        // pushed below; they land at a later run.
        log.warn(
          { sweep: 'merge_queue', car: last.id, sha: last.sha },
          "merge train: the car's commit is not on its branch; built again from its record",
        );
        for (const one of going) {
          const { pushedAt: _pushed, landing: _landing, ...record } = one.car;
          one.car = record;
          for (const entry of one.entries) await patch(entry.itemKey, (e) => ({ ...e, car: record }));
        }
        return 'on';
      } else {
        for (const one of going)
          for (const entry of one.entries) await patch(entry.itemKey, (e) => ({ ...e, car: one.car }));
        if (pushed.kind === 'refused') {
          // The target did not move (read again after the push): the server refused the bot (no
          // right to push the protected branch, a push rule, a hook). Rebuilding would change
          // nothing: the cars stay as they are, and the train stops here until it is allowed.
          log.error(
            { sweep: 'merge_queue', itemKey: head.itemKey, err: pushed.message },
            'merge train: the server refused the landing',
          );
          for (const one of going)
            for (const entry of one.entries)
              say(
                entry,
                'error',
                `the server refused the landing push of ${head.targetBranch} to ${short(last.sha)} (${head.targetBranch} did not move: it is still at ${short(target)}): ${pushed.message}; the merge train waits until the bot may push ${head.targetBranch} (docs/merge-queue.md#when-the-queue-cannot-move)`,
              );
          return 'stop';
        }
        // The target moved meanwhile: every car is built again on it.
        target = (await client.branches.get(head.projectId, head.targetBranch)).commit.id;
        await cut(cars);
        cars = [];
        return 'on';
      }
    }
    if (landing < green) {
      const front = cars[0]!;
      const held = carIds();
      for (const entry of front.entries)
        if (held.get(entry.itemKey) !== front.car.id)
          say(entry, 'dropped', 'its rule no longer holds at the landing (evaluated again)');
      await cut(cars);
      cars = [];
      return 'on';
    }
    if (cars.length === 0 || stop.kind === 'unbuilt') return 'on';
    // The first car that is not green is the front now.
    const front = cars[0]!;
    const onTop = (entry: QueueEntry) =>
      `the train's car ${short(front.car.sha)} (${entry.targetBranch} at ${short(front.car.base)} with ${front.car.iids.map((n) => `!${n}`).join(', ')})`;
    if (stop.kind === 'left') {
      await cut(cars);
      cars = [];
      return 'on';
    }
    if (stop.kind === 'red') {
      const { red } = stop;
      await failed(front, 'status_failed', (e) => `${red.join(', ')} failed on ${onTop(e)}`);
      await cut(cars.slice(1));
      cars = [];
      return 'on';
    }
    if (stop.kind === 'pending') {
      const { pending, statuses, late } = stop;
      if (late) {
        await failed(
          front,
          'status_timeout',
          (e) =>
            `${late.names.map(([n, b]) => `${n} (${b})`).join(', ')} did not succeed on ${onTop(e)} within ${Math.round(late.entry.statusTimeoutMs / 1000)} s${late.entry === e ? '' : ` (the status_timeout of !${late.entry.iid}, in the same car)`}`,
        );
        await cut(cars.slice(1));
        cars = [];
        return 'on';
      }
      for (const entry of front.entries)
        say(
          entry,
          'waiting',
          `car 1: waiting for ${pending.map(([n, b]) => `${n} ${b}`).join(', ')} on ${short(front.car.sha)}`,
          statuses,
        );
      await checkCarsBehind(deps, head.projectId, cars.slice(1));
    }
    return 'on';
  }
  if ((await landFront()) === 'stop') return steps;

  // 3. Cars up to `depth`: the recorded ones not pushed yet (a crash between record and push) again,
  // from their record (same sha), then new ones behind.
  // Cars not pushed (a failed push, a crash): while a branch blocks their names, nothing is pushed again.
  const unpushed = cars.filter((one) => one.car.pushedAt === undefined);
  if (unpushed.length > 0) {
    const blocked = await updater.train.findBlocker({
      targetUrl,
      branches: unpushed.map((one) => one.car.branch),
    });
    if (blocked) {
      for (const one of unpushed) for (const entry of one.entries) say(entry, 'error', blockedBy(blocked));
      return finish();
    }
  }
  let below = cars.at(-1)?.car.sha ?? target;
  let belowBranch = cars.at(-1)?.car.branch ?? head.targetBranch;
  for (const [i, one] of cars.entries())
    if (one.car.pushedAt === undefined) {
      const again = await build(
        one.car,
        one.entries,
        undefined,
        cars[i - 1]?.car.branch ?? head.targetBranch,
      );
      if (!again) {
        await cut(cars.slice(i));
        cars = cars.slice(0, i);
        break;
      }
      one.car = again;
    }
  for (let guard = 0; cars.length < depth && guard < 4 * depth * batch + 8; guard++) {
    const riding = new Set(cars.flatMap((c) => c.car.members));
    const rest = queueNow().filter((e) => !riding.has(e.itemKey));
    if (rest.length === 0) break;
    const cap = Math.min(batch, rest[0]!.carCap ?? batch);
    let members = rest.slice(0, cap);
    let mrs = await Promise.all(members.map(readMr));
    let fine = true;
    for (const [i, entry] of members.entries()) if (!(await stillRides(entry, mrs[i]))) fine = false;
    if (!fine) continue;
    // A fork's approval still settling: the car stops before it, and so does the train this run.
    const settling = members.findIndex((entry, i) => forkSettling(entry, mrs[i], deps.now(), settleMs));
    if (settling === 0) {
      say(
        members[0]!,
        'waiting',
        `its approval by @${members[0]!.approval!.by} settles (${settleMs / 1000} s, api.push_note_lag_ms) before a fork's head rides: the server may not have noted a push right after the comment yet`,
      );
      break;
    }
    if (settling > 0) {
      members = members.slice(0, settling);
      mrs = mrs.slice(0, settling);
    }
    const iids = members.map((e) => e.iid);
    const car: TrainCar = {
      id: `${iids[0]}-${short(below)}-${cars.length + 1}`,
      position: cars.length + 1,
      base: below,
      members: members.map((e) => e.itemKey),
      iids,
      heads: mrs.map((mr) => mr!.sha!),
      branch: trainBranch(updater.train.prefix, head.targetBranch, head.queue, iids[0]!),
      date: Math.floor(deps.now() / 1000),
      identity: { ...updater.train.identity },
    };
    // Recorded before anything is pushed: a rebuild from this record makes the same commit.
    for (const entry of members) await patch(entry.itemKey, (e) => ({ ...e, car }));
    const built = await build(car, members, mrs as MergeRequest[], belowBranch);
    if (built === undefined) break;
    if (!built) continue;
    cars.push({ car: built, entries: members });
    below = built.sha!;
    belowBranch = built.branch;
  }
  await pushAll();
  return finish();

  async function finish(): Promise<TrainStep[]> {
    const dropped = steps.some((s) => s.outcome === 'dropped' || s.outcome === 'removed');
    await deleteCarBranches({
      updater,
      targetUrl,
      log,
      stale,
      holding: new Set(queueNow().flatMap((e) => (e.car ? [e.car.branch] : []))),
      ...(stale.size > 0 || dropped ? { list: { targetBranch: head.targetBranch, queue: head.queue } } : {}),
    });
    return steps;
  }

  /**
   * Builds a recorded car (pushed with the others at the end of the run): the car with its sha,
   * false when a member left (the car is formed again), undefined when the run must stop (git
   * refused, the base is gone).
   */
  async function build(
    car: TrainCar,
    members: QueueEntry[],
    mrs?: MergeRequest[],
    baseBranch = belowBranch,
  ): Promise<TrainCar | false | undefined> {
    const outcome = await updater.train.buildCar({
      targetUrl,
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
    if (outcome.kind === 'conflict' || outcome.kind === 'moved') {
      const entry = members[outcome.index]!;
      for (const m of members) await patch(m.itemKey, withoutCar);
      if (outcome.kind === 'moved')
        say(
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
        const mr = mrs?.[outcome.index] ?? (await readMr(entry));
        const why = `${mr?.source_branch ?? `!${entry.iid}`} conflicts with ${entry.targetBranch} at ${short(car.base)}${car.position > 1 ? ' (with the cars ahead of it in the merge train)' : ''} in ${outcome.files.map((f) => `\`${f}\``).join(', ')}`;
        const at = car.heads[outcome.index]!;
        if (mr) say(entry, 'removed', (await deps.remove(entry, mr, 'conflict', why, at)).detail);
      }
      return false;
    }
    if (outcome.kind !== 'built') {
      const why =
        outcome.kind === 'refused'
          ? `git refused the bot: ${outcome.message}`
          : `the commit below car ${car.position} (${short(car.base)}) could not be fetched`;
      for (const m of members) await patch(m.itemKey, withoutCar);
      for (const m of members) say(m, 'error', why);
      return undefined;
    }
    if (car.sha !== undefined && car.sha !== outcome.sha)
      log.error(
        { sweep: 'merge_queue', car: car.id, recorded: car.sha, built: outcome.sha },
        'merge train: a car rebuilt from its record made another commit',
      );
    const withSha: TrainCar = { ...car, sha: outcome.sha };
    for (const m of members) await patch(m.itemKey, (e) => ({ ...e, car: withSha }));
    toPush.push({ car: withSha, entries: members });
    return withSha;
  }

  /** Pushes the cars built in this run, in one push; true when done. */
  async function pushAll(): Promise<boolean> {
    if (toPush.length === 0) return true;
    const pushed = await updater.train.pushCars({
      targetUrl,
      cars: toPush.map(({ car }) => ({ branch: car.branch, sha: car.sha! })),
    });
    if (pushed.kind !== 'pushed') {
      for (const { car, entries } of toPush)
        for (const m of entries) say(m, 'error', pushFailure(pushed, car.branch));
      return false;
    }
    const at = deps.now();
    for (const { car, entries } of toPush) {
      const done: TrainCar = { ...car, pushedAt: at };
      for (const m of entries) await patch(m.itemKey, (e) => ({ ...e, car: done }));
      stale.delete(car.branch);
      for (const m of entries)
        say(
          m,
          'updated',
          `car ${car.position}: pushed ${short(car.sha)} to ${car.branch} (${car.iids.map((n) => `!${n}`).join(', ')} on ${short(car.base)}); waiting for ${m.required.join(', ')}`,
        );
    }
    return true;
  }
}
