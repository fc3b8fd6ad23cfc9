/**
 * What the merge train's test files share (test/scheduler/merge-train*.test.ts, train-*.test.ts): one
 * sandbox per file, a work folder, a queue world per test (test/helpers/queue-world.ts), closed after
 * it, and the readings those tests make of a world. `trainSuite` registers its hooks: call it inside
 * the file's `describe`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import type { TrainCar } from '../../src/state/store.ts';
import { makeQueueWorld, type QueueWorld, type QueueWorldOptions } from './queue-world.ts';
import { waitFor } from './wait-for.ts';

/** A rule that queues a merge request labelled `automerge`, with `options` in its `queue` action. */
export const trainRules = (options: string): string => `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, ${options} }
`;

export interface TrainSuite {
  /** The file's sandbox (started before its first test). */
  sandbox(): Sandbox;
  /** A new world under `rules` (its own group and project), closed after the test. */
  world(rules: string, extra?: Partial<QueueWorldOptions>): Promise<QueueWorld>;
}

/** `name`: short, unique among the test files (the admin token, the projects' and the folder's prefix). */
export function trainSuite(name: string): TrainSuite {
  let sb: Sandbox | undefined;
  let dir = '';
  let n = 0;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    sb = await startSandbox({ adminToken: `${name}-root-token`, hookTimeoutMs: 2_000 });
    dir = await mkdtemp(path.join(tmpdir(), `hookbot-${name}-`));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  afterAll(async () => {
    await sb?.close();
    await rm(dir, { recursive: true, force: true });
  });
  return {
    sandbox: () => sb!,
    async world(rules, extra = {}) {
      n += 1;
      const w = await makeQueueWorld(sb!, { prefix: `${name}${n}`, rules, workDir: dir, ...extra });
      cleanups.push(() => w.close());
      return w;
    },
  };
}

/** The merge request's state as the server shows it. */
export const stateOf = async (w: QueueWorld, id: number): Promise<string> =>
  (await w.admin.mergeRequests.get(w.project.id, id)).state;

/** Waits until the server shows the merge request merged (8.x marks it in the background, after the push). */
export const shownMerged = (w: QueueWorld, id: number): Promise<true> =>
  waitFor(async () => ((await stateOf(w, id)) === 'merged' ? true : undefined), 20_000, `!${id} merged`);

/** The cars as the store holds them (each once), front first. */
export function carsOf(w: QueueWorld): TrainCar[] {
  const byId = new Map(
    w.store
      .queued()
      .filter((e) => !e.left && e.car)
      .map((e) => [e.car!.id, e.car!] as const),
  );
  return [...byId.values()].sort((x, y) => x.position - y.position);
}

/** The branches of the train's folder, with the commit each holds. */
export async function trainBranches(w: QueueWorld): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for await (const b of w.admin.branches.list(w.project.id))
    if (b.name.startsWith('hookbot/train/')) found.set(b.name, b.commit.id);
  return found;
}

/** The bot's comments on a merge request. */
export async function botNotes(w: QueueWorld, mrId: number): Promise<string[]> {
  const bodies: string[] = [];
  for await (const note of w.admin.notes.listMergeRequestNotes(w.project.id, mrId))
    if (!note.system && note.author.username.endsWith('-bot')) bodies.push(note.body);
  return bodies;
}

/** Evaluates each merge request once the CI built what was pushed (its rule queues it). */
export async function queueAll(w: QueueWorld, ids: number[]): Promise<void> {
  await w.ci.idle();
  for (const id of ids) await w.processItem(id);
}
