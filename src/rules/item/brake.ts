/**
 * The one notion of brake shared by the scheduler's circuit breaker (scheduler/breaker.ts: a
 * scheduled rule that would touch too many items) and the echo brake (echo-brake.ts: a rule that
 * keeps writing to an item after its own changes). A brake is a pause in the store
 * (`store.pauseRule(key, reason)`), kept across restarts and shared by replicas, whose reason ends
 * with ` [definition <hash>]`: the definition of the rule that tripped it. It is lifted by a person
 * (`hookbot sweep --once --approve RULE`) or by a change of the rule's definition (no definition of
 * the rule has that hash any more).
 */
import { createHash } from 'node:crypto';
import type { PausedRule, StateStore } from '../../state/index.ts';
import type { CompiledRule } from '../engine/compile.ts';

export type BrakeStore = Pick<
  StateStore,
  'pausedRules' | 'pauseRule' | 'approveRule' | 'lastSuccess' | 'setLastSuccess'
>;

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

/** Pauses under `key` (a rule's name, or an echo brake's key), recording the definition that tripped. */
export async function pause(store: BrakeStore, key: string, hash: string, reason: string): Promise<void> {
  await store.pauseRule(key, `${reason} [definition ${hash}]`);
}
