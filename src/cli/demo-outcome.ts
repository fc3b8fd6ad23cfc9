/**
 * What the bot did instead, for a step of the demo that does not see what it waits for: with
 * `--rules DIR` the steps still expect the example rules' behaviour, and "timed out" told nothing.
 * Read from the bot's own state: the pause of the rule (the circuit breaker, the echo brake), the
 * parked actions of the item, or the latest decision on it (the rule did not apply, did not match,
 * or matched and its calls did not do it), or that no rule of that name is in force.
 *
 * `settled` answers at once when the outcome is known before the wait ends, and the step fails then
 * instead of waiting out its timeout: the rule is paused, an action of it parked, or the bot has
 * already decided on the step's own change and the rule did not apply, did not match or is not in
 * force, with nothing left to come (that decision acted on nothing that could send a hook back, and
 * no delivery is in the bot's pipeline). Before, only a pause or a parked action ended
 * the wait: with rules of one's own, each step that no rule could act on waited 15 s for nothing.
 */
import type { Decision } from '../rules/index.ts';
import { echoPauseOf, pauseReason } from '../rules/index.ts';
import type { Runtime } from '../start-from-config.ts';
import { counted } from '../text/index.ts';

export interface Expectation {
  /** The rule the step expects to act. */
  rule: string;
  /** The project whose rules it is in. */
  project: string;
  /** The item it acts on (`issue:<project id>:<id>`), once the step knows it. */
  itemKey?: string;
  /**
   * When the step made the change the rule should act on (ms since the epoch): a decision recorded
   * since then is the bot's answer to it. Absent: only a pause, a parked action or a missing rule end the wait early.
   */
  since?: number;
}

type Parts = Pick<Runtime, 'store' | 'rules'> & { bot: { pipeline: { depth(): number } } };

/** The pause that holds the rule back (the breaker's, or the echo brake's in the project), in words. */
function pauseOf(runtime: Parts, expected: Expectation): string | undefined {
  for (const paused of runtime.store.pausedRules()) {
    const echo = echoPauseOf(paused);
    if (echo === undefined && paused.rule === expected.rule)
      return `your rule "${expected.rule}" was paused by the circuit breaker: ${pauseReason(paused)} (hookbot sweep --once --approve "${expected.rule}" approves it)`;
    if (echo !== undefined && echo.rule === expected.rule && echo.project === expected.project)
      return `your rule "${expected.rule}" was paused by the echo brake in ${echo.project}: ${pauseReason(paused)}`;
  }
  return undefined;
}

/** Actions of the rule on the item that were given up (parked), in words. */
function parkedOf(runtime: Parts, expected: Expectation): string | undefined {
  if (expected.itemKey === undefined) return undefined;
  const parked = runtime.store
    .listParked()
    .filter(
      (action) => action.itemKey === expected.itemKey && action.rule.split(', ').includes(expected.rule),
    );
  if (parked.length === 0) return undefined;
  return `your rule "${expected.rule}" matched, but the bot gave up ${counted(parked.length, 'action')} of it (parked): ${parked.map((action) => action.parked?.reason ?? action.lastError ?? 'parked').join('; ')}`;
}

/** That no rule of the expected name is in force for the project, in words. */
function missingRule(runtime: Pick<Runtime, 'rules'>, expected: Expectation): string | undefined {
  const { rule, project } = expected;
  const names = runtime.rules.forProject(project).rules.map((compiled) => compiled.name);
  if (names.includes(rule)) return undefined;
  return `no rule named "${rule}" is in force for ${project} (the demo's steps follow the example rules; yours are ${names.map((name) => `"${name}"`).join(', ') || 'none'})`;
}

/**
 * The bot's answer to the step's change when it cannot act any more: a decision recorded since the
 * change in which the rule did not apply or did not match, that itself acted on nothing (an action
 * of another rule could bring a hook back, and the rule match on it), with no delivery left in the
 * pipeline. Undefined otherwise (no answer yet, or the rule matched: its calls may still be on their way).
 */
function decidedAgainst(runtime: Parts, expected: Expectation): string | undefined {
  const { itemKey, since, rule } = expected;
  if (itemKey === undefined || since === undefined) return undefined;
  const record = runtime.store.latestDecision(itemKey);
  if (record === undefined || record.at < since || record.acted) return undefined;
  if (runtime.bot.pipeline.depth() > 0) return undefined;
  const evaluation = (record.decision as Decision).evaluation.rules.find((r) => r.rule === rule);
  if (evaluation?.matched) return undefined;
  return whatTheBotDid(runtime, expected);
}

/** The outcome, when it is known before the wait ends; undefined while waiting may still see it. */
export function settled(runtime: Parts, expected: Expectation): string | undefined {
  return pauseOf(runtime, expected) ?? parkedOf(runtime, expected) ?? decidedAgainst(runtime, expected);
}

/** What the bot did instead, once a wait ended without the expected effect. */
export function whatTheBotDid(runtime: Parts, expected: Expectation): string {
  const known = pauseOf(runtime, expected) ?? parkedOf(runtime, expected) ?? missingRule(runtime, expected);
  if (known !== undefined) return known;
  const { rule, itemKey } = expected;
  if (itemKey === undefined) return `the bot did not act with rule "${rule}"`;
  const latest = runtime.store.latestDecision(itemKey)?.decision as Decision | undefined;
  if (latest === undefined) return `the bot recorded no decision on this item: did the hook reach it?`;
  const evaluation = latest.evaluation.rules.find((r) => r.rule === rule);
  const on = `on ${latest.evaluation.event}`;
  if (evaluation === undefined) return `${on}, the bot did not evaluate rule "${rule}"`;
  if (!evaluation.applies) return `${on}, your rule "${rule}" does not apply: ${evaluation.why}`;
  if (!evaluation.matched) {
    const unmet = evaluation.conditions
      .filter((condition) => !condition.ok)
      .map((condition) => `${condition.describe} (seen ${JSON.stringify(condition.value)})`);
    return `${on}, your rule "${rule}" did not match: ${unmet.join('; ') || 'no condition failed'}`;
  }
  const calls = latest.execution.calls.filter((call) => call.rule.split(', ').includes(rule));
  return `${on}, your rule "${rule}" matched; ${calls.length === 0 ? 'it planned no call' : `${counted(calls.length, 'call')}: ${calls.map((call) => `${call.status}: ${call.call}`).join('; ')}`}`;
}
