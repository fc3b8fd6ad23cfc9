/**
 * The order of merge queues (docs/merge-queue.md), from the store's entries alone: the driver, the
 * status page and explain all read it here. Priority first (higher first), then arrival, then key.
 */
import type { QueueControl, QueueEntry } from './store.ts';

const short = (sha: string | undefined): string => (sha ? sha.slice(0, 7) : 'none');

/** The key of a queue: its project (any case), target branch and name. */
export function queueKeyOf(project: string, targetBranch: string, queue: string): string {
  return `${project.toLowerCase()}|${targetBranch}|${queue}`;
}

/**
 * A queue's entries in order: those an operator moved to the front first (the latest moved first),
 * then priority (higher first), then arrival, then key.
 */
function queueOrder(entries: readonly QueueEntry[]): QueueEntry[] {
  return [...entries].sort(
    (a, b) =>
      (b.front?.at ?? -Infinity) - (a.front?.at ?? -Infinity) ||
      b.priority - a.priority ||
      a.enqueuedAt - b.enqueuedAt ||
      a.itemKey.localeCompare(b.itemKey),
  );
}

/** A queue's shape: its depth now (for `depth: auto`, the window), its batch, and the window's bounds. */
export interface QueueShape {
  depth: number;
  batch: number;
  train: boolean;
  /** Set when the depth follows the CI (`depth: auto`): the window's bounds; `depth` is the window now. */
  auto?: { min: number; max: number };
}

/**
 * A queue's shape (docs/merge-queue.md#rules-that-feed-one-queue): `depth` and `batch` belong to the
 * queue, not to one merge request, so when its entries disagree (rules feeding one queue with other
 * values, a rule changed while merge requests wait) the queue runs with the smallest of each: nobody's
 * merge request is tested in a bigger train than its own rule allows, and one serial entry makes the
 * queue serial. `hookbot check` reports the rules that disagree. Every other option is each entry's.
 *
 * `depth: auto` (an entry's `depthAuto`): a number wins over it (the smallest number asked, never
 * above any window's upper bound); when every entry asks auto, the window runs from the smallest
 * lower bound to the smallest upper bound, and its size now is the one the train last recorded on
 * its entries (`trainWindow`, state of the queue), its lower bound until then. An auto queue is
 * always a train, even at a window of 1.
 */
export function queueShape(entries: readonly QueueEntry[]): QueueShape {
  if (entries.length === 0) return { depth: 1, batch: 1, train: false };
  let fixed = Infinity;
  let low = Infinity;
  let high = Infinity;
  let batch = Infinity;
  for (const entry of entries) {
    if (entry.depthAuto) {
      low = Math.min(low, entry.depthAuto.min);
      high = Math.min(high, entry.depthAuto.max);
    } else fixed = Math.min(fixed, entry.depth ?? 1);
    batch = Math.min(batch, entry.batch ?? 1);
  }
  if (fixed !== Infinity) {
    const depth = Math.min(fixed, high);
    return { depth, batch, train: depth > 1 || batch > 1 };
  }
  const min = Math.min(low, high);
  const recorded = entries.find((e) => e.trainWindow !== undefined)?.trainWindow ?? min;
  const depth = Math.max(min, Math.min(high, recorded));
  return { depth, batch, train: true, auto: { min, max: high } };
}

/** The window of a `depth: auto` queue in words: `depth auto 3 (2..10)`; a number otherwise: `depth 3`. */
export function depthWords(shape: QueueShape): string {
  return shape.auto
    ? `depth auto ${shape.depth} (${shape.auto.min}..${shape.auto.max})`
    : `depth ${shape.depth}`;
}

/** The queues of the store, each in order, keyed `project|target|name`. */
export function queuesOf(entries: readonly QueueEntry[]): Map<string, QueueEntry[]> {
  const groups = new Map<string, QueueEntry[]>();
  for (const entry of entries) {
    // A merge request taken out with a comment is remembered, but in no queue.
    if (entry.left) continue;
    const key = queueKeyOf(entry.project, entry.targetBranch, entry.queue);
    groups.set(key, [...(groups.get(key) ?? []), entry]);
  }
  for (const [key, group] of groups) groups.set(key, queueOrder(group));
  return groups;
}

/** The words of an operator's pause: `paused by alice since 2026-12-07 06:00 UTC: release freeze`. */
export function pauseText(paused: NonNullable<QueueControl['paused']>): string {
  const since = new Date(paused.at).toISOString().slice(0, 16).replace('T', ' ');
  return `paused by ${paused.by} since ${since} UTC: ${paused.reason}`;
}

/**
 * Where a queued merge request stands, in words: `position 2 of 4; waiting for ci/test on 3f2a1c9`;
 * an operator's pause of its queue first, and its move to the front (`controls`: the store's queue
 * controls).
 */
export function queuePosition(
  entries: readonly QueueEntry[],
  itemKey: string,
  now: number,
  controls: readonly Pick<QueueControl, 'project' | 'targetBranch' | 'queue' | 'paused'>[] = [],
): string | undefined {
  const where = position(entries, itemKey, now);
  const entry = entries.find((one) => one.itemKey === itemKey);
  if (where === undefined || entry === undefined || entry.left) return where;
  const key = queueKeyOf(entry.project, entry.targetBranch, entry.queue);
  const paused = controls.find((c) => queueKeyOf(c.project, c.targetBranch, c.queue) === key)?.paused;
  const fronted = entry.front ? ` (moved to the front by ${entry.front.by})` : '';
  const [first, ...rest] = where.split('; ');
  const text = [`${first}${fronted}`, ...rest].join('; ');
  return paused
    ? `the ${entry.queue} queue for ${entry.targetBranch} is ${pauseText(paused)}: nothing lands until it is resumed; ${text}`
    : text;
}

function position(entries: readonly QueueEntry[], itemKey: string, now: number): string | undefined {
  const removed = entries.find((entry) => entry.itemKey === itemKey && entry.left);
  if (removed?.left)
    return `left the ${removed.queue} queue for ${removed.targetBranch} at ${short(removed.left.sha)}: ${removed.left.reason}; ${
      removed.left.noteId === undefined
        ? 'it enters again after a push, or once its rule stops matching and matches again'
        : "it enters again after a push, once its rule stops matching and matches again, or on a member's new comment command"
    }`;
  for (const group of queuesOf(entries).values()) {
    const index = group.findIndex((entry) => entry.itemKey === itemKey);
    if (index < 0) continue;
    const entry = group[index]!;
    const where = `position ${index + 1} of ${group.length} in the ${entry.queue} queue for ${entry.targetBranch}`;
    const shape = queueShape(group);
    // A window that follows the CI is said with where it stands now.
    if (shape.auto) return trainPosition(`${where} (a merge train, ${depthWords(shape)})`, entry, now);
    if (shape.train || entry.car) return trainPosition(where, entry, now);
    if (index > 0) return `${where}; waiting for ${group[0]!.project}!${group[0]!.iid} ahead`;
    // The queue is stuck on it: said first, it is what a reader must act on.
    if (entry.trouble) return `${where}; ${troubleText(entry.trouble, now)}`;
    if (entry.pinnedSha === undefined)
      return `${where}; its branch is being brought up to ${entry.targetBranch}`;
    const left = Math.max(0, entry.statusTimeoutMs - (now - (entry.testingSince ?? now)));
    return `${where}; waiting for ${entry.required.join(', ')} on ${short(entry.pinnedSha)} (timeout in ${Math.ceil(left / 1000)} s)`;
  }
  return undefined;
}

function troubleText(trouble: NonNullable<QueueEntry['trouble']>, now: number): string {
  return `the queue cannot move: ${trouble.count} step${trouble.count === 1 ? '' : 's'} failed in a row for ${Math.round((now - trouble.since) / 1000)} s, the last with: ${trouble.error}`;
}

/** A merge train's entry, in words: its car, what the car waits for and since when. */
function trainPosition(where: string, entry: QueueEntry, now: number): string {
  // The train is stuck (a branch blocking its names, a refused landing...): said first, as for the serial queue.
  if (entry.trouble) return `${where}; ${troubleText(entry.trouble, now)}`;
  const car = entry.car;
  if (!car)
    return entry.carAfter
      ? `${where}; waiting for a car of the merge train: the first half of the car it was split from is judged first (it rides on top of that half only if it passes)`
      : `${where}; waiting for a car of the merge train`;
  const riders = car.iids.map((iid) => `!${iid}`).join(', ');
  // Built again after its build failed (docs/merge-queue.md#flaky-ci).
  const again = car.retried
    ? ` (built again after ${car.retried.failed.join(', ')} failed: retry ${car.retried.count})`
    : '';
  const head = `${where}; car ${car.position} of the merge train (${riders})${again}`;
  if (car.landing !== undefined) return `${head}; landing ${short(car.sha)} on ${entry.targetBranch}`;
  if (car.pushedAt === undefined) return `${head}; being built on ${short(car.base)}`;
  if (car.checked?.state === 'failed')
    return `${head}; its build failed (${(car.checked.failed ?? []).join(', ')}) on ${short(car.sha)}: it waits for the cars behind it, each of which contains it (one that passes lands it through), and is judged when none can`;
  return `${head}; waiting for ${entry.required.join(', ')} on ${short(car.sha)} for ${Math.round((now - car.pushedAt) / 1000)} s${car.position > 1 ? ', and for the cars ahead to land' : ''}`;
}

/**
 * When a train's entries may land (ms since the epoch), from the last observed build time: a car
 * lands once its own build is done and every car ahead landed; an entry without a car waits for the
 * rounds of cars ahead of it. Undefined until a build was observed, and for a serial queue.
 */
export function trainEstimates(group: readonly QueueEntry[], now: number): Map<string, number> {
  const estimates = new Map<string, number>();
  const shape = queueShape(group);
  const ciMs = group.find((e) => e.trainCiMs !== undefined)?.trainCiMs;
  if (group.length === 0 || ciMs === undefined || !shape.train) return estimates;
  const perRound = shape.depth * shape.batch;
  let at = now;
  let waiting = 0;
  for (const entry of group) {
    if (entry.car?.pushedAt !== undefined) at = Math.max(at, entry.car.pushedAt + ciMs);
    else at = Math.max(at, now + ciMs * (1 + Math.floor(waiting++ / perRound)));
    estimates.set(entry.itemKey, at);
  }
  return estimates;
}
