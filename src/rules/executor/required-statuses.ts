/**
 * The required status names of a merge rule, for the merge watch. The plan does not carry them
 * (`mergeRequests.mergeWhenBuildSucceeds` args are target, sha and branch removal only), so they
 * come from the rule itself: preferably from the compiled rule's guarantees, exactly as the
 * `merge_when_build_succeeds` action computed them; else from the evaluation's record of the
 * rule's `statuses` conditions that held (the keys of their value: one per required name).
 */
import { requiredStatuses } from '../actions/merge-safety.ts';
import type { CompiledRuleSet } from '../engine/compile.ts';
import type { ConditionResult, Guarantee } from '../engine/define-condition.ts';
import type { Evaluation } from '../engine/engine.ts';

const STATUSES_DESCRIBE = /^statuses .* are pending or running/;

/** Required names for `state` of the rule named `rule`, or undefined when nothing says. */
export function requiredStatusesOf(
  rule: string,
  state: Guarantee['state'],
  evaluation: Evaluation,
  rules?: CompiledRuleSet,
): string[] | undefined {
  const compiled = rules?.rules.find((candidate) => candidate.name === rule);
  if (compiled)
    return requiredStatuses(
      compiled.conditions.flatMap((condition) => condition.guarantees),
      state,
    );
  if (state !== 'pending') return undefined;
  const record = evaluation.rules.find((candidate) => candidate.rule === rule);
  if (!record?.matched) return undefined;
  const names = new Set<string>();
  const visit = (condition: ConditionResult): void => {
    const value = condition.value;
    if (condition.ok && STATUSES_DESCRIBE.test(condition.describe) && value && typeof value === 'object')
      for (const name of Object.keys(value)) names.add(name);
    // Only `all` passes its children's guarantees on; `any` and `not` prove nothing about them.
    if (condition.ok && condition.describe.startsWith('all of (')) condition.children?.forEach(visit);
  };
  record.conditions.forEach(visit);
  return names.size > 0 ? [...names] : undefined;
}
