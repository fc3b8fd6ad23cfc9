/**
 * What the status page shows of a recorded decision. The store holds decisions as opaque JSON
 * (state/store.ts), written by whichever version of hookbot ran before: they are read here through
 * a lenient schema, so that one odd record shows what it can instead of breaking the page.
 */
import { z } from 'zod';
import type { DecisionRecord, OutboxAction } from '../state/index.ts';

const itemSchema = z.looseObject({
  kind: z.string(),
  id: z.number(),
  iid: z.number().optional().catch(undefined),
  project: z.string(),
  title: z.string().catch(''),
  state: z.string().optional().catch(undefined),
  sha: z.string().nullish().catch(undefined),
});

const ruleSchema = z.looseObject({ rule: z.string(), matched: z.boolean() });

const plannedSchema = z.looseObject({
  rule: z.string().catch('?'),
  action: z.string().catch('?'),
  reason: z.string().optional().catch(undefined),
  call: z.looseObject({ op: z.string() }).optional().catch(undefined),
});

const callSchema = z.looseObject({
  id: z.string().optional().catch(undefined),
  op: z.string().optional().catch(undefined),
  rule: z.string().optional().catch(undefined),
  action: z.string().optional().catch(undefined),
  status: z.string(),
  call: z.string().catch(''),
  detail: z.string().optional().catch(undefined),
  error: z.string().optional().catch(undefined),
  parked: z.string().optional().catch(undefined),
});

const decisionSchema = z.looseObject({
  at: z.string().optional().catch(undefined),
  dryRun: z.boolean().optional().catch(undefined),
  evaluation: z
    .looseObject({
      item: itemSchema.optional().catch(undefined),
      event: z.string().optional().catch(undefined),
      rules: z.array(ruleSchema).catch([]),
      plan: z.array(plannedSchema).catch([]),
    })
    .optional()
    .catch(undefined),
  execution: z
    .looseObject({ calls: z.array(callSchema).catch([]) })
    .optional()
    .catch(undefined),
  text: z.string().optional().catch(undefined),
});

export interface DecisionView {
  /** Its id (absent for a decision recorded before decisions had ids): the card's anchor is `decision-<id>`. */
  id?: string;
  itemKey: string;
  /** When it was recorded (ms since the epoch). */
  at: number;
  item?: { kind: string; id: number; iid?: number; project: string; title: string; state?: string };
  event?: string;
  dryRun: boolean;
  /** Names of the rules whose conditions all held. */
  matched: string[];
  plan: { rule: string; action: string; op?: string; reason?: string }[];
  /** Each call's fate: `done`, `skipped`, `failed`, `ambiguous`, `dry-run`. */
  execution: { status: string; call: string; detail?: string; error?: string; parked?: string }[];
  /** One line: `2 done, 1 failed`, or `nothing to do`. */
  outcome: string;
  /** The decision in words (explain). */
  text?: string;
  /** It acted (sent, withdrew or parked an action): kept apart for explain, and its calls are actions. */
  acted: boolean;
  /** Explain's answer for this decision, relative to the status page (`explain/acme%2Fweb/mr/7?decision=<id>`). */
  explain?: string;
  /** Set when the record could not be read at all. */
  unreadable?: boolean;
}

/** An item as explain finds it: from the evaluation a decision records. */
export interface ExplainTarget {
  kind: string;
  project: string;
  iid?: number;
  id: number;
}

/**
 * The link to explain's answer for an item, relative to the status page (both are served at the
 * root of the bot's port): `explain/<project>/<issue|mr>/<number>` and the query that picks the
 * decision (`decision=<id>`, `action=<id>` or `rule=<name>`).
 */
export function explainLink(item: ExplainTarget, query: Record<string, string> = {}): string {
  const kind = item.kind === 'issue' ? 'issue' : 'mr';
  const search = new URLSearchParams(query).toString();
  return `explain/${encodeURIComponent(item.project)}/${kind}/${item.iid ?? item.id}${search ? `?${search}` : ''}`;
}

/** The item a recorded decision is about, for a link to explain; undefined when it does not say. */
export function explainTargetOf(record: DecisionRecord | undefined): ExplainTarget | undefined {
  const parsed = decisionSchema.safeParse(record?.decision);
  const item = parsed.success ? parsed.data.evaluation?.item : undefined;
  return item
    ? { kind: item.kind, project: item.project, id: item.id, ...(item.iid ? { iid: item.iid } : {}) }
    : undefined;
}

function outcomeOf(calls: readonly { status: string }[]): string {
  if (calls.length === 0) return 'nothing to do';
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.status, (counts.get(call.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
}

export function decisionView(record: DecisionRecord): DecisionView {
  const parsed = decisionSchema.safeParse(record.decision);
  const id = record.id === undefined ? {} : { id: record.id };
  const acted = record.acted === true;
  if (!parsed.success)
    return {
      ...id,
      itemKey: record.itemKey,
      at: record.at,
      dryRun: false,
      matched: [],
      plan: [],
      execution: [],
      outcome: 'unknown',
      acted,
      unreadable: true,
    };
  const { evaluation, execution, text } = parsed.data;
  const calls = (execution?.calls ?? []).map(({ status, call, detail, error, parked }) => ({
    status,
    call,
    ...(detail !== undefined ? { detail } : {}),
    ...(error !== undefined ? { error } : {}),
    ...(parked !== undefined ? { parked } : {}),
  }));
  const item = evaluation?.item;
  const target = explainTargetOf(record);
  return {
    ...id,
    itemKey: record.itemKey,
    at: record.at,
    ...(item
      ? {
          item: {
            kind: item.kind,
            id: item.id,
            project: item.project,
            title: item.title,
            ...(item.iid !== undefined ? { iid: item.iid } : {}),
            ...(item.state !== undefined ? { state: item.state } : {}),
          },
        }
      : {}),
    ...(evaluation?.event !== undefined ? { event: evaluation.event } : {}),
    dryRun: parsed.data.dryRun ?? false,
    matched: (evaluation?.rules ?? []).filter((rule) => rule.matched).map((rule) => rule.rule),
    plan: (evaluation?.plan ?? []).map(({ rule, action, call, reason }) => ({
      rule,
      action,
      ...(call ? { op: call.op } : {}),
      ...(reason !== undefined ? { reason } : {}),
    })),
    execution: calls,
    outcome: outcomeOf(calls),
    ...(text !== undefined ? { text } : {}),
    acted,
    ...(target && record.id !== undefined ? { explain: explainLink(target, { decision: record.id }) } : {}),
  };
}

const storedCallSchema = z.looseObject({
  project: z.string().optional().catch(undefined),
  planned: z
    .looseObject({
      action: z.string().optional().catch(undefined),
      reason: z.string().optional().catch(undefined),
      call: z.looseObject({ op: z.string() }).optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
});

/**
 * An action a recent decision sent, withdrew or parked (the status page's Actions): what became of
 * it, and the decision that reported it, with a link to explain's answer for that decision.
 */
export interface ActionView {
  /** The outbox id. */
  id?: string;
  itemKey: string;
  item?: DecisionView['item'];
  rule?: string;
  action?: string;
  op?: string;
  call: string;
  status: string;
  detail?: string;
  error?: string;
  parked?: string;
  /** When the decision was recorded (ms since the epoch). */
  at: number;
  /** The id of the decision that reported it: its card on the page is `#decision-<id>`. */
  decision?: string;
  explain?: string;
}

/** The actions of the decisions that acted, in the order given (newest first), at most `limit`. */
export function actionViews(records: readonly DecisionRecord[], limit: number): ActionView[] {
  const out: ActionView[] = [];
  for (const record of records) {
    if (record.acted !== true) continue;
    const parsed = decisionSchema.safeParse(record.decision);
    if (!parsed.success) continue;
    const view = decisionView(record);
    for (const call of parsed.data.execution?.calls ?? []) {
      if (call.status === 'skipped') continue;
      if (out.length >= limit) return out;
      out.push({
        ...(call.id !== undefined ? { id: call.id } : {}),
        itemKey: record.itemKey,
        ...(view.item ? { item: view.item } : {}),
        ...(call.rule !== undefined ? { rule: call.rule } : {}),
        ...(call.action !== undefined ? { action: call.action } : {}),
        ...(call.op !== undefined ? { op: call.op } : {}),
        call: call.call,
        status: call.status,
        ...(call.detail !== undefined ? { detail: call.detail } : {}),
        ...(call.error !== undefined && call.error !== call.detail ? { error: call.error } : {}),
        ...(call.parked !== undefined ? { parked: call.parked } : {}),
        at: record.at,
        ...(record.id !== undefined ? { decision: record.id } : {}),
        ...(view.explain ? { explain: view.explain } : {}),
      });
    }
  }
  return out;
}

export interface ParkedView {
  id: string;
  itemKey: string;
  rule: string;
  project?: string;
  action?: string;
  /** The API operation only: the arguments (comment bodies...) stay out of the page. */
  op?: string;
  attempts: number;
  reason: string;
  parkedAt: number;
  createdAt: number;
  lastError?: string;
  /** Explain's answer for the decision that planned it (`?action=<id>`), when the item has a decision kept. */
  explain?: string;
}

/** Only parked actions are given here; `parked` is set on each (state/store.ts `listParked`). */
export function parkedView(action: OutboxAction, target?: ExplainTarget): ParkedView {
  const stored = storedCallSchema.safeParse(action.call);
  const call = stored.success ? stored.data : undefined;
  const view: ParkedView = {
    id: action.id,
    itemKey: action.itemKey,
    rule: action.rule,
    attempts: action.attempts,
    reason: action.parked?.reason ?? '',
    parkedAt: action.parked?.at ?? action.createdAt,
    createdAt: action.createdAt,
  };
  if (call?.project !== undefined) view.project = call.project;
  if (call?.planned?.action !== undefined) view.action = call.planned.action;
  if (call?.planned?.call !== undefined) view.op = call.planned.call.op;
  if (action.lastError !== undefined && action.lastError !== view.reason) view.lastError = action.lastError;
  if (target) view.explain = explainLink(target, { action: action.id });
  return view;
}
