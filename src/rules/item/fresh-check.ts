/**
 * An action is sent only while the item's latest evaluation still plans it. Before a merge, a move,
 * an arming of merge-when-build-succeeds or a cancel, the executor asks this check: the item is read
 * afresh, the rules in force NOW are evaluated on it with the trigger that planned the call, and
 * the call goes ahead only if that fresh plan holds the very same call (same rule, same pinned
 * head, same arguments). Otherwise the action is withdrawn, with the reason in words
 * ("withdrawn: automerge no longer matches (labels include automerge seen [bug])").
 *
 * A merge the merge queue makes (docs/merge-queue.md) is judged the same way, every `statuses`
 * condition waived: the rule that queued it must still apply and hold, the head be the one the queue
 * pinned, and every required status of the queue passed on it. The gate of merge-like actions
 * (docs/rules.md#members-commands) must hold on the fresh read too: the queue's merge replays the
 * member's comment that queued it (its stored trigger), whose author's access and "no push since"
 * are read again here.
 *
 * A merge the merge watch makes is planned by no rule as such: the rule armed
 * merge-when-build-succeeds while its statuses were pending, and the watch merges once they have
 * passed. For it, the rule must still apply and every one of its conditions must still hold on the
 * fresh read, except those that required the statuses to be pending (the watch checks that every
 * required status has passed on the pinned head, on this same read).
 */
import { mergeAuthority, mergeBlocker, bucketsOf } from '../actions/merge-safety.ts';
import type { CompiledRule, CompiledRuleSet } from '../engine/compile.ts';
import { createEvalInput, type EvalInput } from '../engine/eval-input.ts';
import { evaluate, type Evaluation, type RuleEvaluation } from '../engine/engine.ts';
import { actionIdOf } from '../executor/ids.ts';
import type { StoredCall } from '../executor/types.ts';
import type { ItemAddress, SnapshotReader } from './read-snapshot.ts';
import { showValue } from '../engine/show-value.ts';
import type { ItemKind, ItemSnapshot, Trigger } from '../engine/snapshot.ts';

export type FreshVerdict =
  | {
      planned: true;
      /**
       * The item as this check just read it. The call is made on these facts with no read in
       * between: a second read (of state and head only) would let a label added between the two
       * pass unseen.
       */
      snapshot: ItemSnapshot;
    }
  | {
      planned: false;
      /** `<rule> no longer matches (<condition> seen <value>)` and the like: explain shows it. */
      reason: string;
    };

/** Asks whether `stored` (an action on `itemKey`) is still planned on the item's current state. */
export type FreshCheck = (itemKey: string, stored: StoredCall) => Promise<FreshVerdict>;

export interface FreshCheckDeps {
  reader: SnapshotReader;
  rules: { forProject(pathWithNamespace: string): CompiledRuleSet };
  now?: () => number;
}

/** A trigger under which every event rule applies: for records written before triggers were kept. */
export const ANY_EVENT: Trigger = { kind: 'manual', byBot: false };

/** The item an action is about, from its key (`merge_request:<project id>:<id>`). */
export function itemAddressOf(itemKey: string): ItemAddress | undefined {
  const match = /^(issue|merge_request):(\d+):(\d+)$/.exec(itemKey);
  if (!match) return undefined;
  return { type: match[1] as ItemKind, projectId: Number(match[2]), id: Number(match[3]) };
}

/** Why the rule that planned a call no longer plans it, from the fresh evaluation. */
export function withdrawalReason(evaluation: Evaluation, rule: string, op: string): string {
  const record = evaluation.rules.find((one) => one.rule === rule);
  if (!record) return `rule "${rule}" is no longer in the rules`;
  if (!record.applies) return `${rule} no longer applies (${record.why ?? 'not on this event'})`;
  if (!record.matched) return `${rule} no longer matches (${failing(record)})`;
  for (const action of record.actions)
    if (action.skipped !== undefined && action.planned.length === 0)
      return `${rule} no longer plans ${op} (${action.action}: ${action.skipped})`;
  return `${rule} now plans other calls than this ${op}`;
}

function failing(record: RuleEvaluation): string {
  const condition = record.conditions.find((one) => !one.ok);
  if (!condition) return 'a condition no longer holds';
  const seen = condition.unknown
    ? `unknown${condition.note ? `: ${condition.note}` : ''}`
    : showValue(condition.value);
  return `${condition.describe} seen ${seen}`;
}

/**
 * Why the rule's action that the merge queue (`queue`) or the merge watch (`merge_when_build_succeeds`)
 * carries out has no authority on this read, or undefined. A rule that no longer has such an
 * action is judged by the default gate.
 */
function authorityRefusal(
  rule: CompiledRule,
  origin: 'merge_watch' | 'merge_queue',
  input: EvalInput,
): string | undefined {
  const name = origin === 'merge_queue' ? 'queue' : 'merge_when_build_succeeds';
  const actions = rule.actions.filter((action) => action.name === name);
  if (input.snapshot.kind !== 'merge_request') return 'the item is not a merge request';
  const verdicts =
    actions.length > 0
      ? actions.map((action) => action.authority?.(input))
      : [mergeAuthority(input.snapshot)];
  for (const verdict of verdicts) if (verdict && !verdict.ok) return verdict.reason;
  return undefined;
}

export function createFreshCheck(deps: FreshCheckDeps): FreshCheck {
  const now = deps.now ?? (() => Date.now());
  return async (itemKey, stored) => {
    const item = itemAddressOf(itemKey);
    const { rule, call } = stored.planned;
    if (!item) return { planned: false, reason: `cannot tell which item ${itemKey} is` };
    const set = deps.rules.forProject(stored.project);
    const compiled = set.rules.find((one) => one.name === rule);
    if (!compiled) return { planned: false, reason: `rule "${rule}" is no longer in the rules` };
    const trigger = await deps.reader.confirm(item, stored.trigger ?? ANY_EVENT, set.needs);
    if (!trigger) return { planned: false, reason: 'the comment that caused it is gone from the server' };
    const read = await deps.reader.read(item, trigger, set.needs);
    if (!read) return { planned: false, reason: 'the item is gone (404)' };
    // The merge watch's merge completes the arming itself: the rule is judged as it was then, with
    // nothing armed (a rule that arms only when `merge_when_build_succeeds: false` still holds).
    const snapshot =
      stored.origin === 'merge_watch' && read.kind === 'merge_request'
        ? { ...read, merge_when_build_succeeds: false, botMerge: false }
        : read;
    const at = now();
    const evaluation = evaluate(set, snapshot, { now: at });

    if (stored.origin === 'merge_watch' || stored.origin === 'merge_queue') {
      // The watch waited for pending statuses to pass; the queue tests a head of its own making, so
      // no `statuses` condition of the rule is judged (the queue checks its required statuses below).
      const waivedState = stored.origin === 'merge_watch' ? 'pending' : undefined;
      const record = evaluation.rules.find((one) => one.rule === rule);
      if (!record?.applies) return { planned: false, reason: withdrawalReason(evaluation, rule, call.op) };
      const blocking = record.conditions.findIndex(
        (result, index) =>
          !result.ok &&
          !(compiled.conditions[index]?.guarantees ?? []).some(
            (guarantee) =>
              guarantee.kind === 'statuses' && (waivedState === undefined || guarantee.state === waivedState),
          ),
      );
      if (blocking >= 0)
        return {
          planned: false,
          reason: `${rule} no longer matches (${failing({ ...record, conditions: [record.conditions[blocking]!] })})`,
        };
      if (snapshot.kind !== 'merge_request')
        return { planned: false, reason: 'the item is not a merge request' };
      const blocker = mergeBlocker(snapshot);
      if (blocker) return { planned: false, reason: blocker };
      // Whose decision the merge carries out holds on this read too (the author's access, or the
      // member's comment of the stored trigger read again, with no push after it).
      const refused = authorityRefusal(compiled, stored.origin, createEvalInput(snapshot, at));
      if (refused) return { planned: false, reason: refused };
      const pinned = 'sha' in call.args ? call.args.sha : undefined;
      if (snapshot.sha !== pinned)
        return {
          planned: false,
          reason: `the head moved: armed at ${String(pinned).slice(0, 8)}, now ${snapshot.sha?.slice(0, 8) ?? 'none'}`,
        };
      for (const [name, bucket] of bucketsOf(snapshot, stored.required ?? []))
        if (bucket !== 'passed') return { planned: false, reason: `required status ${name} is ${bucket}` };
      return { planned: true, snapshot };
    }

    const id = actionIdOf(itemKey, rule, call);
    if (evaluation.plan.some((planned) => actionIdOf(itemKey, planned.rule, planned.call) === id))
      return { planned: true, snapshot };
    return { planned: false, reason: withdrawalReason(evaluation, rule, call.op) };
  };
}
