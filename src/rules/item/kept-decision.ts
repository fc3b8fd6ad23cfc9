/**
 * Which decision explain keeps for an item that the bot merged, closed or moved. Events about the
 * item that arrived while the run that merged it was going on run it once more afterwards (one run
 * at a time: executor/lock.ts), and that run finds it merged: no rule matches any more, nothing is
 * done. Recorded, that evaluation would hide the one that merged it, and explain would answer "merge
 * when green: did not match (state is opened seen merged)" to whoever asks why it was merged.
 *
 * So an evaluation that did nothing at all (no call, nothing withdrawn, no queue left) on an item
 * that is no longer open does not replace a decision that merged, closed or moved the item. Any
 * evaluation that does something (a reopened item relabelled, a comment) is recorded as usual, and
 * so is every evaluation of an item the bot did not end itself.
 */
import type { CallReport } from '../executor/executor.ts';

interface RecordedDecision {
  dryRun?: boolean;
  execution?: { calls?: readonly Partial<CallReport>[] };
}

interface NextDecision {
  dryRun: boolean;
  evaluation: { item: { state: string } };
  execution: { calls: readonly CallReport[] };
  superseded?: unknown;
  leftQueue?: string;
}

const isOpenState = (state: string): boolean => state === 'opened' || state === 'reopened';

/** Did this call end the item: a merge, a close, a move (done, not described or skipped)? */
function ended(call: Partial<CallReport>): boolean {
  if (call.status !== 'done') return false;
  return call.op === 'mergeRequests.merge' || call.action === 'close' || call.action === 'move';
}

/** True when `next` must not replace `previous` (the recorded decision, as stored) for explain. */
export function keepsEarlierDecision(previous: unknown, next: NextDecision): boolean {
  if (next.dryRun || next.superseded !== undefined || next.leftQueue !== undefined) return false;
  if (next.execution.calls.length > 0 || isOpenState(next.evaluation.item.state)) return false;
  if (previous === null || typeof previous !== 'object') return false;
  const recorded = previous as RecordedDecision;
  if (recorded.dryRun === true) return false;
  return (recorded.execution?.calls ?? []).some(ended);
}
