/**
 * The retry sweep: outbox actions that are due (a retryable failure whose backoff has passed, or
 * one whose lease ran out because the process died while carrying it out) are run again, item by
 * item. A retry re-evaluates first (rules/item/process-item.ts `retry`): the item is read afresh and
 * evaluated with the rules in force now, under the trigger that planned the action; the action is
 * sent again only if that fresh plan still holds it, else it is withdrawn with the reason. A sweep's
 * action (the merge watch's merge, the merge queue's merges and comments) is no rule's plan: it is
 * sent as stored, behind its own gate (the fresh check before a merge). The handlers' own re-checks
 * still apply, so an action that did take effect is not done twice.
 *
 * The policy lives in the executor (rules/executor/executor.ts): exponential backoff with jitter (30 s
 * doubling to 30 min by default, each delay drawn between half and all of it, so actions that
 * failed together do not come back together), and after `maxAttempts` tries the action is parked
 * with a visible reason (logs, `store.listParked()`, and this report).
 *
 * While the server is still down, trying every due action would only pile up failures: after a
 * few transient failures in a row the run stops, and the rest waits for the next run.
 */
import type { OutboxAction, StateStore } from '../../state/index.ts';
import type { SweepLog, SweepRunOptions } from '../types.ts';
import { counted } from '../../text/index.ts';
import type { CallReport, CallStatus, Executor, ItemRetryFn } from '../../rules/index.ts';

export interface RetryDeps {
  store: Pick<StateStore, 'listParked'>;
  executor: Executor;
  /** Re-evaluates an item and retries or withdraws its due actions; without it, each action is retried as stored. */
  retryItem?: ItemRetryFn;
  now: () => number;
  log: SweepLog;
}

export interface RetryOptions extends SweepRunOptions {
  /** Actions tried at most per run. Default 500. */
  limit?: number;
  /** Items in a row whose retries failed transiently that end the run early. Default 3. */
  stopAfterFailures?: number;
}

export interface RetryReport {
  sweep: 'retries';
  dryRun: boolean;
  /** Due when the run started. */
  due: number;
  calls: CallReport[];
  counts: Record<CallStatus, number>;
  /** Parked by this run (the limit of tries reached, or a failure no retry can fix). */
  parkedNow: { id: string; reason: string }[];
  /** Parked actions held in all, waiting for a person. */
  parked: number;
  /** Why the run ended before the due actions did. */
  stoppedEarly?: string;
  aborted: boolean;
}

const isTransient = (call: CallReport): boolean =>
  call.status === 'ambiguous' ||
  (call.status === 'failed' && call.retryable === true && call.parked === undefined);

export async function runRetries(deps: RetryDeps, options: RetryOptions = {}): Promise<RetryReport> {
  const { store, executor, log } = deps;
  const limit = options.limit ?? 500;
  const stopAfter = options.stopAfterFailures ?? 3;
  const due = executor.dueActions(deps.now());
  const report: RetryReport = {
    sweep: 'retries',
    dryRun: executor.dryRun,
    due: due.length,
    calls: [],
    counts: { done: 0, skipped: 0, failed: 0, ambiguous: 0, withdrawn: 0, 'dry-run': 0 },
    parkedNow: [],
    parked: 0,
    aborted: false,
  };
  async function retryOne(itemKey: string, actions: OutboxAction[]): Promise<CallReport[]> {
    if (!deps.retryItem) {
      const calls: CallReport[] = [];
      for (const action of actions) calls.push(await executor.retryAction(action));
      return calls;
    }
    try {
      return await deps.retryItem(itemKey, actions);
    } catch (error) {
      // The fresh read failed (the server is away): nothing was sent; each action backs off.
      const message = error instanceof Error ? error.message : String(error);
      log.warn({ sweep: 'retries', itemKey, err: message }, 'retries: could not re-evaluate the item');
      const calls: CallReport[] = [];
      for (const action of actions) calls.push(await executor.deferAction(action, message));
      return calls;
    }
  }

  let failuresInARow = 0;
  const taken = due.slice(0, limit);
  // One fresh evaluation per item, for all of its due actions.
  const byItem = new Map<string, OutboxAction[]>();
  for (const action of taken) {
    const list = byItem.get(action.itemKey);
    if (list) list.push(action);
    else byItem.set(action.itemKey, [action]);
  }
  for (const [itemKey, actions] of byItem) {
    if (options.signal?.aborted) {
      report.aborted = true;
      break;
    }
    // One run of the item at a time: a hook run on it waits for the retries, and they for it.
    const calls = await executor.runs.run(itemKey, () => retryOne(itemKey, actions));
    for (const call of calls) {
      report.calls.push(call);
      report.counts[call.status]++;
      if (call.parked !== undefined) report.parkedNow.push({ id: call.id, reason: call.parked });
    }
    // Counted per item: one fresh read serves all of an item's actions.
    failuresInARow = calls.some(isTransient) ? failuresInARow + 1 : 0;
    options.onProgress?.({ sweep: 'retries', scope: 'due actions', items: report.calls.length, pages: 0 });
    if (failuresInARow >= stopAfter && report.calls.length < due.length) {
      const last = report.calls.at(-1);
      report.stoppedEarly = `${counted(failuresInARow, 'item')} in a row failed transiently (last: ${last?.error ?? last?.detail ?? 'unknown'}); the rest waits for the next run`;
      log.warn(
        { sweep: 'retries', remaining: due.length - report.calls.length },
        'retries: server still failing, run ended early',
      );
      break;
    }
  }
  if (due.length > limit && report.stoppedEarly === undefined && !report.aborted)
    report.stoppedEarly = `${counted(due.length - limit, 'due action')} over the per-run limit of ${limit} ${due.length - limit === 1 ? 'waits' : 'wait'} for the next run`;
  report.parked = store.listParked().length;
  return report;
}
