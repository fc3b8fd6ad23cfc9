/** Shared by the rule tests: fixtures of snapshots, and one condition or action run alone. */
import { readFileSync } from 'node:fs';
import {
  compileAction,
  compileRules,
  createConditionTools,
  type CompiledRuleSet,
} from '../../src/rules/engine/compile.ts';
import type { PlanOutcome } from '../../src/rules/engine/define-action.ts';
import type { Guarantee, Verdict } from '../../src/rules/engine/define-condition.ts';
import { createEvalInput } from '../../src/rules/engine/eval-input.ts';
import { parseRuleFile } from '../../src/rules/grammar/parse-file.ts';
import { formatProblem } from '../../src/rules/grammar/problem.ts';
import { actionSchema, conditionSchema } from '../../src/rules/grammar/schema.ts';
import type { ItemSnapshot, IssueSnapshot, MergeRequestSnapshot } from '../../src/rules/engine/snapshot.ts';

/** The clock of every test evaluation. */
export const NOW = Date.parse('2016-03-20T00:00:00.000Z');

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../fixtures/snapshots/${name}.json`, import.meta.url), 'utf8'));

export type IssueFixture = 'issue-open' | 'issue-stale';
export type MergeRequestFixture = 'mr-green' | 'mr-pending' | 'mr-no-status' | 'mr-unread' | 'note-command';

export function issue(name: IssueFixture, changes: Partial<IssueSnapshot> = {}): IssueSnapshot {
  return { ...(fixture(name) as IssueSnapshot), ...changes };
}

export function mergeRequest(
  name: MergeRequestFixture,
  changes: Partial<MergeRequestSnapshot> = {},
): MergeRequestSnapshot {
  return { ...(fixture(name) as MergeRequestSnapshot), ...changes };
}

/** Validates a condition as a rule file would, compiles it, evaluates it once. */
export function runCondition(spec: unknown, snapshot: ItemSnapshot, now = NOW): Verdict {
  const parsed = conditionSchema.parse(spec);
  return createConditionTools().compileCondition(parsed).evaluate(createEvalInput(snapshot, now));
}

export function describeCondition(spec: unknown): string {
  return createConditionTools().describeCondition(conditionSchema.parse(spec));
}

/** Validates an action as a rule file would, compiles it, plans it as if its rule matched. */
export function runAction(
  spec: unknown,
  snapshot: ItemSnapshot,
  guarantees: readonly Guarantee[] = [],
  rule = 'test rule',
  /** As a rule of a project's own `.hookbot.yml`. */
  fromRepository = false,
): PlanOutcome {
  return compileAction(actionSchema.parse(spec)).plan(createEvalInput(snapshot, NOW), {
    rule,
    guarantees,
    ...(fromRepository ? { fromRepository } : {}),
  });
}

export function runActionUnmatched(spec: unknown, snapshot: ItemSnapshot): PlanOutcome | null {
  const action = compileAction(actionSchema.parse(spec));
  return (
    action.planUnmatched?.(createEvalInput(snapshot, NOW), { rule: 'test rule', guarantees: [] }) ?? null
  );
}

/** A rule set from YAML text; fails the test on any problem. */
export function rulesFrom(text: string, file = 'rules/default.yml'): CompiledRuleSet {
  const parsed = parseRuleFile(text, file);
  if (!parsed.spec) throw new Error(parsed.problems.map(formatProblem).join('\n'));
  return compileRules([{ file, rules: parsed.spec.rules }]);
}
