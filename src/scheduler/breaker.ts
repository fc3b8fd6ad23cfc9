/**
 * The circuit breaker of scheduled rules. A rule that would touch more than `maxItems` items, or
 * more than `maxShare` of the items it looked at, in one project in one run, is paused: the run
 * says so and touches nothing for that rule until a person approves it (`hookbot sweep --approve
 * RULE`) or its definition changes.
 *
 * What the store keeps (its interface has a reason per pause, and times per key):
 * - the pause, whose reason ends with ` [definition <hash>]`: the definition that tripped. When
 *   the rule's definition no longer has that hash, the pause is lifted by itself;
 * - an approval per rule and definition, under the key `breaker-approved:<rule>@<hash>` of
 *   `lastSuccess` (the time of approval): an approved definition is exempt from the breaker (the
 *   per-run budget still bounds each run), so a backlog the person has seen drains run by run
 *   instead of tripping again at every run. A changed definition is not approved.
 */
import { createHash } from 'node:crypto';
import type { PausedRule, StateStore } from '../state/index.ts';
import type { CompiledRule } from '../rules/index.ts';
import { counted } from '../text/index.ts';

export interface BreakerLimits {
  /** More items than this in one project in one run trips it. Default 50. */
  maxItems: number;
  /** A larger share (0 to 1) of the items looked at trips it. Default 0.5. */
  maxShare: number;
}

export const DEFAULT_BREAKER: BreakerLimits = { maxItems: 50, maxShare: 0.5 };

/**
 * A short hash of what the rule does: its triggers, scope, every condition and action as the
 * engine describes them (parameters included). Compiled rules do not keep their YAML, so the
 * descriptions stand for it; a comment's text is cut in its description, so editing only the end of
 * a long comment does not count as a new definition.
 */
export function definitionHash(rule: CompiledRule): string {
  const definition = {
    name: rule.name,
    events: rule.events,
    schedule: rule.schedule,
    scope: rule.scope,
    allowBot: rule.allowBot,
    conditions: rule.conditions.map((condition) => condition.describe),
    actions: rule.actions.map((action) => action.describe),
    summaryStatus: rule.summaryStatus,
  };
  return createHash('sha256').update(JSON.stringify(definition)).digest('hex').slice(0, 12);
}

const DEFINITION = / \[definition ([0-9a-f]{12})\]$/;

/** The hash recorded with a pause, if any (pauses made elsewhere carry none). */
export function pausedDefinition(paused: PausedRule): string | undefined {
  return DEFINITION.exec(paused.reason)?.[1];
}

/** The reason as people should read it (without the hash). */
export function pauseReason(paused: PausedRule): string {
  return paused.reason.replace(DEFINITION, '');
}

const approvalKey = (rule: string, hash: string): string => `breaker-approved:${rule}@${hash}`;

export type BreakerStore = Pick<
  StateStore,
  'pausedRules' | 'pauseRule' | 'approveRule' | 'lastSuccess' | 'setLastSuccess'
>;

export function pauseOf(store: BreakerStore, rule: string): PausedRule | undefined {
  return store.pausedRules().find((paused) => paused.rule === rule);
}

export function isApproved(store: BreakerStore, rule: string, hash: string): boolean {
  return store.lastSuccess(approvalKey(rule, hash)) !== undefined;
}

export async function pause(store: BreakerStore, rule: string, hash: string, reason: string): Promise<void> {
  await store.pauseRule(rule, `${reason} [definition ${hash}]`);
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
