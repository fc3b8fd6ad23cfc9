/**
 * The window of a `depth: auto` merge train (docs/merge-queue.md#depth-auto-a-window-that-follows-the-ci),
 * Zuul's dependent pipeline window: it starts at its lower bound, grows by one car per car landed and
 * halves after a car that failed (its statuses or its timeout), never out of its bounds. So a train
 * whose cars land spends more of the CI at once, and one whose cars fail spends less on cars that a
 * failure ahead of them would have thrown away.
 *
 * The window is the queue's state: recorded on every entry of the queue (`trainWindow`, like
 * `trainCiMs`), so a restart, another replica that drives the train next, the status page and
 * explain all read the same one (state/queue-order.ts `queueShape`). A queue that empties starts
 * again at its lower bound.
 */
import { short, type TrainRun } from './train-run.ts';

async function moveWindow(run: TrainRun, to: (window: number) => number, why: string): Promise<void> {
  const bounds = run.auto;
  if (!bounds) return;
  const before = run.depth;
  const next = Math.max(bounds.min, Math.min(bounds.max, to(before)));
  run.depth = next;
  for (const entry of run.queueNow())
    if (entry.trainWindow !== next) await run.patch(entry.itemKey, (e) => ({ ...e, trainWindow: next }));
  if (next !== before)
    run.deps.log.info(
      { sweep: 'merge_queue', queue: run.head.queue, target: run.head.targetBranch, from: before, to: next },
      `merge train: depth auto ${before} -> ${next} (${bounds.min}..${bounds.max}): ${why}`,
    );
}

/** `landed` cars landed in one push: the window grows by one per car. */
export function growAfterLanding(run: TrainRun, landed: number, sha: string | undefined): Promise<void> {
  return moveWindow(run, (w) => w + landed, `${landed} car(s) landed at ${short(sha)}`);
}

/** The window put back to `depth` (a landing recorded that did not land). */
export function windowTo(run: TrainRun, depth: number): Promise<void> {
  return moveWindow(run, () => depth, 'a landing recorded did not land');
}

/** The front car failed: the window halves (cars built behind a failure are thrown away). */
export function shrinkAfterFailure(run: TrainRun, sha: string | undefined): Promise<void> {
  return moveWindow(run, (w) => Math.floor(w / 2), `the car ${short(sha)} failed`);
}
