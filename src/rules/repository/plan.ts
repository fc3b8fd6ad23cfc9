/**
 * The plan of a rules change: the proposed rules evaluated in dry run against every open issue and
 * merge request of a project, next to the rules in force, and what would change, in words:
 * "would close 2 issues: #3, #7", "would merge !4 now", "would stop applying rule triage (label:
 * add [bug]): #1". Read-only: the plan's client refuses every write (refuseWrites), and nothing
 * is recorded.
 *
 * Each item is read once (the needs of both sets) and evaluated twice, as if it had just been opened
 * or changed (TRIGGERS below). "Would" lines are the calls the
 * proposed rules plan that the rules in force do not; "would stop" lines name the rules in force
 * that match an item and that the proposed rules no longer have or no longer match. Bounded by a
 * budget of items and API calls: when it is reached the plan says so, and covers what it read.
 *
 * On a merge request (`for`), the plan is shown to its readers, and was written by whoever may push to
 * its source branch: it evaluates only the items they may all read (plan-access.ts), so it reveals
 * nothing they could not read, and no condition on the rest can serve as a yes/no oracle. What they may
 * not read is neither evaluated nor counted. The text a comment would render on a confidential issue is
 * not shown (the comment on the merge request is read by more people than the issue).
 */
import { clientOver, refuseWrites, type Client, type Issue } from '../../api/index.ts';
import { ruleSet, type CompiledRuleSet } from '../engine/compile.ts';
import { evaluate, type Evaluation } from '../engine/engine.ts';
import type { BotIdentity, ItemKind, Trigger } from '../engine/snapshot.ts';
import { createSnapshotReader } from '../item/read-snapshot.ts';
import { readAudience, type Reader } from './plan-access.ts';
import { counted } from '../../text/index.ts';
import type { QueueEntry } from '../../state/index.ts';
import { callEffects } from '../executor/calls/index.ts';
import { notQueuedAgain } from '../executor/calls/merge-queue-enqueue.ts';
import { itemKeyOf } from '../executor/ids.ts';

export interface PlanBudget {
  /** Most open items evaluated. */
  items: number;
  /** Most API calls made (listings included). */
  apiCalls: number;
}

export const DEFAULT_PLAN_BUDGET: PlanBudget = { items: 200, apiCalls: 1000 };

/** One change: what would happen (or stop), and to which items. */
export interface PlanChange {
  /**
   * `would close {items}`, `would add label bug to {items}`, `would stop applying rule "triage"
   * (close) to {items}`, then `|` and the kind of item; `{items}` becomes the count and the list.
   */
  what: string;
  /** `now` changes are calls the proposed rules would make; `stop` ones, rules in force that would no longer act. */
  kind: 'now' | 'stop';
  items: string[];
}

export interface PlanReport {
  project: string;
  /** Open items listed (issues and merge requests). */
  listed: number;
  /** False when the API calls ran out before every open item was listed: `listed` is a lower bound. */
  listedAll: boolean;
  evaluated: number;
  apiCalls: number;
  /** Which budget was reached, if one was. */
  budgetReached?: 'items' | 'apiCalls';
  budget: PlanBudget;
  changes: PlanChange[];
  /** On a merge request: who the plan was computed for (only what they may all read). */
  readers?: Reader[];
  /** Kinds of items not evaluated at all, and why: `issues: @bob (not a member) may not read the project`. */
  notEvaluated: string[];
}

/** The plan needs only the HTTP core: it builds its own read-only client over it. */
export type PlanClient = Pick<Client, 'http' | 'statusTrust'>;

/**
 * Each item as if it had just been opened or changed: the rules that listen to those events (and,
 * for merge requests, to pushes and status changes) run; rules on notes, closes and merges, and
 * rules that only run on a schedule, do not.
 */
const event = (name: string) => ({ name, byBot: false });
const TRIGGERS: Record<ItemKind, Trigger> = {
  issue: {
    kind: 'issue',
    action: 'update',
    byBot: false,
    events: [event('issue.open'), event('issue.update'), event('issue.reopen')],
  },
  merge_request: {
    kind: 'merge_request',
    action: 'update',
    byBot: false,
    events: [
      event('merge_request.open'),
      event('merge_request.update'),
      event('merge_request.reopen'),
      event('push'),
      event('status.changed'),
    ],
  },
};
const KIND_WORDS: Record<ItemKind, [string, string]> = {
  issue: ['issue', 'issues'],
  merge_request: ['merge request', 'merge requests'],
};

const itemName = (kind: ItemKind, iid: number): string => `${kind === 'issue' ? '#' : '!'}${iid}`;

const planEffects = (evaluation: Evaluation, hideText: boolean): Set<string> =>
  new Set(evaluation.plan.flatMap((planned) => callEffects(planned.call, hideText)));

/** The rules that match, by name, with what they do. */
function matchedRules(evaluation: Evaluation): Map<string, string> {
  const matched = new Map<string, string>();
  for (const rule of evaluation.rules)
    if (rule.applies && rule.matched)
      matched.set(rule.rule, rule.actions.map((action) => action.describe).join('; '));
  return matched;
}

/** What would change on one item, as effects; `hideText`: without the text of comments (a confidential item). */
export function compareEvaluations(
  current: Evaluation,
  proposed: Evaluation,
  hideText = false,
): { now: string[]; stop: string[] } {
  const before = planEffects(current, hideText);
  const now = [...planEffects(proposed, hideText)].filter((effect) => !before.has(effect));
  const still = matchedRules(proposed);
  const stop = [...matchedRules(current)]
    .filter(([name]) => !still.has(name))
    .map(([name, actions]) => `would stop applying rule "${name}" (${actions}) to {items}`);
  return { now, stop };
}

export interface PlanInput {
  client: PlanClient;
  project: string;
  current: CompiledRuleSet;
  proposed: CompiledRuleSet;
  budget?: Partial<PlanBudget>;
  bot?: BotIdentity;
  now?: number;
  /**
   * The merge request the plan is shown on: only what its author (and, from a fork, whoever may push
   * to it) may read is evaluated. Absent (`hookbot plan`, run by the operator): every open item.
   */
  for?: { mergeRequest: Parameters<typeof readAudience>[2] };
  /**
   * The bot's merge-queue entries (its state): a merge request the queue took out at its head is not
   * queued again there, by either set of rules, as the bot does (issue 37). Absent: not known.
   */
  queued?: readonly QueueEntry[];
}

/** The evaluation without the queue calls the bot would skip (taken out at this head: notQueuedAgain). */
function withoutRequeue(evaluation: Evaluation, queued: readonly QueueEntry[], itemKey: string): Evaluation {
  const plan = evaluation.plan.filter(
    (planned) =>
      planned.call.op !== 'mergeQueue.enqueue' ||
      notQueuedAgain(queued, itemKey, planned.call.args) === undefined,
  );
  return plan.length === evaluation.plan.length ? evaluation : { ...evaluation, plan };
}

export async function planChange(input: PlanInput): Promise<PlanReport> {
  const budget = { ...DEFAULT_PLAN_BUDGET, ...input.budget };
  const client = clientOver(
    refuseWrites(
      input.client.http,
      (spec) => `the plan makes no write: refused ${spec.method} ${spec.route}`,
    ),
    input.client.statusTrust,
  );
  const startCalls = client.http.stats.calls;
  const calls = () => client.http.stats.calls - startCalls;
  const reader = createSnapshotReader(client, input.bot ? { bot: input.bot } : {});
  const needs = ruleSet([...input.current.rules, ...input.proposed.rules]).needs;
  const now = input.now ?? Date.now();
  const report: PlanReport = {
    project: input.project,
    listed: 0,
    listedAll: true,
    evaluated: 0,
    apiCalls: 0,
    budget,
    changes: [],
    notEvaluated: [],
  };
  const byWhat = new Map<string, PlanChange>();
  const note = (what: string, kind: PlanChange['kind'], item: string) => {
    const change = byWhat.get(`${kind}:${what}`) ?? { what, kind, items: [] };
    change.items.push(item);
    byWhat.set(`${kind}:${what}`, change);
  };

  const project = await client.projects.get(input.project);
  reader.rememberProject(project);
  const audience = input.for ? await readAudience(client, project, input.for.mergeRequest) : undefined;
  if (audience) report.readers = audience.readers;
  const filter = { state: 'opened', order_by: 'created_at', sort: 'asc' } as const;
  outer: for (const kind of ['issue', 'merge_request'] as const) {
    const readable = audience ? (kind === 'issue' ? audience.issues : audience.mergeRequests) : true;
    if (readable !== true) {
      report.notEvaluated.push(`${KIND_WORDS[kind][1]}: ${readable}`);
      continue;
    }
    const listing =
      kind === 'issue'
        ? client.issues.list(project.id, filter)
        : client.mergeRequests.list(project.id, filter);
    for await (const item of listing) {
      // Not read, not evaluated, not counted: the plan says nothing of what its readers may not read.
      const issue = kind === 'issue' ? (item as Issue) : undefined;
      if (audience && issue && !audience.mayReadIssue(issue)) continue;
      report.listed++;
      const outOfCalls = calls() >= budget.apiCalls;
      if (report.evaluated >= budget.items) {
        report.budgetReached = 'items';
        // Counting what is open goes on while the calls last (a listing page is a call).
        if (outOfCalls) {
          report.listedAll = false;
          break outer;
        }
        continue;
      }
      if (outOfCalls) {
        report.budgetReached = 'apiCalls';
        report.listedAll = false;
        break outer;
      }
      const snapshot =
        kind === 'issue'
          ? await reader.fromIssue(item as Parameters<typeof reader.fromIssue>[0], TRIGGERS.issue, needs)
          : await reader.fromMergeRequest(
              item as Parameters<typeof reader.fromMergeRequest>[0],
              TRIGGERS.merge_request,
              needs,
            );
      const name = itemName(kind, item.iid);
      const itemKey = itemKeyOf(kind, project.id, item.id);
      const judged = (evaluation: Evaluation) =>
        input.queued ? withoutRequeue(evaluation, input.queued, itemKey) : evaluation;
      const { now: changes, stop } = compareEvaluations(
        judged(evaluate(input.current, snapshot, { now })),
        judged(evaluate(input.proposed, snapshot, { now })),
        audience !== undefined && issue?.confidential === true,
      );
      for (const what of changes) note(`${what}|${kind}`, 'now', name);
      for (const what of stop) note(`${what}|${kind}`, 'stop', name);
      report.evaluated++;
    }
  }
  report.apiCalls = calls();
  report.changes = [...byWhat.values()];
  return report;
}

const LIST_LIMIT = 10;

function itemsText(items: readonly string[]): string {
  const shown = items.slice(0, LIST_LIMIT).join(', ');
  return items.length > LIST_LIMIT ? `${shown}, … (${items.length - LIST_LIMIT} more)` : shown;
}

/** `would close 2 issues: #3, #7`; `would add label bug to 1 issue: #4`; `would merge !4 now`. */
export function changeLine(change: PlanChange): string {
  const [what, kind = 'issue'] = change.what.split('|') as [string, ItemKind | undefined];
  const [one, many] = KIND_WORDS[kind];
  if (what === 'would merge now' && change.items.length === 1) return `would merge ${change.items[0]} now`;
  const count = `${change.items.length} ${change.items.length === 1 ? one : many}`;
  if (what === 'would merge now') return `would merge ${count} now: ${itemsText(change.items)}`;
  return what.replace('{items}', `${count}: ${itemsText(change.items)}`);
}

/** `3 open issues and merge requests evaluated`, `1 open issue or merge request evaluated`. */
const evaluatedItems = (count: number): string =>
  `${counted(count, 'open issue or merge request', 'open issues and merge requests')} evaluated`;

/** The budget, in words, when it was reached. */
export function budgetLine(report: PlanReport): string | undefined {
  if (report.budgetReached === 'items')
    return `budget reached: ${report.evaluated} of ${report.listedAll ? '' : 'at least '}${counted(report.listed, 'open item')} evaluated (at most ${report.budget.items}); the plan covers those only`;
  if (report.budgetReached === 'apiCalls')
    return `budget reached: ${counted(report.apiCalls, 'API call')} (at most ${report.budget.apiCalls}) after ${counted(report.evaluated, 'item')}; the plan covers those only`;
  return undefined;
}

/** The plan for people: one line per change. */
export function planLines(report: PlanReport): string[] {
  const lines: string[] = [];
  const now = report.changes.filter((change) => change.kind === 'now');
  const stop = report.changes.filter((change) => change.kind === 'stop');
  if (now.length === 0 && stop.length === 0)
    lines.push(`no change on the ${evaluatedItems(report.evaluated)}`);
  for (const change of [...now, ...stop]) lines.push(changeLine(change));
  for (const left of report.notEvaluated) lines.push(`not evaluated: ${left}`);
  const budget = budgetLine(report);
  if (budget) lines.push(budget);
  return lines;
}
