/**
 * The queue page's data (`/status/queue` and `/status/queue.json`: docs/merge-queue.md#where-it-shows):
 * each merge queue as a person asks about it: where is my merge request, what does it wait for, when
 * will it land, why did it leave. Read from the store alone (its queue entries, the decisions for
 * titles and links, the queue controls when given), never from the server.
 *
 * Positions and car numbers are those of now (the store's `TrainCar.position` is the one it was built
 * with: car 2 becomes car 1 when car 1 lands). A car is one row, with its members. An estimate is
 * never a time in the past: a build running longer than the last one seen lands "any moment".
 */
import { queueShape, queuesOf, type QueueEntry, type TrainCar } from '../state/index.ts';

/** A merge request as the page names it: `acme/web!7`, its title when a decision recorded one. */
export interface QueueMember {
  itemKey: string;
  /** `acme/web!7` */
  ref: string;
  iid: number;
  title?: string;
  /** Explain's answer, relative to the queue page (`../explain/...`). */
  explain?: string;
  /** Its place in its queue now (1: the head). */
  position: number;
  /** Moved to the front by an operator. */
  front?: { by: string; at: number };
}

/**
 * A car's build: `not_started` (recorded, not pushed yet), `running` (pushed, its statuses awaited),
 * `passed` (read passed while a car ahead is tested: it waits for the cars ahead), `failed` (read
 * failed behind the front: split or taken out when it is the front), `landing` (the target is being
 * pushed to it).
 */
export type CarState = 'not_started' | 'running' | 'passed' | 'failed' | 'landing';

/** When it may land. `at` (ms since the epoch) is never before the page's `now`. */
export interface Estimate {
  /** `estimate`: from the build time seen; `any_moment`: due already (landing, or a build longer than the last); `none`. */
  kind: 'estimate' | 'any_moment' | 'none';
  at?: number;
  /** In words, for a person (the JSON has it too). */
  text: string;
}

export interface CarRow {
  /** Its number now (1: the front car). */
  number: number;
  /** The number it was built with (what its merge commits' messages say). */
  builtAs: number;
  id: string;
  members: QueueMember[];
  branch: string;
  /** The commit it was built on: the target's head (car 1) or the car ahead's commit. */
  base: string;
  sha?: string;
  state: CarState;
  /** The state in words. */
  stateText: string;
  /** Since when it is in its state (push, read, landing). */
  since?: number;
  /** The statuses still awaited: none when it passed or is landing. */
  waitingFor: string[];
  /** Statuses read failed. */
  failed?: string[];
  /** When the first of its members' `status_timeout` ends (a running build). */
  timeoutAt?: number;
  estimate: Estimate;
}

export interface WaitingRow {
  member: QueueMember;
  estimate: Estimate;
}

/** A serial queue's merge request. */
export interface SerialRow {
  member: QueueMember;
  /** `testing`: its statuses awaited; `updating`: its branch being brought up to the target; `waiting`: behind the head. */
  state: 'testing' | 'updating' | 'waiting';
  stateText: string;
  sha?: string;
  since?: number;
  waitingFor: string[];
  timeoutAt?: number;
}

export interface QueueRemoval {
  itemKey: string;
  ref: string;
  iid: number;
  at: number;
  sha: string;
  reason: string;
}

export interface QueueTrouble {
  /** The merge request whose steps fail (the head). */
  ref: string;
  since: number;
  count: number;
  error: string;
  /** When its merge request was told in a comment. */
  told?: number;
}

export interface QueueCard {
  /** `acme/web|master|default`: the queue's anchor on the page is `queue-` and its index. */
  key: string;
  project: string;
  targetBranch: string;
  queue: string;
  kind: 'serial' | 'train';
  /** Cars tested at once now (for `depth: auto`, the window as it stands). */
  depth: number;
  /** `depth: auto`: the window's bounds (docs/merge-queue.md#depth-auto-a-window-that-follows-the-ci). */
  depthAuto?: { min: number; max: number };
  batch: number;
  /** Merge requests in it now. */
  size: number;
  paused?: { by: string; reason: string; at: number };
  trouble?: QueueTrouble;
  /** The build time last seen on this queue (ms), what the estimates use. */
  buildMs?: number;
  cars: CarRow[];
  /** A train's merge requests not in a car yet. */
  waiting: WaitingRow[];
  /** A serial queue's merge requests. */
  serial: SerialRow[];
  /** The last merge requests it took out, latest first (at most REMOVALS_SHOWN). */
  removals: QueueRemoval[];
}

export interface QueuePageData {
  now: number;
  queues: QueueCard[];
}

/** A queue's control record (pause), as the store keeps it when it does. */
export interface QueueControlView {
  project: string;
  targetBranch: string;
  queue: string;
  paused?: { by: string; reason: string; at: number };
}

export interface QueueSources {
  entries: readonly QueueEntry[];
  controls?: readonly QueueControlView[];
  /** The title and explain link of an item, from its latest decision (link relative to /status). */
  itemOf?: (itemKey: string) => { title?: string; explain?: string };
  now: number;
}

export const REMOVALS_SHOWN = 10;

const short = (sha: string | undefined): string => (sha ? sha.slice(0, 7) : 'none');
const keyOf = (e: { project: string; targetBranch: string; queue: string }) =>
  `${e.project.toLowerCase()}|${e.targetBranch}|${e.queue}`;

/** `42 s`, `3 min`, `1 h 5 min`. */
export function durationText(ms: number): string {
  if (ms < 1000) return 'under 1 s';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  return `${Math.floor(min / 60)} h${min % 60 ? ` ${min % 60} min` : ''}`;
}

/** The QueueEntry fields other parts add (an operator's `front`), read when present. */
type Fronted = QueueEntry & { front?: { by: string; at: number } };

function memberOf(entry: QueueEntry, position: number, sources: QueueSources): QueueMember {
  const item = sources.itemOf?.(entry.itemKey) ?? {};
  const front = (entry as Fronted).front;
  return {
    itemKey: entry.itemKey,
    ref: `${entry.project}!${entry.iid}`,
    iid: entry.iid,
    ...(item.title ? { title: item.title } : {}),
    ...(item.explain ? { explain: `../${item.explain}` } : {}),
    position,
    ...(front ? { front: { by: front.by, at: front.at } } : {}),
  };
}

export function collectQueues(sources: QueueSources): QueuePageData {
  const { entries, now } = sources;
  const groups = queuesOf(entries);
  const left = new Map<string, QueueEntry[]>();
  for (const entry of entries)
    if (entry.left) left.set(keyOf(entry), [...(left.get(keyOf(entry)) ?? []), entry]);
  const keys = [...new Set([...groups.keys(), ...left.keys()])].sort();
  const queues = keys.map((key) => {
    const group = groups.get(key) ?? [];
    const gone = left.get(key) ?? [];
    const sample = group[0] ?? gone[0]!;
    const shape = queueShape(group.length > 0 ? group : gone);
    const control = sources.controls?.find((c) => keyOf(c) === key);
    const troubled = group.find((e) => e.trouble);
    const buildMs = group.find((e) => e.trainCiMs !== undefined)?.trainCiMs;
    const members = group.map((entry, index) => memberOf(entry, index + 1, sources));
    const card: QueueCard = {
      key,
      project: sample.project,
      targetBranch: sample.targetBranch,
      queue: sample.queue,
      kind: shape.train ? 'train' : 'serial',
      depth: shape.depth,
      ...(shape.auto ? { depthAuto: { ...shape.auto } } : {}),
      batch: shape.batch,
      size: group.length,
      ...(control?.paused ? { paused: { ...control.paused } } : {}),
      ...(troubled?.trouble
        ? {
            trouble: {
              ref: `${troubled.project}!${troubled.iid}`,
              since: troubled.trouble.since,
              count: troubled.trouble.count,
              error: troubled.trouble.error,
              ...(troubled.trouble.told !== undefined ? { told: troubled.trouble.told } : {}),
            },
          }
        : {}),
      ...(buildMs !== undefined ? { buildMs } : {}),
      cars: [],
      waiting: [],
      serial: [],
      removals: gone
        .map((e) => ({
          itemKey: e.itemKey,
          ref: `${e.project}!${e.iid}`,
          iid: e.iid,
          at: e.left!.at,
          sha: e.left!.sha,
          reason: e.left!.reason,
        }))
        .sort((a, b) => b.at - a.at)
        .slice(0, REMOVALS_SHOWN),
    };
    if (shape.train) trainRows(card, group, members, now);
    else card.serial = serialRows(group, members, now);
    return card;
  });
  return { now, queues };
}

function serialRows(group: QueueEntry[], members: QueueMember[], now: number): SerialRow[] {
  const head = group[0];
  return group.map((entry, index) => {
    const member = members[index]!;
    if (index > 0)
      return {
        member,
        state: 'waiting',
        stateText: `waiting for ${head!.project}!${head!.iid} ahead`,
        waitingFor: [],
      };
    if (entry.pinnedSha === undefined)
      return {
        member,
        state: 'updating',
        stateText: `its branch is being brought up to ${entry.targetBranch}`,
        waitingFor: [],
      };
    const since = entry.testingSince ?? now;
    return {
      member,
      state: 'testing',
      stateText: `waiting for ${entry.required.join(', ')} on ${short(entry.pinnedSha)}`,
      sha: entry.pinnedSha,
      since,
      waitingFor: [...entry.required],
      timeoutAt: since + entry.statusTimeoutMs,
    };
  });
}

function carState(car: TrainCar, number: number, targetBranch: string): Pick<CarRow, 'state' | 'stateText'> {
  if (car.landing !== undefined)
    return { state: 'landing', stateText: `landing: ${targetBranch} is being moved to ${short(car.sha)}` };
  if (car.sha === undefined || car.pushedAt === undefined)
    return { state: 'not_started', stateText: `not started: being built on ${short(car.base)}` };
  if (car.checked?.state === 'passed')
    return {
      state: 'passed',
      stateText:
        number === 1
          ? 'passed: lands at the next run'
          : `passed: waiting for the car${number > 2 ? 's' : ''} ahead`,
    };
  if (car.checked?.state === 'failed')
    return {
      state: 'failed',
      stateText: `failed (${(car.checked.failed ?? []).join(', ')}): lands through a car behind it that passes (each contains it), otherwise split or taken out when it is the front car`,
    };
  return { state: 'running', stateText: 'running: its build is being tested' };
}

/** A train: its cars (one row each, numbered as of now), and the merge requests not in a car yet. */
function trainRows(card: QueueCard, group: QueueEntry[], members: QueueMember[], now: number): void {
  const cars = new Map<string, { car: TrainCar; entries: QueueEntry[]; members: QueueMember[] }>();
  const waiting: { entry: QueueEntry; member: QueueMember }[] = [];
  group.forEach((entry, index) => {
    const member = members[index]!;
    if (!entry.car) return waiting.push({ entry, member });
    const one = cars.get(entry.car.id) ?? { car: entry.car, entries: [], members: [] };
    one.entries.push(entry);
    one.members.push(member);
    cars.set(entry.car.id, one);
  });
  const buildMs = card.buildMs;
  // Each car lands once its own build is done and the car ahead landed; one that failed is built
  // again (and those behind it) once it is the front.
  let ahead = now;
  let rebuilt = false;
  const landings: number[] = [];
  const estimate = (own: number | undefined, overdue: boolean, words?: string): Estimate => {
    if (card.paused) return { kind: 'none', text: 'paused: nothing lands until the queue is resumed' };
    if (own === undefined || buildMs === undefined)
      return { kind: 'none', text: 'no estimate yet: no build has finished on this queue' };
    const at = Math.max(ahead, own, now);
    ahead = at;
    landings.push(at);
    // Due within a second: "in about 0 s" would read as a time already past.
    if (at - now < 1000 || overdue)
      return { kind: 'any_moment', at: Math.max(at, now), text: words ?? 'any moment' };
    return { kind: 'estimate', at, text: `in about ${durationText(at - now)}` };
  };
  let number = 0;
  for (const { car, entries, members: riders } of cars.values()) {
    number++;
    const { state, stateText } = carState(car, number, card.targetBranch);
    const running = state === 'running';
    const since =
      state === 'landing'
        ? car.landing
        : state === 'passed' || state === 'failed'
          ? car.checked?.at
          : car.pushedAt;
    const timeoutAt = running
      ? car.pushedAt! + Math.min(...entries.map((e) => e.statusTimeoutMs))
      : undefined;
    let own: number | undefined;
    let overdue = false;
    let words: string | undefined;
    if (buildMs !== undefined) {
      if (state === 'failed') rebuilt = true;
      if (state === 'landing') [own, words] = [now, 'any moment: landing now'];
      else if (rebuilt) own = ahead + buildMs;
      else if (state === 'passed') own = now;
      else if (state === 'not_started') own = now + buildMs;
      else {
        own = car.pushedAt! + buildMs;
        if (own <= now) {
          overdue = true;
          words = `any moment: its build runs ${durationText(now - car.pushedAt!)}, the last one seen took ${durationText(buildMs)}`;
        }
      }
    }
    card.cars.push({
      number,
      builtAs: car.position,
      id: car.id,
      members: riders,
      branch: car.branch,
      base: car.base,
      ...(car.sha ? { sha: car.sha } : {}),
      state,
      stateText,
      ...(since !== undefined ? { since } : {}),
      waitingFor:
        state === 'running' || state === 'not_started'
          ? [...new Set(entries.flatMap((e) => e.required))]
          : [],
      ...(car.checked?.failed ? { failed: [...car.checked.failed] } : {}),
      ...(timeoutAt !== undefined ? { timeoutAt } : {}),
      estimate:
        state === 'failed'
          ? {
              kind: 'none',
              text: 'does not land as built, unless a car behind it, which contains it, passes',
            }
          : estimate(own, overdue, words),
    });
  }
  // Not in a car yet: a car is built for each `batch` of them as a place frees (a car lands), or at
  // once while the train has fewer than `depth` cars.
  const free = Math.max(0, card.depth - card.cars.length);
  const rounds: Estimate[] = [];
  card.waiting = waiting.map(({ member }, index) => {
    const round = Math.floor(index / card.batch);
    if (rounds[round] === undefined) {
      const builtAt = round < free ? now : landings[round - free];
      rounds[round] = estimate(
        builtAt === undefined || buildMs === undefined ? undefined : builtAt + buildMs,
        false,
      );
    }
    return { member, estimate: rounds[round] };
  });
}
