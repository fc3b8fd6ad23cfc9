/**
 * Pending actions that the latest evaluation no longer plans leave the outbox (withdrawn, with the
 * reason): an action is sent only while the item's latest evaluation still plans it.
 *
 * - After every evaluation of an item: a pending action of a rule that was judged in it (the rule
 *   applied to this event) and whose call is not in its plan is withdrawn. A rule that did not
 *   apply (another event) says nothing about the action, which stays for its own re-evaluation.
 * - After the rules are reloaded: the actions of a rule that is gone are withdrawn.
 */
import type { OutboxAction, StateStore } from '../../state/index.ts';
import type { CompiledRuleSet } from '../engine/compile.ts';
import type { Evaluation } from '../engine/engine.ts';
import type { CallReport, Executor } from '../executor/executor.ts';
import { withdrawalReason } from './fresh-check.ts';

/**
 * An action a sweep decided, not a rule's plan: the merge watch's merge, the merge queue's merges and
 * comments (a removal, a queue that cannot move), a disarm. No evaluation of the rules plans it, so
 * none withdraws it: its own gate is the fresh check before a merge (fresh-check.ts), or the sweep's
 * decision as recorded (a merge request marked as left its queue).
 */
export function isSweepAction(action: OutboxAction): boolean {
  const origin = (action.call as { origin?: unknown } | null)?.origin;
  return origin === 'merge_watch' || origin === 'merge_queue' || origin === 'disarm';
}

/** A merged label write names every rule that asked for it, comma-separated. */
const rulesOf = (action: OutboxAction): string[] => action.rule.split(', ');

/** The item's actions in the outbox, pending or parked. */
export function actionsOfItem(
  store: Pick<StateStore, 'dueActions' | 'listParked'>,
  itemKey: string,
): OutboxAction[] {
  const all = [...store.dueActions(Number.MAX_SAFE_INTEGER), ...store.listParked()];
  return all.filter((action) => action.itemKey === itemKey);
}

/** Withdraws the item's pending actions that this evaluation judged and no longer plans. */
export async function withdrawUnplanned(
  store: Pick<StateStore, 'dueActions' | 'listParked'>,
  executor: Executor,
  evaluation: Evaluation,
  itemKey: string,
  plannedIds: ReadonlySet<string>,
): Promise<CallReport[]> {
  if (executor.dryRun) return [];
  const reports: CallReport[] = [];
  for (const action of actionsOfItem(store, itemKey)) {
    if (plannedIds.has(action.id)) continue;
    if (isSweepAction(action)) continue;
    // What a note planned is judged only by an evaluation of that note: another comment on the
    // item (by someone else, with other text) says nothing about the first one's command.
    const planner = (action.call as { trigger?: { kind?: string; noteId?: number } }).trigger;
    if (planner?.kind === 'note' && evaluation.trigger.noteId !== planner.noteId) continue;
    const rules = rulesOf(action);
    const records = rules.map((rule) => evaluation.rules.find((one) => one.rule === rule));
    // Judged: every rule behind the action ran on this event (or is gone from the rules).
    if (!records.every((record) => record === undefined || record.applies)) continue;
    const op = (action.call as { planned?: { call?: { op?: string } } }).planned?.call?.op ?? 'call';
    const reason =
      rules.length > 1
        ? `the label write of ${action.rule} is superseded by the latest evaluation`
        : withdrawalReason(evaluation, rules[0]!, op);
    reports.push(await executor.withdrawAction(action, reason));
  }
  return reports;
}

/**
 * After a reload: withdraws every action whose rule is no longer in its project's rules. A project
 * whose rules are not known yet (`forProject` answers undefined: its `.hookbot.yml` not read since
 * the start) keeps its actions.
 */
export async function withdrawRemovedRules(
  store: Pick<StateStore, 'dueActions' | 'listParked'>,
  executor: Executor,
  forProject: (path: string) => CompiledRuleSet | undefined,
): Promise<CallReport[]> {
  const reports: CallReport[] = [];
  for (const action of [...store.dueActions(Number.MAX_SAFE_INTEGER), ...store.listParked()]) {
    const project = (action.call as { project?: unknown }).project;
    if (typeof project !== 'string') continue;
    const set = forProject(project);
    if (!set) continue;
    const names = new Set(set.rules.map((rule) => rule.name));
    const gone = rulesOf(action).filter((rule) => !names.has(rule));
    if (gone.length === 0) continue;
    reports.push(
      await executor.withdrawAction(action, `rule "${gone.join('", "')}" is no longer in the rules`),
    );
  }
  return reports;
}
