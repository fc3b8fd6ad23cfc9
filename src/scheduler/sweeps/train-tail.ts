/**
 * A merge train run's tail (docs/merge-queue.md#a-runs-tail-and-news-during-a-run): what is left once the run pushed its
 * cars. The heads of the next cars fetched ahead, the landed merge requests read again until the
 * server shows them merged, the branches given up deleted (the train's folder listed after a landing).
 * None of it holds up a push, but the sweep's next run waits for the run in progress to end
 * (scheduler.ts `wake`), and the statuses of a round often come in two waves: the second wave's hook
 * would wait for the first wave's tail (up to a second and a half, most of it the reads again).
 *
 * So a tail that hears news (a wake came during the run, `TrainDeps.news`: the next run follows at
 * once) leaves what is left of it to the next run of its queue, which does it in its own tail:
 *   - the fetch ahead is not waited for: it goes on in the git cache, under the repository's lock,
 *     where the next run's builds wait for it and use what it fetched;
 *   - merge requests not shown merged yet are read again by the next run (the reads are counted
 *     across runs: every run reads them at least once, so none waits past LANDED_READS runs);
 *   - the branches given up, and the listing of the folder, are the next run's: it starts from them
 *     (its pushes lease those branches on the commits they still hold) and deletes them at its end.
 *     A run that took a tail over finishes its own cleanup whatever news comes: a cleanup waits for
 *     one run at most.
 * A queue whose next run does not drive it (emptied, paused, serial meanwhile) has the tail it left
 * finished at the end of that sweep run (merge-queue.ts; one it cannot finish is dropped, and logged). A tail lives in memory: after a crash or a
 * stop, what it held is deleted by the queue's next landing run, which lists the folder.
 */
import { once } from 'node:events';
import { queueKeyOf } from '../../state/index.ts';
import type { CarriedTail, TrainDeps, TrainStep, TrainTails } from './train-deps.ts';
import type { TrainRun } from './train-run.ts';
import { startTrainRun } from './train-run.ts';
import { confirmLanded } from './train-land.ts';
import { fetchAhead } from './train-build.ts';
import { deleteCarBranches } from './train-cleanup.ts';

export function createTrainTails(): TrainTails {
  return new Map();
}

const keyOf = (run: Pick<TrainRun, 'head'>): string =>
  queueKeyOf(run.head.project, run.head.targetBranch, run.head.queue);

/**
 * The tail an earlier run of this queue left, taken over at the start of the run (under the train's
 * lock, before anything is built): its branches given up join the run's, unless the run knows them
 * already.
 */
export function takeOverTail(run: TrainRun): void {
  const tails = run.deps.tails;
  const carried = tails?.get(keyOf(run));
  if (!carried) return;
  tails!.delete(keyOf(run));
  run.tookOver = true;
  for (const [branch, sha] of carried.stale) if (!run.stale.has(branch)) run.stale.set(branch, sha);
  if (carried.list) run.list = true;
  run.unconfirmed.push(...carried.unconfirmed);
}

/**
 * The run's tail: the landed merge requests confirmed and the next heads fetched ahead, side by side,
 * then the branches given up deleted (`cleanUp`: unless the target refused the bot). With news, what
 * is left goes to the next run (above).
 */
export async function finishTail(run: TrainRun, cleanUp: boolean, pushed: boolean): Promise<void> {
  const { tails } = run.deps;
  // News counts only where a tail can be kept for the next run.
  const news = tails ? run.deps.news : undefined;
  const fetching = pushed ? fetchAhead(run) : undefined;
  const open = await confirmLanded(run, news);
  if (fetching) await untilNews(fetching, news);
  const carry: Omit<CarriedTail, 'head'> = { stale: new Map(), list: false, unconfirmed: open };
  // A cleanup this run took over is done now, news or not (it waits for one run at most).
  const leave = news?.aborted === true && !run.tookOver;
  if (cleanUp && !leave) await cleanUpBranches(run);
  // Left to the next run: with news, or, for a cleanup this run took over, when the target refused
  // the bot (no cleanup now: the next run does it, as the run before would have).
  else if (cleanUp || run.tookOver) cleanupOf(run, carry);
  keep(run, carry);
}

/**
 * A run that took a tail over and then failed (a read that threw): what it held of the tail, and what
 * it added (landed merge requests to confirm), goes back for the next run, which finishes it.
 */
export function giveBackTail(run: TrainRun): void {
  const carry: Omit<CarriedTail, 'head'> = {
    stale: new Map(),
    list: false,
    unconfirmed: run.unconfirmed.splice(0),
  };
  cleanupOf(run, carry);
  keep(run, carry);
}

function cleanupOf(run: TrainRun, carry: Omit<CarriedTail, 'head'>): void {
  const holding = heldBranches(run);
  for (const [branch, sha] of run.stale) if (!holding.has(branch)) carry.stale.set(branch, sha);
  carry.list = needsListing(run);
}

/**
 * What is left kept for the next run of the queue. Nothing is kept for it already: the run took over
 * what was (`takeOverTail`, first thing, under the train's lock).
 */
function keep(run: TrainRun, carry: Omit<CarriedTail, 'head'>): void {
  const { tails } = run.deps;
  if (tails && (carry.stale.size > 0 || carry.list || carry.unconfirmed.length > 0)) {
    run.deps.log.info(
      {
        sweep: 'merge_queue',
        queue: keyOf(run),
        branches: carry.stale.size,
        list: carry.list,
        unconfirmed: carry.unconfirmed.length,
      },
      'merge train: news came during the run; its tail is left to the next run',
    );
    tails.set(keyOf(run), { head: run.head, ...carry });
  }
}

/**
 * A tail left by a run whose queue the next sweep run did not drive (emptied, paused or serial
 * meanwhile): finished now, under the train's lock (the caller's).
 */
export async function finishLeftTail(deps: TrainDeps, carried: CarriedTail): Promise<TrainStep[]> {
  // No news here: nothing would take what is left over.
  const { news: _news, ...rest } = deps;
  const run = await startTrainRun(rest, carried.head, { depth: 1, batch: 1 });
  takeOverTail(run);
  await finishTail(run, true, false);
  return run.steps;
}

/** `work`, or less when news comes first (it goes on, unawaited: the fetch ahead catches its own errors). */
async function untilNews(work: Promise<void>, news: AbortSignal | undefined): Promise<void> {
  if (!news) return work;
  if (news.aborted) return;
  const done = new AbortController();
  try {
    await Promise.race([work, once(news, 'abort', { signal: done.signal })]);
  } finally {
    done.abort();
  }
}

function heldBranches(run: TrainRun): Set<string> {
  return new Set(run.queueNow().flatMap((e) => (e.car ? [e.car.branch] : [])));
}

/** The folder is listed after a landing, a car given up, or a merge request taken out (train-cleanup.ts). */
function needsListing(run: TrainRun): boolean {
  return (
    run.list ||
    run.stale.size > 0 ||
    run.steps.some((s) => s.outcome === 'dropped' || s.outcome === 'removed')
  );
}

async function cleanUpBranches(run: TrainRun): Promise<void> {
  const { deps, head } = run;
  await deleteCarBranches({
    updater: deps.updater,
    targetUrl: run.targetUrl,
    log: deps.log,
    stale: run.stale,
    holding: heldBranches(run),
    ...(needsListing(run) ? { list: { targetBranch: head.targetBranch, queue: head.queue } } : {}),
  });
}
