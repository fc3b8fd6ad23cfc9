/**
 * The rule engine: from the fresh state of one item and the event that woke it, which rules apply,
 * which match, why, and the plan of API calls that follows. Pure: no I/O, no clock unless none is
 * given. Rules are compiled once (compile.ts); evaluation only reads.
 *
 * Rules do not see each other's effects within one evaluation: all read the same snapshot. The
 * executor's writes cause new events, and a new evaluation sees the result (level-triggered).
 */
import { callKey } from '../executor/calls/index.ts';
import { isOpenState } from '../../api/index.ts';
import { labelProposal } from './build-calls.ts';
import { planStatus } from './build-status-call.ts';
import { blockingSentence } from './blocking.ts';
import { resultOf } from '../conditions/combine.ts';
import type { CompiledRule, CompiledRuleSet } from './compile.ts';
import type { ConditionResult, Guarantee } from './define-condition.ts';
import type { PlanOutcome } from './define-action.ts';
import { createEvalInput, type EvalInput } from './eval-input.ts';
import { isSkip, type PlannedCall } from './planned-call.ts';
import type { ActionRecord, Evaluation, ItemSummary, RuleEvaluation } from './evaluation.ts';
import type { ItemKind, ItemSnapshot } from './snapshot.ts';

// Compiling is the other half of the engine's interface; it lives in compile.ts.
export type { CompiledRuleSet } from './compile.ts';

export type { ActionRecord, Evaluation, RuleEvaluation } from './evaluation.ts';

export interface EvaluateOptions {
  /** The evaluation's clock (ages are measured from it); default: now. */
  now?: number | Date;
  /**
   * Rules held by a brake (rules/item/echo-brake.ts), by name, with the reason: such a rule does
   * not run, and explain says why (`does not apply: paused: ...`).
   */
  paused?: ReadonlyMap<string, string>;
}

const SCOPE_NAMES: Record<ItemKind, string> = { issue: 'issues', merge_request: 'merge requests' };

/** Why the rule does not run on this event and item, or undefined when it does. */
function whyNotApplies(rule: CompiledRule, input: EvalInput): string | undefined {
  const { snapshot, event } = input;
  const trigger = snapshot.trigger;
  if (rule.scope !== null && rule.scope !== snapshot.kind)
    return `the rule is for ${SCOPE_NAMES[rule.scope]}`;
  // Loop prevention: the bot's own comments fire Note Hook too (docs/server-behaviour.md#hook-payloads).
  if (trigger.byBot && !rule.allowBot) return 'the bot caused the event (allow_bot is off)';
  switch (trigger.kind) {
    case 'manual':
      return undefined;
    case 'schedule':
      if (rule.schedule === null) return 'the rule has no schedule';
      if (trigger.schedule !== undefined && trigger.schedule !== rule.schedule)
        return `the rule runs ${rule.schedule}, this sweep is ${trigger.schedule}`;
      return undefined;
    default: {
      if (rule.events === null) return `the rule runs on its schedule, not on ${event}`;
      // A burst runs the rule when any of its events is in `on:`; the bot's own events count only
      // for rules that allow them (loop prevention, per event).
      const heard = input.events.some((one) => (rule.allowBot || !one.byBot) && rule.listensTo(one.name));
      if (heard) return undefined;
      if (input.events.some((one) => one.byBot && rule.listensTo(one.name)))
        return `the bot caused the event in on: [${rule.eventsText}] (allow_bot is off)`;
      // `event` names each event of a burst once (eval-input.ts): several events of one name are one.
      return event.includes(', ')
        ? `none of ${event} is in on: [${rule.eventsText}]`
        : `${event} is not in on: [${rule.eventsText}]`;
    }
  }
}

// The hot path below uses plain loops: Array.prototype.flatMap and spreads of small objects cost
// microseconds each in V8, and an evaluation runs them for every one of 1,000 rules.

function record(action: string, describe: string, outcome: PlanOutcome, rule: string): ActionRecord {
  if (isSkip(outcome)) {
    const skipped: ActionRecord = { action, describe, planned: NONE, skipped: outcome.skipped };
    if (outcome.blocks) skipped.blocks = true;
    return skipped;
  }
  const planned: PlannedCall[] = [];
  for (const proposal of outcome)
    planned.push({ action, rule, reason: proposal.reason, call: proposal.call });
  return { action, describe, planned };
}

const NO_GUARANTEES: readonly Guarantee[] = [];

/** What the held conditions prove (only read by actions, so only computed when the rule matched). */
function guaranteesOf(rule: CompiledRule): readonly Guarantee[] {
  let found: Guarantee[] | undefined;
  for (const condition of rule.conditions)
    if (condition.guarantees.length > 0) (found ??= []).push(...condition.guarantees);
  return found ?? NO_GUARANTEES;
}

/** The record of a rule that does not run on this event and item: the same for every such event. */
function notApplying(rule: CompiledRule, why: string): RuleEvaluation {
  const skipped: RuleEvaluation = {
    rule: rule.name,
    applies: false,
    why,
    matched: false,
    conditions: NONE,
    actions: NONE,
    planned: NONE,
  };
  if (rule.source) skipped.source = rule.source;
  return Object.freeze(skipped);
}

/**
 * Which rules run is decided by facts that take few values (item kind, event, bot or not, trigger
 * kind, schedule), so it is decided once per combination and kept with the compiled set: an event
 * then costs nothing for the rules that do not listen to it (most of them, in a large set), and
 * their explain records are shared, frozen, rather than rebuilt.
 */
type Slot = CompiledRule | RuleEvaluation;
const applicability = new WeakMap<CompiledRuleSet, Map<string, readonly Slot[]>>();
/** Bounds the combinations kept per set (events and schedules are few; this is a backstop). */
const MAX_COMBINATIONS = 512;

function slotsFor(set: CompiledRuleSet, input: EvalInput): readonly Slot[] {
  const trigger = input.snapshot.trigger;
  const key = `${input.snapshot.kind}|${trigger.byBot ? 1 : 0}|${trigger.kind}|${
    trigger.kind === 'schedule' ? (trigger.schedule ?? '') : ''
  }|${input.eventKey}`;
  let byKey = applicability.get(set);
  if (!byKey) applicability.set(set, (byKey = new Map()));
  let slots = byKey.get(key);
  if (!slots) {
    slots = set.rules.map((rule) => {
      const why = whyNotApplies(rule, input);
      return why === undefined ? rule : notApplying(rule, why);
    });
    if (byKey.size >= MAX_COMBINATIONS) byKey.clear();
    byKey.set(key, slots);
  }
  return slots;
}

const isRecord = (slot: Slot): slot is RuleEvaluation => 'applies' in slot;

/**
 * Shared by the records with nothing to list (most rules do not match most events). Records are
 * built for every applying rule on every event, so they are sized exactly and share what they can:
 * a large set then makes little garbage per event (measured: GC was half of the evaluation time).
 */
const NONE: readonly never[] = Object.freeze([]);

/** Evaluates one rule that runs on this event and item. */
function evaluateRule(rule: CompiledRule, input: EvalInput): RuleEvaluation {
  const count = rule.conditions.length;
  const conditions = new Array<ConditionResult>(count);
  let matched = true;
  for (let i = 0; i < count; i++) {
    const condition = rule.conditions[i]!;
    const verdict = condition.evaluate(input);
    conditions[i] = resultOf(condition.describe, verdict);
    if (!verdict.ok) matched = false;
  }

  let actions: ActionRecord[] | undefined;
  if (matched) {
    const context = {
      rule: rule.name,
      guarantees: guaranteesOf(rule),
      ...(rule.source?.repository ? { fromRepository: true } : {}),
    };
    actions = new Array<ActionRecord>(rule.actions.length);
    for (let i = 0; i < rule.actions.length; i++) {
      const action = rule.actions[i]!;
      actions[i] = record(action.name, action.describe, action.plan(input, context), rule.name);
    }
  } else {
    for (const action of rule.actions) {
      if (!action.planUnmatched) continue;
      const outcome = action.planUnmatched(input, { rule: rule.name, guarantees: NO_GUARANTEES });
      if (outcome) (actions ??= []).push(record(action.name, action.describe, outcome, rule.name));
    }
  }

  // Every key in the literal (source too, even when undefined): adding one later costs a hidden
  // class transition and a property store allocation per record.
  const evaluation: RuleEvaluation = {
    rule: rule.name,
    source: rule.source,
    applies: true,
    matched,
    conditions,
    actions: actions ?? NONE,
    planned: NONE,
  };
  // A summary is for merge requests still open: a merged one's head needs no verdict.
  if (
    rule.summaryStatus !== null &&
    input.snapshot.kind === 'merge_request' &&
    isOpenState(input.snapshot.state)
  ) {
    const ready = matched && !(actions ?? NONE).some((action) => action.blocks);
    const outcome = planStatus(
      input.snapshot,
      {
        name: rule.summaryStatus,
        state: ready ? 'success' : 'pending',
        description: blockingSentence(evaluation),
      },
      `summary of rule "${rule.name}": ${ready ? 'ready' : 'blocked'}`,
      rule.source?.repository === true,
    );
    (actions ??= []).push(
      record('summary_status', `summary status ${rule.summaryStatus}`, outcome, rule.name),
    );
    evaluation.actions = actions;
  }
  if (actions) {
    let planned: PlannedCall[] | undefined;
    for (const action of actions) for (const call of action.planned) (planned ??= []).push(call);
    if (planned) evaluation.planned = planned;
  }
  return evaluation;
}

/**
 * The evaluation's plan: the rules' calls in order, identical calls once, every label change to
 * the item merged into one write of the whole set (the v3 API replaces it), computed from the
 * fresh set; a merge makes arming merge-when-build-succeeds moot.
 */
export function mergePlan(planned: readonly PlannedCall[], input: EvalInput): PlannedCall[] {
  const plan: (PlannedCall | 'labels')[] = [];
  const labelCalls: PlannedCall[] = [];
  const seen = new Set<string>();
  for (const call of planned) {
    if (call.call.labels) {
      if (labelCalls.length === 0) plan.push('labels');
      labelCalls.push(call);
      continue;
    }
    const key = callKey(call.call);
    if (seen.has(key)) continue;
    seen.add(key);
    plan.push(call);
  }
  const merging = plan.some((call) => call !== 'labels' && call.call.op === 'mergeRequests.merge');
  return plan.flatMap((call): PlannedCall[] => {
    if (call === 'labels') return mergeLabels(labelCalls, input);
    if (merging && call.call.op === 'mergeRequests.mergeWhenBuildSucceeds') return [];
    return [call];
  });
}

function mergeLabels(calls: readonly PlannedCall[], input: EvalInput): PlannedCall[] {
  const labels = [...input.snapshot.labels];
  for (const { call } of calls) {
    for (const name of call.labels?.remove ?? []) {
      const at = labels.indexOf(name);
      if (at >= 0) labels.splice(at, 1);
    }
    for (const name of call.labels?.add ?? []) if (!labels.includes(name)) labels.push(name);
  }
  const final = new Set(labels);
  const add = labels.filter((name) => !input.labels.has(name));
  const remove = input.snapshot.labels.filter((name) => !final.has(name));
  // Rules that cancel each other out (one adds what another removes) leave nothing to write.
  if (add.length === 0 && remove.length === 0) return [];
  const rules = [...new Set(calls.map((call) => call.rule))];
  const reason = calls
    .map((call) => (rules.length > 1 ? `${call.rule}: ${call.reason}` : call.reason))
    .join('; ');
  return [{ action: 'label', rule: rules.join(', '), ...labelProposal(input, add, remove, reason) }];
}

function summarise(snapshot: ItemSnapshot): ItemSummary {
  return {
    kind: snapshot.kind,
    id: snapshot.id,
    iid: snapshot.iid,
    project: snapshot.project.path_with_namespace,
    title: snapshot.title,
    state: snapshot.state,
    labels: [...snapshot.labels],
    ...(snapshot.kind === 'merge_request' ? { sha: snapshot.sha } : {}),
  };
}

/** Evaluates every rule of the set on one item. */
export function evaluate(
  set: CompiledRuleSet,
  snapshot: ItemSnapshot,
  options: EvaluateOptions = {},
): Evaluation {
  const now = options.now === undefined ? Date.now() : Number(options.now);
  const input = createEvalInput(snapshot, now);
  const slots = slotsFor(set, input);
  const rules = new Array<RuleEvaluation>(slots.length);
  const planned: PlannedCall[] = [];
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i]!;
    const held = isRecord(slot) ? undefined : options.paused?.get(slot.name);
    const evaluation = isRecord(slot)
      ? slot
      : held !== undefined
        ? notApplying(slot, `paused: ${held}`)
        : evaluateRule(slot, input);
    rules[i] = evaluation;
    for (let j = 0; j < evaluation.planned.length; j++) planned.push(evaluation.planned[j]!);
  }
  return {
    item: summarise(snapshot),
    trigger: snapshot.trigger,
    event: input.event,
    at: new Date(now).toISOString(),
    rules,
    plan: mergePlan(planned, input),
  };
}
