/**
 * The circuit breaker of scheduled rules. A rule that would touch more than `maxItems` items, or
 * more than `maxShare` of the items it looked at, in one project in one run, is paused: the run
 * says so and touches nothing for that rule until a person approves it (`hookbot sweep --approve
 * RULE`) or its definition changes.
 *
 * The pause is the one notion of brake (rules/item/brake.ts), shared with the echo brake of
 * hook-driven rules (rules/item/echo-brake.ts). What the store keeps (its interface has a reason per
 * pause, and times per key):
 * - the pause, whose reason ends with ` [definition <hash>]`: the definition that tripped. When
 *   the rule's definition no longer has that hash, the pause is lifted by itself;
 * - an approval per rule and definition, under the key `breaker-approved:<rule>@<hash>` of
 *   `lastSuccess` (the time of approval): an approved definition is exempt from the breaker (the
 *   per-run budget still bounds each run), so a backlog the person has seen drains run by run
 *   instead of tripping again at every run. A changed definition is not approved. An approval may
 *   come before any trip (`--approve` on a rule a dry run said would be paused): the same record,
 *   so the run that follows goes past the breaker as after a trip.
 */
import type { PausedRule } from '../state/index.ts';
import { type BrakeStore } from '../rules/index.ts';

// The pause itself (its record, the definition hash) is the one notion of brake, shared with the
// echo brake of hook-driven rules (rules/item/brake.ts).
export { definitionHash, pause, pauseReason, pausedDefinition } from '../rules/index.ts';
import { counted } from '../text/index.ts';

export interface BreakerLimits {
  /** More items than this in one project in one run trips it. Default 50. */
  maxItems: number;
  /** A larger share (0 to 1) of the items looked at trips it. Default 0.5. */
  maxShare: number;
}

export const DEFAULT_BREAKER: BreakerLimits = { maxItems: 50, maxShare: 0.5 };

const approvalKey = (rule: string, hash: string): string => `breaker-approved:${rule}@${hash}`;

export type BreakerStore = BrakeStore;

export function pauseOf(store: BreakerStore, rule: string): PausedRule | undefined {
  return store.pausedRules().find((paused) => paused.rule === rule);
}

export function isApproved(store: BreakerStore, rule: string, hash: string): boolean {
  return store.lastSuccess(approvalKey(rule, hash)) !== undefined;
}

/** Lifts the pause and exempts these definitions of the rule from the breaker. */
export async function approve(
  store: BreakerStore,
  rule: string,
  hashes: Iterable<string>,
  at: number,
): Promise<void> {
  for (const hash of new Set(hashes)) await store.setLastSuccess(approvalKey(rule, hash), at);
  await store.approveRule(rule);
}

/** Why the breaker trips for `touched` of `lookedAt` items, or undefined when it holds. */
export function tripReason(touched: number, lookedAt: number, limits: BreakerLimits): string | undefined {
  if (touched > limits.maxItems)
    return `would touch ${counted(touched, 'item')}, more than max_items ${limits.maxItems}`;
  if (lookedAt > 0 && touched / lookedAt > limits.maxShare)
    return `would touch ${touched} of ${counted(lookedAt, 'item')} (${Math.round((100 * touched) / lookedAt)}%), more than max_share ${limits.maxShare}`;
  return undefined;
}
