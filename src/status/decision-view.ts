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
  /** Set when the record could not be read at all. */
  unreadable?: boolean;
}

function outcomeOf(calls: readonly { status: string }[]): string {
  if (calls.length === 0) return 'nothing to do';
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.status, (counts.get(call.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
}

export function decisionView(record: DecisionRecord): DecisionView {
  const parsed = decisionSchema.safeParse(record.decision);
  if (!parsed.success)
    return {
      itemKey: record.itemKey,
      at: record.at,
      dryRun: false,
      matched: [],
      plan: [],
      execution: [],
      outcome: 'unknown',
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
  return {
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
}

/** Only parked actions are given here; `parked` is set on each (state/store.ts `listParked`). */
export function parkedView(action: OutboxAction): ParkedView {
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
  return view;
}
