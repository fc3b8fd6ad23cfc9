/**
 * Explain: every evaluation says, per rule, whether it applied and matched, each condition with
 * the value seen and its verdict, and the plan. Text for people (`hookbot explain`), JSON for
 * `GET /explain/...`, and a one-line sentence for summary commit statuses.
 */
import { blockingSentence } from './blocking.ts';
import type { ConditionResult } from './define-condition.ts';
import type { ActionRecord, Evaluation, RuleEvaluation } from './engine.ts';
import type { ApiCall, PlannedCall } from './planned-call.ts';
import { showValue } from './show-value.ts';

const mark = (condition: ConditionResult): string => (condition.ok ? '✓' : condition.unknown ? '?' : '✗');

function conditionLines(condition: ConditionResult, depth: number): string[] {
  const indent = '    '.repeat(depth);
  const seen = condition.unknown
    ? `unknown${condition.note ? ` (${condition.note})` : ''}`
    : `${showValue(condition.value)}${condition.note ? ` (${condition.note})` : ''}`;
  return [
    `${indent}${mark(condition)} ${condition.describe}: ${seen}`,
    ...(condition.children ?? []).flatMap((child) => conditionLines(child, depth + 1)),
  ];
}

const IDS = new Set(['project', 'issue_id', 'merge_request_id']);

/** `issues.update labels=[bug, ui]`: the op and the arguments that say what it does. */
export function showCall(call: ApiCall): string {
  const args = Object.entries(call.args)
    .filter(([key]) => !IDS.has(key))
    .map(([key, value]) => {
      if (key === 'edit')
        return Object.entries(value as Record<string, unknown>)
          .map(([k, v]) => `${k}=${show(v)}`)
          .join(' ');
      if (key === 'sha' && typeof value === 'string') return `sha=${value.slice(0, 8)}`;
      return `${key}=${show(value)}`;
    });
  return [call.op, ...args].join(' ');
}

function show(value: unknown): string {
  if (Array.isArray(value)) return `[${value.join(', ')}]`;
  if (typeof value === 'string') {
    const line = value.split('\n')[0] ?? '';
    return JSON.stringify(line.length > 60 ? `${line.slice(0, 59)}…` : line);
  }
  return String(value);
}

function actionLine(action: ActionRecord): string[] {
  if (action.planned.length === 0)
    return [
      `  ${action.blocks ? '✗' : '·'} ${action.describe}: ${action.blocks ? 'held back' : 'nothing to do'}: ${action.skipped ?? 'no call'}`,
    ];
  return action.planned.map((call) => `  → ${action.action}: ${call.reason}`);
}

/** One rule's verdict, its conditions with the values seen, and its actions, as explain shows them. */
export function ruleLines(rule: RuleEvaluation): string[] {
  const where = rule.source ? ` (${rule.source.file}:${rule.source.line})` : '';
  if (!rule.applies) return [`- ${rule.rule}${where}: does not apply: ${rule.why ?? ''}`];
  const verdict = rule.matched ? 'matched' : 'did not match';
  return [
    `${rule.matched ? '✓' : '✗'} ${rule.rule}${where}: ${verdict}`,
    ...rule.conditions.flatMap((condition) => conditionLines(condition, 1)),
    ...(rule.conditions.length === 0 ? ['    (no conditions)'] : []),
    ...rule.actions.flatMap(actionLine),
  ];
}

function planLine(call: PlannedCall, index: number): string {
  return `  ${index + 1}. ${showCall(call.call)}  [${call.rule}] ${call.reason}`;
}

export function explainText(evaluation: Evaluation): string {
  const { item, trigger } = evaluation;
  const ref = item.kind === 'issue' ? `issue #${item.iid}` : `merge request !${item.iid}`;
  const head = item.kind === 'merge_request' ? `, head ${item.sha ? item.sha.slice(0, 8) : 'unknown'}` : '';
  const actor = trigger.actor ? ` by @${trigger.actor.username}${trigger.byBot ? ' (the bot)' : ''}` : '';
  const applied = evaluation.rules.filter((rule) => rule.applies).length;
  const matched = evaluation.rules.filter((rule) => rule.matched).length;
  return [
    `${ref} in ${item.project}: ${JSON.stringify(item.title)} (${item.state}${head}), labels [${item.labels.join(', ')}]`,
    `event ${evaluation.event}${actor} at ${evaluation.at}`,
    `${evaluation.rules.length} rules, ${applied} applied, ${matched} matched`,
    '',
    ...evaluation.rules.flatMap(ruleLines),
    '',
    evaluation.plan.length === 0
      ? 'plan: nothing to do'
      : `plan (${evaluation.plan.length} ${evaluation.plan.length === 1 ? 'call' : 'calls'}):`,
    ...evaluation.plan.map(planLine),
  ].join('\n');
}

export interface ExplainJson extends Evaluation {
  summary: { rules: number; applied: number; matched: number; calls: number };
}

/** The evaluation as plain JSON (it holds no functions or dates), with counts on top. */
export function explainJson(evaluation: Evaluation): ExplainJson {
  return {
    summary: {
      rules: evaluation.rules.length,
      applied: evaluation.rules.filter((rule) => rule.applies).length,
      matched: evaluation.rules.filter((rule) => rule.matched).length,
      calls: evaluation.plan.length,
    },
    ...(JSON.parse(JSON.stringify(evaluation)) as Evaluation),
  };
}

/** What blocks the rule named `ruleName` (a merge rule), in at most 140 characters. */
export function blockingReasons(evaluation: Evaluation, ruleName: string): string {
  const rule = evaluation.rules.find((candidate) => candidate.rule === ruleName);
  return rule ? blockingSentence(rule) : `no rule named ${JSON.stringify(ruleName)}`.slice(0, 140);
}
