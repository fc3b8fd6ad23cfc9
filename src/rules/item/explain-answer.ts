/**
 * Explain's answer for one item, from what the store kept and nothing else (find-decision.ts finds
 * the item; no API call): the decision shown (the latest evaluation, or one asked for), every action
 * the kept decisions sent, withdrew or parked with the evaluation that planned it (its rule, the
 * conditions with the values seen, the events), and the kept evaluations, newest first. The same
 * answer for `GET /explain/...` (text and JSON), `hookbot explain` (`--bot`, `--state`,
 * `--database`) and the status page's links.
 *
 * Issue 30: the bot's own label, status and comment fire hooks back, and the latest evaluation is
 * then usually such an echo ("label docs MRs: does not apply: status.changed"). The store keeps the
 * decisions that acted apart from the newest evaluations (docs/state.md), and this answer puts them
 * first.
 *
 * Decisions are stored JSON written by whichever version ran: they are read leniently here, and a
 * field that is not what this version writes is left out rather than breaking the answer.
 */
import type { DecisionRecord } from '../../state/index.ts';
import type { RuleEvaluation } from '../engine/evaluation.ts';
import { ruleLines } from '../engine/explain.ts';
import type { ExplainAnswer } from './find-decision.ts';
import { decisionActed } from './kept-decision.ts';
import { queueEventOf, queueStory, queueStoryText, type QueueStoryLine } from '../queue/queue-story.ts';

export interface ExplainSelector {
  /** A decision by its id (the status page's decision cards). */
  decision?: string;
  /** The decision that planned the outbox action with this id (the status page's parked actions). */
  action?: string;
  /** The newest decision in which this rule acted (the status page's merge watch and queue). */
  rule?: string;
}

/** One action a kept decision sent, withdrew or parked. */
export interface ActionView {
  /** The outbox id: the same call planned again has the same one. */
  id: string;
  rule: string;
  action: string;
  op: string;
  /** The call in one line. */
  call: string;
  status: string;
  detail: string;
  error?: string;
  parked?: string;
  /** When the decision that reports it was recorded (ISO 8601). */
  at: string;
  /** The id of the decision that reports it (and, unless withdrawn, planned it). */
  decision?: string;
  /** A withdrawn action: the kept decision that had planned it. */
  plannedBy?: string;
}

/** One kept evaluation, in a line. */
export interface HistoryLine {
  id?: string;
  /** When it was recorded (ISO 8601). */
  at: string;
  event?: string;
  acted: boolean;
  /** `2 done, 1 skipped`, `nothing to do`. */
  outcome: string;
  /** The rules whose conditions all held. */
  matched: string[];
}

/** The answer as JSON: the decision shown, its fields at the top as before, and the rest beside. */
export interface ExplainBody {
  [field: string]: unknown;
  /** The shown decision's id (absent for one recorded before decisions had ids). */
  id?: string;
  lookup: { by: 'iid' | 'id'; note?: string } & ExplainSelector;
  /** Newest first. */
  actions: ActionView[];
  /** The kept decisions that acted, whole, newest first. */
  acting: Record<string, unknown>[];
  /** Every kept evaluation, newest first. */
  history: HistoryLine[];
  /**
   * Its story in merge queues, oldest first (entered, landed, removed with the comment, came back),
   * when it has one (docs/merge-queue.md#where-it-shows).
   */
  queue?: QueueStoryLine[];
  /** The whole answer in words: what `GET /explain` answers as text and `hookbot explain` prints. */
  explanation: string;
}

export type ExplainResult =
  { found: true; body: ExplainBody; note?: string } | { found: false; message: string };

interface CallLike {
  id: string;
  op?: unknown;
  rule?: unknown;
  action?: unknown;
  call?: unknown;
  status: string;
  detail?: unknown;
  error?: unknown;
  parked?: unknown;
}

interface StoredDecision {
  at?: unknown;
  text?: unknown;
  evaluation?: {
    event?: unknown;
    at?: unknown;
    item?: { kind?: unknown; iid?: unknown; project?: unknown };
    trigger?: { actor?: { username?: unknown }; byBot?: unknown };
    rules?: unknown;
  };
  execution?: { calls?: unknown };
  superseded?: { at?: unknown; execution?: { calls?: unknown } };
  leftQueue?: unknown;
}

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const stored = (record: DecisionRecord): StoredDecision =>
  record.decision !== null && typeof record.decision === 'object' ? (record.decision as StoredDecision) : {};
const iso = (ms: number): string => (Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));

function callsIn(execution: { calls?: unknown } | undefined): CallLike[] {
  const calls = Array.isArray(execution?.calls) ? (execution.calls as unknown[]) : [];
  return calls.filter(
    (call): call is CallLike =>
      call !== null &&
      typeof call === 'object' &&
      typeof (call as CallLike).id === 'string' &&
      typeof (call as CallLike).status === 'string',
  );
}

const callsOf = (record: DecisionRecord): CallLike[] => [
  ...callsIn(stored(record).execution),
  ...callsIn(stored(record).superseded?.execution),
];

/** What the store says; a decision recorded before the store kept the flag is judged from its calls. */
function acted(record: DecisionRecord): boolean {
  if (record.acted === true || record.id !== undefined) return record.acted === true;
  const decision = stored(record);
  return decisionActed({
    execution: { calls: callsIn(decision.execution) },
    ...(decision.leftQueue === undefined ? {} : { leftQueue: String(decision.leftQueue) }),
  });
}

const sameRecord = (a: DecisionRecord, b: DecisionRecord): boolean =>
  a.id !== undefined || b.id !== undefined ? a.id === b.id : a.at === b.at && a.itemKey === b.itemKey;

const sent = (call: CallLike): boolean => call.status !== 'skipped';
/** A call's `rule` names each rule that planned it (two rules planning one label write: `a, b`). */
const ruleNames = (rule: unknown): string[] => (str(rule) ?? '').split(', ');

function outcomeOf(record: DecisionRecord): string {
  const calls = callsIn(stored(record).execution);
  if (calls.length === 0) return 'nothing to do';
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.status, (counts.get(call.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
}

function matchedRules(record: DecisionRecord): string[] {
  const rules = stored(record).evaluation?.rules;
  if (!Array.isArray(rules)) return [];
  return rules
    .filter(
      (rule): rule is { rule: string; matched: true } => (rule as { matched?: unknown })?.matched === true,
    )
    .map((rule) => String(rule.rule));
}

function textOf(record: DecisionRecord): string {
  const text = stored(record).text;
  return typeof text === 'string' ? text : JSON.stringify(record.decision, null, 2);
}

const idText = (record: DecisionRecord): string => (record.id === undefined ? '(no id)' : record.id);

/** The planned rule's lines (verdict, conditions and values seen, actions), when they read as this version's. */
function plannerLines(record: DecisionRecord, names: readonly string[]): string[] {
  const rules = stored(record).evaluation?.rules;
  if (!Array.isArray(rules)) return [];
  return (rules as Partial<RuleEvaluation>[])
    .filter(
      (rule) =>
        typeof rule?.rule === 'string' &&
        names.includes(rule.rule) &&
        Array.isArray(rule.conditions) &&
        Array.isArray(rule.actions),
    )
    .flatMap((rule) => {
      try {
        return ruleLines(rule as RuleEvaluation);
      } catch {
        return [`${String(rule.rule)}: (recorded by another version; ask for the decision for its details)`];
      }
    });
}

/** `decision 1a2b3c4d5e6f at 2026-...Z, on event merge_request.open by @alice`. */
function decisionLine(record: DecisionRecord): string {
  const evaluation = stored(record).evaluation;
  const actor = str(evaluation?.trigger?.actor?.username);
  const by = actor ? ` by @${actor}${evaluation?.trigger?.byBot === true ? ' (the bot)' : ''}` : '';
  return `decision ${idText(record)} at ${iso(record.at)}, on event ${str(evaluation?.event) ?? 'unknown'}${by}`;
}

interface ActionEntry {
  view: ActionView;
  /** The decision that reports it. */
  reporter: DecisionRecord;
  /** The decision that planned it: the reporter, or for a withdrawal an earlier one, if kept. */
  planner: DecisionRecord | undefined;
}

/** Every action the kept decisions sent, withdrew or parked, newest first. */
function actionsOf(records: readonly DecisionRecord[]): ActionEntry[] {
  const out: ActionEntry[] = [];
  records.forEach((record, index) => {
    if (!acted(record)) return;
    const at = iso(record.at);
    for (const call of callsOf(record)) {
      if (!sent(call)) continue;
      // A withdrawal: the action was planned by an earlier decision, the newest that sent it.
      const planner =
        call.status === 'withdrawn'
          ? records
              .slice(index + 1)
              .find((older) =>
                callsOf(older).some((c) => c.id === call.id && sent(c) && c.status !== 'withdrawn'),
              )
          : undefined;
      const view: ActionView = {
        id: call.id,
        rule: str(call.rule) ?? '',
        action: str(call.action) ?? '',
        op: str(call.op) ?? '',
        call: str(call.call) ?? '',
        status: call.status,
        detail: str(call.detail) ?? '',
        ...(str(call.error) !== undefined && call.error !== call.detail ? { error: str(call.error) } : {}),
        ...(str(call.parked) !== undefined ? { parked: str(call.parked) } : {}),
        at,
        ...(record.id === undefined ? {} : { decision: record.id }),
        ...(planner?.id === undefined ? {} : { plannedBy: planner.id }),
      };
      out.push({ view, reporter: record, planner: call.status === 'withdrawn' ? planner : record });
    }
  });
  return out;
}

/** The decision a selector asks for, or why there is none. */
function select(
  records: readonly DecisionRecord[],
  selector: ExplainSelector,
): { record: DecisionRecord } | { problem: string } | undefined {
  if (selector.decision !== undefined) {
    const record = records.find((one) => one.id === selector.decision);
    return record ? { record } : { problem: `no decision ${selector.decision} is kept for` };
  }
  if (selector.action !== undefined) {
    const plans = (record: DecisionRecord) =>
      callsOf(record).some(
        (call) => call.id === selector.action && sent(call) && call.status !== 'withdrawn',
      );
    const record =
      records.find((one) => acted(one) && plans(one)) ??
      records.find((one) => callsOf(one).some((call) => call.id === selector.action));
    return record ? { record } : { problem: `no kept decision planned the action ${selector.action} of` };
  }
  if (selector.rule !== undefined) {
    const rule = selector.rule;
    const record = records.find(
      (one) =>
        acted(one) &&
        queueEventOf(one) === undefined &&
        callsOf(one).some(
          (call) => sent(call) && call.status !== 'withdrawn' && ruleNames(call.rule).includes(rule),
        ),
    );
    return record ? { record } : { problem: `no kept decision in which rule "${rule}" acted is kept for` };
  }
  return undefined;
}

function explanation(
  records: readonly DecisionRecord[],
  shown: DecisionRecord,
  asked: boolean,
  actions: readonly ActionEntry[],
  story: readonly QueueStoryLine[],
): string {
  const latest = records[0] as DecisionRecord;
  if (records.length <= 1 && !asked) return textOf(shown);
  const lines: string[] = [];
  if (story.length > 0)
    lines.push(`in the merge queue, oldest first (${story.length}):`, ...queueStoryText(story), '');
  if (asked)
    lines.push(
      sameRecord(shown, latest)
        ? `decision ${idText(shown)} (${iso(shown.at)}), as asked; it is the latest:`
        : `decision ${idText(shown)} (${iso(shown.at)}), as asked; the latest is ${idText(latest)} (${iso(latest.at)}):`,
      textOf(shown),
      '',
    );
  if (actions.length > 0) {
    lines.push(
      `why it acted: ${actions.length === 1 ? '1 action' : `${actions.length} actions`} in the decisions kept, newest first, under the evaluation that planned them:`,
    );
    // One group per decision, in its order: its actions, then the rules that planned them (for a
    // withdrawal, the rule as this evaluation saw it: why it no longer plans the action).
    let number = 0;
    for (const reporter of new Set(actions.map((entry) => entry.reporter))) {
      const group = actions.filter((entry) => entry.reporter === reporter);
      lines.push('', `${decisionLine(reporter)}:`);
      for (const { view, planner } of group) {
        const error = view.error ? ` (${view.error})` : '';
        const parked = view.parked ? ` [parked: ${view.parked}]` : '';
        lines.push(`  ${++number}. ${view.status}: ${view.call}: ${view.detail}${error}${parked}`);
        if (view.status === 'withdrawn')
          lines.push(
            planner
              ? `     planned by decision ${idText(planner)} at ${iso(planner.at)}`
              : '     the decision that planned it is no longer kept',
          );
      }
      const names = [...new Set(group.flatMap(({ view }) => ruleNames(view.rule)))];
      lines.push(...plannerLines(reporter, names).map((line) => `  ${line}`));
    }
    lines.push('');
  }
  if (!asked)
    lines.push(
      queueEventOf(latest)
        ? `latest decision (${idText(latest)}, ${iso(latest.at)}): the merge queue's, on the merge request as the queue left it:`
        : `latest evaluation (decision ${idText(latest)}, ${iso(latest.at)}):`,
      textOf(latest),
      '',
    );
  lines.push(`evaluations kept, newest first (${records.length}):`);
  for (const record of records) {
    const event = str(stored(record).evaluation?.event) ?? '?';
    lines.push(
      `  ${iso(record.at)}  ${idText(record)}  ${event}: ${outcomeOf(record)}${acted(record) ? ' (acted)' : ''}`,
    );
  }
  return lines.join('\n');
}

/**
 * The answer for the item `found` names: `found.record` is its latest decision as the caller's
 * latest decisions hold it, `kept` its kept decisions (newest first; empty when none are kept).
 */
export function explainAnswer(
  found: Extract<ExplainAnswer, { found: true }>,
  kept: readonly DecisionRecord[],
  selector: ExplainSelector = {},
): ExplainResult {
  // A replica's latest decisions may lag the database by a refresh, and a decision recorded before
  // decision history may be missing from `kept`: both together, newest first, each once.
  const records = (
    kept.some((record) => sameRecord(record, found.record)) ? [...kept] : [found.record, ...kept]
  ).sort((a, b) => b.at - a.at);
  const chosen = select(records, selector);
  if (chosen !== undefined && 'problem' in chosen)
    return { found: false, message: `${chosen.problem} ${itemRef(found)}` };
  const shown = chosen?.record ?? (records[0] as DecisionRecord);
  const actions = actionsOf(records);
  const story = queueStory(records);
  const decision = shown.decision !== null && typeof shown.decision === 'object' ? shown.decision : {};
  const asked = chosen !== undefined;
  const body: ExplainBody = {
    ...(decision as Record<string, unknown>),
    ...(shown.id === undefined ? {} : { id: shown.id }),
    lookup: { by: found.by, ...(found.note ? { note: found.note } : {}), ...selector },
    actions: actions.map(({ view }) => view),
    acting: records
      .filter(acted)
      .map((record) => ({ ...(record.id === undefined ? {} : { id: record.id }), ...stored(record) })),
    history: records.map((record) => ({
      ...(record.id === undefined ? {} : { id: record.id }),
      at: iso(record.at),
      ...(str(stored(record).evaluation?.event) === undefined
        ? {}
        : { event: str(stored(record).evaluation?.event) }),
      acted: acted(record),
      outcome: outcomeOf(record),
      matched: matchedRules(record),
    })),
    ...(story.length > 0 ? { queue: story } : {}),
    explanation: explanation(records, shown, asked, actions, story),
  };
  return { found: true, body, ...(found.note ? { note: found.note } : {}) };
}

function itemRef(found: Extract<ExplainAnswer, { found: true }>): string {
  const { item } = found;
  const sign = item.kind === 'issue' ? '#' : '!';
  const name = item.kind === 'issue' ? 'issue' : 'merge request';
  return `${name} ${item.iid === undefined ? `id ${item.id}` : `${sign}${item.iid}`} of ${item.project ?? `project ${item.projectId}`}`;
}
