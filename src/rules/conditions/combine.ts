/** Three-valued combination of nested verdicts, shared by `all`, `any` and `not`. */
import type { CompiledCondition, ConditionResult, Verdict } from '../engine/define-condition.ts';
import type { EvalInput } from '../engine/eval-input.ts';

/**
 * The verdict becomes the record: evaluators return a fresh object each time (define-condition.ts),
 * so it gets its description in place rather than being copied, once per condition per event.
 */
export function resultOf(describe: string, verdict: Verdict): ConditionResult {
  const result = verdict as ConditionResult;
  result.describe = describe;
  return result;
}

export function evaluateChildren(
  children: readonly CompiledCondition[],
  input: EvalInput,
): ConditionResult[] {
  const results = new Array<ConditionResult>(children.length);
  for (let i = 0; i < children.length; i++) {
    const child = children[i]!;
    results[i] = resultOf(child.describe, child.evaluate(input));
  }
  return results;
}

/** Every child holds: false if one is known false, else unknown if one is unknown. */
export function allOf(results: ConditionResult[]): Verdict {
  const held = results.filter((r) => r.ok).length;
  const ok = held === results.length;
  const unknown = !ok && !results.some((r) => !r.ok && !r.unknown);
  // `unknown: undefined` rather than a spread: one object per verdict, not two (the record's JSON
  // is the same, undefined keys are not written).
  return { value: `${held} of ${results.length} hold`, ok, unknown: unknown || undefined, children: results };
}

/** Some child holds: true if one holds, else unknown if one is unknown. */
export function anyOf(results: ConditionResult[]): Verdict {
  const held = results.filter((r) => r.ok).length;
  const ok = held > 0;
  const unknown = !ok && results.some((r) => r.unknown);
  return { value: `${held} of ${results.length} hold`, ok, unknown: unknown || undefined, children: results };
}
