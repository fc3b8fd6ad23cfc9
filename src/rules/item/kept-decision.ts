/**
 * Whether a decision acted: what the store keeps apart for explain (state `recordDecision`'s
 * `acted`, docs/state.md "Decisions kept for explain"). The bot's own label, status and comment
 * fire hooks back, and each echo is evaluated and recorded; the store keeps the decisions that
 * acted beside the ring of the newest evaluations, so the echoes never push out the answer to "why
 * did it act?" (issue 30).
 *
 * This replaces an earlier special case: an evaluation that did nothing on an item the bot had
 * merged, closed or moved was not recorded, so that it would not hide the decision that ended the
 * item. Every evaluation is recorded now, and the decision that ended the item is kept as one that
 * acted.
 *
 * A decision acted when any of its calls (the superseded first round's included) was anything but
 * `skipped` (the effect already held): made (`done`), tried and failed (`failed`, `ambiguous`, and
 * parked with the reason), withdrawn from the outbox (`withdrawn`), or shown in a dry run
 * (`dry-run`); or when it took the item out of its merge queue.
 */
/** What of a decision tells (process-item.ts `Decision`, or one read back from the store). */
interface ActingShape {
  execution: { calls: readonly { status: string }[] };
  superseded?: { execution: { calls: readonly { status: string }[] } };
  leftQueue?: string;
}

export function decisionActed(decision: ActingShape): boolean {
  if (decision.leftQueue !== undefined) return true;
  const calls = [...decision.execution.calls, ...(decision.superseded?.execution.calls ?? [])];
  return calls.some((call) => call.status !== 'skipped');
}
