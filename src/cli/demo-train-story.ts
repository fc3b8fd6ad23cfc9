/**
 * The scenario of `hookbot demo --train`: four merge requests, each passing the simulated CI on its
 * own, two of them in a semantic conflict (one renames `def total`, the other adds a `calls: total`),
 * queued by a train rule of depth 3. It acts as alice would (through the API), then narrates the
 * train as it moves, read from the bot's queue entries and the server (cars pushed, their CI,
 * landings, removals), and checks the outcome: the conflict caught, the others landed, no broken
 * commit on master. Every wait is for a condition, bounded by a deadline.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Client, MergeRequest } from '../api/index.ts';
import type { QueueEntry } from '../state/index.ts';
import type { Runtime } from '../start-from-config.ts';

/** The status the simulated CI posts and the train requires. */
export const TRAIN_STATUS = 'ci/test';
export const TRAIN_LABEL = 'automerge';
export const TRAIN_DEPTH = 3;

/** The train rule the demo plays with (written to its private rules folder). */
export const TRAIN_RULES = `rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - state: opened
      - work_in_progress: false
      - labels: { any: [${TRAIN_LABEL}] }
    do:
      - queue: { statuses: [${TRAIN_STATUS}], depth: ${TRAIN_DEPTH}, status_timeout: 5m }
`;

/** master's files when the demo starts, one commit each. */
export const INITIAL_FILES: [string, string][] = [
  ['README.md', '# The shop\n\nEach `calls: NAME` line needs a `def NAME` line in some file.\n'],
  ['shop/cart.txt', 'def subtotal\ndef total\n# the checkout page\ncalls: total\n'],
];

interface Change {
  branch: string;
  title: string;
  file: string;
  content: string;
  /** What it does to the code, for the narration. */
  note: string;
}

/** The merge requests, queued in this order. The third and the first conflict: only a train sees it. */
const CHANGES: Change[] = [
  {
    branch: 'rename-total',
    title: 'Rename total to grand_total',
    file: 'shop/cart.txt',
    content: 'def subtotal\ndef grand_total\n# the checkout page\ncalls: grand_total\n',
    note: 'renames `def total` and its caller',
  },
  {
    branch: 'gift-wrap',
    title: 'Offer gift wrapping',
    file: 'shop/gift.txt',
    content: 'def gift_wrap\ncalls: subtotal\n',
    note: 'adds gift.txt',
  },
  {
    branch: 'receipt-total',
    title: 'Print the total on the receipt',
    file: 'shop/receipt.txt',
    content: 'calls: total\n',
    note: 'adds a `calls: total`',
  },
  {
    branch: 'dark-theme',
    title: 'A dark theme for the shop',
    file: 'shop/theme.txt',
    content: 'colours: dark\n',
    note: 'adds theme.txt',
  },
];
/** The merge request that breaks master together with the first one. */
const CULPRIT = 2;

/**
 * The simulated CI's check: every line `calls: NAME` in any file needs a line `def NAME` in some
 * file. Code, not a shell script: it runs the same as root in a container and as a user, offline.
 */
export async function namesCheck(dir: string): Promise<boolean> {
  const defs = new Set<string>();
  const calls = new Set<string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    for (const line of (await readFile(path.join(entry.parentPath, entry.name), 'utf8')).split('\n')) {
      const def = /^def (\w+)/.exec(line)?.[1];
      if (def) defs.add(def);
      const call = /^calls: (\w+)/.exec(line)?.[1];
      if (call) calls.add(call);
    }
  }
  return [...calls].every((name) => defs.has(name));
}

export interface TrainWorld {
  admin: Client;
  alice: Client;
  runtime: Runtime;
  project: { id: number; path: string };
  /** The simulated CI's verdict on a commit, judged again now (not read from a status). */
  verdict(sha: string): Promise<boolean>;
  say(line: string): void;
  /** When the whole story must be over (ms since the epoch). */
  deadline: number;
  /** Whether a Ctrl+C asked to stop: every wait ends then, and the demo cleans up. */
  stopped(): boolean;
}

const short = (sha: string) => sha.slice(0, 8);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it answers, or fails at the deadline saying what did not come. */
async function until<T>(world: TrainWorld, what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (world.stopped()) throw new Error('stopped (Ctrl+C)');
    if (Date.now() > world.deadline) throw new Error(`no ${what} before the demo's deadline`);
    await sleep(100);
  }
}

async function ciState(world: TrainWorld, sha: string): Promise<string | undefined> {
  for await (const status of world.admin.statuses.list(world.project.id, sha))
    if (status.name === TRAIN_STATUS) return status.status;
  return undefined;
}

const finished = (state: string | undefined) =>
  state === 'success' || state === 'failed' || state === 'canceled' ? state : undefined;

const active = (world: TrainWorld): QueueEntry[] =>
  world.runtime.store.queued().filter((entry) => entry.projectId === world.project.id && !entry.left);

/** Step 1: alice opens the four merge requests; each one's own head is built and passes. */
export async function openChanges(world: TrainWorld): Promise<MergeRequest[]> {
  const p = world.project.id;
  const opened: MergeRequest[] = [];
  for (const change of CHANGES) {
    await world.alice.branches.create(p, { branch_name: change.branch, ref: 'master' });
    const file = { file_path: change.file, branch_name: change.branch, content: change.content };
    const commit = { ...file, commit_message: change.title };
    if (INITIAL_FILES.some(([name]) => name === change.file)) await world.alice.files.update(p, commit);
    else await world.alice.files.create(p, commit);
    opened.push(
      await world.alice.mergeRequests.create(p, {
        source_branch: change.branch,
        target_branch: 'master',
        title: change.title,
      }),
    );
  }
  for (const [index, mr] of opened.entries()) {
    const head = (await world.admin.branches.get(p, CHANGES[index]!.branch)).commit.id;
    const state = await until(world, `${TRAIN_STATUS} on !${mr.iid}`, async () =>
      finished(await ciState(world, head)),
    );
    world.say(
      `   alice opens !${mr.iid} "${mr.title}" (${CHANGES[index]!.note}): ${TRAIN_STATUS} ${state === 'success' ? 'passed' : state} on its own head ${short(head)}`,
    );
    if (state !== 'success') throw new Error(`!${mr.iid} does not pass ${TRAIN_STATUS} on its own`);
  }
  return opened;
}

/** Step 2: alice labels them one after the other; the rule queues each. */
export async function queueChanges(world: TrainWorld, mrs: MergeRequest[]): Promise<void> {
  for (const mr of mrs) {
    await world.alice.mergeRequests.update(world.project.id, mr.id, { labels: [TRAIN_LABEL] });
    const entries = await until(world, `queue entry for !${mr.iid}`, async () => {
      const now = active(world);
      return now.some((entry) => entry.mrId === mr.id) ? now : undefined;
    });
    world.say(
      `   alice labels !${mr.iid} ${TRAIN_LABEL}: rule "queue automerge" puts it in the train (${entries.length} queued)`,
    );
  }
}

interface CarSeen {
  position: number;
  /** Its own merge requests. */
  iids: number[];
  /** The iids it tests together: its own and those of the cars it stands on. */
  holds: number[];
  verdict?: string;
}

/** What the narrator has told so far. */
interface Told {
  cars: Map<string, CarSeen>;
  left: Set<number>;
  merged: Set<number>;
  master: string;
}

const list = (iids: number[]) => iids.map((iid) => `!${iid}`).join(' + ');

/** Cars newly pushed: each with what it holds. */
function tellCars(world: TrainWorld, told: Told): void {
  const entries = active(world);
  const cars = entries.flatMap((entry) =>
    entry.car?.sha && entry.car.pushedAt && entry.car.members[0] === entry.itemKey ? [entry.car] : [],
  );
  cars.sort((a, b) => a.position - b.position);
  const bySha = new Map(cars.map((car) => [car.sha!, car]));
  // What a car tests beyond master: its own and those of the cars in the train it stands on.
  const chain = (sha: string): number[] => {
    const car = bySha.get(sha);
    return car ? [...chain(car.base), ...car.iids] : [];
  };
  for (const car of cars) {
    if (told.cars.has(car.sha!)) continue;
    const below = bySha.get(car.base);
    const holds = chain(car.sha!);
    told.cars.set(car.sha!, { position: car.position, iids: car.iids, holds });
    const on = below
      ? `the car of ${list(below.iids)} (${short(car.base)}), so it tests ${list(holds)} together`
      : `master ${short(car.base)}`;
    world.say(
      `   car ${car.position}: ${list(car.iids)} merged on top of ${on} -> ${short(car.sha!)}, pushed to ${car.branch}; ${TRAIN_STATUS} builds it`,
    );
  }
}

/** Verdicts of the CI on the cars told. */
async function tellVerdicts(world: TrainWorld, told: Told): Promise<void> {
  // A car given up: one of its merge requests rides another car now (the train built it again).
  const rebuilt = (sha: string, iids: number[]) =>
    active(world).some((entry) => iids.includes(entry.iid) && entry.car?.sha && entry.car.sha !== sha);
  for (const [sha, car] of told.cars) {
    if (car.verdict) continue;
    car.verdict = finished(await ciState(world, sha));
    if (car.verdict === undefined) continue;
    const what = `${TRAIN_STATUS} ${car.verdict === 'success' ? 'passed' : car.verdict} on`;
    if (rebuilt(sha, car.iids))
      world.say(
        `   (${what} ${short(sha)}, the car of ${list(car.iids)} given up already: it stood on a car that failed)`,
      );
    else if (car.verdict === 'success')
      world.say(
        `   ${what} car ${car.position} (${short(sha)}): ${car.holds.length > 1 ? `${list(car.holds)} pass together` : `${list(car.holds)} passes on master`}`,
      );
    else
      world.say(
        `   ${what} car ${car.position} (${short(sha)}): ${list(car.holds)} do not pass together, though each passed alone`,
      );
  }
}

/** Landings (master moved, merge requests merged) and removals. */
async function tellLandingsAndRemovals(world: TrainWorld, told: Told, mrs: MergeRequest[]): Promise<void> {
  const p = world.project.id;
  const master = (await world.admin.branches.get(p, 'master')).commit.id;
  if (master !== told.master) {
    const car = told.cars.get(master);
    world.say(
      `   master fast-forwarded ${short(told.master)} -> ${short(master)}${car ? `: the very commit car ${car.position} tested` : ''}`,
    );
    told.master = master;
  }
  for (const entry of world.runtime.store.queued()) {
    if (entry.projectId !== p || !entry.left || told.left.has(entry.iid)) continue;
    told.left.add(entry.iid);
    world.say(`   !${entry.iid} leaves the train: ${entry.left.reason}`);
  }
  for (const mr of mrs) {
    if (told.merged.has(mr.iid) || active(world).some((entry) => entry.mrId === mr.id)) continue;
    if ((await world.admin.mergeRequests.get(p, mr.id)).state !== 'merged') continue;
    told.merged.add(mr.iid);
    world.say(`   !${mr.iid} "${mr.title}" is merged (landed by the train)`);
  }
}

/** Step 3: the train runs; narrated as it happens, until every merge request landed or left. */
export async function watchTrain(
  world: TrainWorld,
  mrs: MergeRequest[],
  masterBefore: string,
): Promise<void> {
  const told: Told = { cars: new Map(), left: new Set(), merged: new Set(), master: masterBefore };
  await until(world, 'end of the train', async () => {
    tellCars(world, told);
    await tellVerdicts(world, told);
    await tellLandingsAndRemovals(world, told, mrs);
    const done = mrs.every((mr) => told.merged.has(mr.iid) || told.left.has(mr.iid));
    return done && active(world).length === 0 ? true : undefined;
  });
}

async function botNotes(world: TrainWorld, mr: MergeRequest): Promise<string[]> {
  const bodies: string[] = [];
  for await (const note of world.admin.notes.listMergeRequestNotes(world.project.id, mr.id))
    if (!note.system && note.author.username === 'hookbot') bodies.push(note.body);
  return bodies;
}

/** master's first-parent line, newest first. */
async function firstParents(world: TrainWorld): Promise<string[]> {
  const line: string[] = [];
  for (
    let sha: string | undefined = (await world.admin.branches.get(world.project.id, 'master')).commit.id;
    sha;
  ) {
    line.push(sha);
    sha = (await world.admin.commits.get(world.project.id, sha)).parent_ids[0];
  }
  return line;
}

/** Step 4: the conflict caught (the culprit out with its reason), the others landed, master never broken. */
export async function checkOutcome(world: TrainWorld, mrs: MergeRequest[]): Promise<void> {
  const p = world.project.id;
  const culprit = mrs[CULPRIT]!;
  const problems: string[] = [];
  const memory = world.runtime.store.queued().find((entry) => entry.mrId === culprit.id && entry.left);
  if (!memory) problems.push(`!${culprit.iid} was not taken out of the train`);
  const comment = await until(world, `comment on !${culprit.iid}`, async () => {
    const notes = await botNotes(world, culprit);
    return notes.length > 0 ? notes[0] : undefined;
  });
  world.say(`   the conflict is caught: !${culprit.iid} is out of the train, and the bot told alice on it:`);
  world.say(`     "${comment.split('\n')[0]}"`);
  for (const mr of mrs) {
    const state = (await world.admin.mergeRequests.get(p, mr.id)).state;
    const expected = mr === culprit ? 'opened' : 'merged';
    if (state !== expected) problems.push(`!${mr.iid} is ${state}, not ${expected}`);
  }
  const landed = mrs.filter((mr) => mr !== culprit);
  world.say(`   landed: ${list(landed.map((mr) => mr.iid))}; !${culprit.iid} stays open for alice to fix`);
  const line = await firstParents(world);
  const broken: string[] = [];
  for (const sha of line) if (!(await world.verdict(sha))) broken.push(short(sha));
  world.say(
    `   master's first-parent history: ${line.length} commits, each checked again by ${TRAIN_STATUS}'s check: ${broken.length} broken${broken.length ? ` (${broken.join(', ')})` : ''}`,
  );
  if (broken.length > 0) problems.push(`${broken.length} broken commits on master`);
  if (problems.length > 0) throw new Error(problems.join('; '));
}

/** The queue's own page when the bot serves one, else the status page's merge-queue section. */
export async function queuePage(botUrl: string): Promise<string> {
  const own = `${botUrl}/status/queue`;
  const answer = await fetch(own).catch(() => undefined);
  await answer?.body?.cancel();
  return answer?.ok ? own : `${botUrl}/status#merge-queue`;
}
