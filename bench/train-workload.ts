/**
 * The merge train benchmark's workload (bench/merge-train.bench.ts): N merge requests queued at once
 * on a project whose CI runs the semantic check of test/helpers/semantic-check.ts (every `calls: NAME`
 * needs a `def NAME` somewhere). Every merge request touches files of its own, so no textual merge ever
 * conflicts; what breaks is semantic:
 *
 * - 4 **pairs** (a rename and a new caller of the old name): `def <name>` becomes `def <name>_v2` in one,
 *   the other adds `calls: <name>`. Each passes alone, on the base and on any combination without its
 *   partner; together they fail, so whichever of the two comes **second** in the queue fails, and which
 *   one that is depends on the order (two pairs have the rename first, two the caller). The pairs are
 *   spread through the queue, so failures land at the front, the middle and the end of a train.
 * - 1 **broken alone**: it calls a name nobody defines.
 * - the others add a caller of a name that is always defined.
 *
 * The base commit adds one file per pair's name (`lib-<name>.txt: def <name>`).
 */
import { passesCheck } from '../test/helpers/semantic-check.ts';

export interface TrainChange {
  /** 1-based position in the queue (the order they are queued in). */
  position: number;
  /** The source branch. */
  branch: string;
  /** What it does, for the report: `rename alpha`, `call alpha`, `broken alone`, `plain`. */
  kind: string;
  /** Files it writes (whole content); none of them is written by another change. */
  files: Record<string, string>;
}

export interface TrainWorkload {
  /** Files committed to the target before the merge requests are opened. */
  base: Record<string, string>;
  changes: TrainChange[];
}

const NAMES = ['alpha', 'beta', 'gamma', 'delta'] as const;

/**
 * Where each pair sits (1-based positions, rename and caller) and where the one broken alone sits,
 * for the default size of 20: rename first in two pairs, the caller first in the two others.
 * Other sizes scale the positions (at least 10 merge requests).
 */
const PAIRS_OF_20 = [
  { rename: 2, call: 6 },
  { call: 5, rename: 11 },
  { rename: 9, call: 15 },
  { call: 13, rename: 18 },
] as const;
const BROKEN_OF_20 = 8;

export function trainWorkload(n = 20): TrainWorkload {
  if (!Number.isInteger(n) || n < 10) throw new Error('the train workload needs at least 10 merge requests');
  const at = (position: number) => Math.max(1, Math.min(n, Math.round((position * n) / 20)));
  const kinds = new Map<number, Omit<TrainChange, 'position' | 'branch'>>();
  PAIRS_OF_20.forEach((pair, i) => {
    const name = NAMES[i]!;
    kinds.set(at(pair.rename), {
      kind: `rename ${name}`,
      files: { [`lib-${name}.txt`]: `def ${name}_v2\n` },
    });
    kinds.set(at(pair.call), { kind: `call ${name}`, files: { [`use-${name}.txt`]: `calls: ${name}\n` } });
  });
  kinds.set(at(BROKEN_OF_20), { kind: 'broken alone', files: { 'broken.txt': 'calls: nowhere\n' } });
  if (kinds.size !== 9)
    throw new Error(`the train workload of ${n} merge requests puts two changes in one place`);
  const changes: TrainChange[] = [];
  for (let position = 1; position <= n; position++) {
    const special = kinds.get(position);
    changes.push({
      position,
      branch: `train-${String(position).padStart(2, '0')}`,
      ...(special ?? { kind: 'plain', files: { [`plain-${position}.txt`]: 'calls: foo\n' } }),
    });
  }
  const base: Record<string, string> = {};
  for (const name of NAMES) base[`lib-${name}.txt`] = `def ${name}\n`;
  return { base, changes };
}

/**
 * What an ideal queue does with the workload in queue order: each change is tested on top of the
 * ones landed before it and lands when the check passes. Answers the positions that land and those
 * that fail (on `start`, the files of the target before the base: the queue world's initial files).
 */
export function idealOutcome(
  workload: TrainWorkload,
  start: Record<string, string>,
): { landed: number[]; failed: number[] } {
  const tree = new Map(Object.entries({ ...start, ...workload.base }));
  const landed: number[] = [];
  const failed: number[] = [];
  for (const change of workload.changes) {
    const next = new Map(tree);
    for (const [file, content] of Object.entries(change.files)) next.set(file, content);
    if (passesCheck(next.values())) {
      for (const [file, content] of next) tree.set(file, content);
      landed.push(change.position);
    } else failed.push(change.position);
  }
  return { landed, failed };
}

/**
 * The least a linear speculative train of `depth` cars (one merge request each) can do on a queue of
 * `n` whose `failed` positions fail: each round tests the first `depth` merge requests left, each on
 * top of the ones ahead; the round's first failure is judged once those ahead passed, they land, it
 * leaves, and every car behind it is built again in the next round (its commit held the failure). One
 * round is one CI duration. `depth: 1` is the serial queue.
 */
export function idealTrain(
  failed: readonly number[],
  n: number,
  depth: number,
): { rounds: number; ciRuns: number } {
  const failing = new Set(failed);
  const queue = Array.from({ length: n }, (_, i) => i + 1);
  let rounds = 0;
  let ciRuns = 0;
  while (queue.length > 0) {
    rounds++;
    const cars = queue.slice(0, depth);
    ciRuns += cars.length;
    const first = cars.findIndex((position) => failing.has(position));
    queue.splice(0, first < 0 ? cars.length : first + 1);
  }
  return { rounds, ciRuns };
}

/**
 * N merge requests that are all good: each writes a file of its own calling a name always defined, so
 * each passes alone and any combination passes. The flaky workload (a CI failing some runs at random:
 * every removal is a good merge request lost) and the push-mid-train workload (a source branch pushed
 * while its car waits) of bench/merge-train.bench.ts.
 */
export function goodWorkload(n: number, prefix = 'good'): TrainWorkload {
  if (!Number.isInteger(n) || n < 1) throw new Error('the good workload needs at least one merge request');
  const changes: TrainChange[] = [];
  for (let position = 1; position <= n; position++)
    changes.push({
      position,
      branch: `${prefix}-${String(position).padStart(2, '0')}`,
      kind: 'plain',
      files: { [`plain-${position}.txt`]: 'calls: foo\n' },
    });
  return { base: {}, changes };
}
