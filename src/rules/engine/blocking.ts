/**
 * What holds a rule back, in one sentence: the description of a summary commit status (the
 * server's descriptions are short; 140 characters reads whole in its UI).
 */
import type { ConditionResult } from './define-condition.ts';
import type { RuleEvaluation } from './evaluation.ts';
import { showValue } from './show-value.ts';

export const MAX_SENTENCE = 140;

function truncate(text: string): string {
  return text.length > MAX_SENTENCE ? `${text.slice(0, MAX_SENTENCE - 1)}…` : text;
}

function failing(condition: ConditionResult): string {
  if (condition.unknown)
    return `${condition.describe} (unknown${condition.note ? `: ${condition.note}` : ''})`;
  return `${condition.describe} (seen ${showValue(condition.value, 40)})`;
}

/** As many whole reasons as fit, then how many more; cut only when the first alone is too long. */
function fit(prefix: string, reasons: readonly string[]): string {
  for (let count = reasons.length; count > 0; count--) {
    const more = reasons.length - count;
    const text = `${prefix}${reasons.slice(0, count).join('; ')}${more > 0 ? `; +${more} more` : ''}`;
    if (text.length <= MAX_SENTENCE) return text;
  }
  return truncate(`${prefix}${reasons[0] ?? ''}`);
}

export function blockingSentence(rule: RuleEvaluation): string {
  if (!rule.applies) return truncate(`not evaluated: ${rule.why ?? 'the rule does not apply'}`);
  const unmet = rule.conditions.filter((condition) => !condition.ok);
  if (unmet.length > 0) return fit('blocked: ', unmet.map(failing));
  const held = rule.actions.filter((action) => action.blocks);
  if (held.length > 0)
    return fit(
      'blocked: ',
      held.map((action) => action.skipped ?? ''),
    );
  return 'ready: every condition holds';
}
