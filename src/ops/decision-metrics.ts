/**
 * Evaluations and matches per rule, counted from the decisions as they are recorded: every
 * evaluation that decides something (hooks, sweeps) ends in `recordDecision`, so observing it there
 * misses none and needs no hook in the engine. What became of each action is counted where the
 * executor settles it (`hookbot_rule_actions_total`, start-from-config.ts): not every outcome is in
 * a decision (a retry's, a withdrawal after a rules reload, the merge watch's merges).
 */
import { currentLogContext } from './log-context.ts';
import type { Metrics } from './metrics.ts';
import type { StateStore } from '../state/index.ts';

interface DecisionShape {
  /** A merge queue's event (rules/queue/queue-events.ts): recorded as a decision, but no evaluation. */
  queueEvent?: unknown;
  evaluation?: { rules?: { rule: string; matched: boolean }[]; trigger?: { kind?: string } };
}

/**
 * The store, with `recordDecision` also counting into `metrics`. Where several replicas share the
 * state (PostgreSQL), each decision also names the replica that made it (`replica`), so explain and
 * the status page say which replica did what.
 */
export function withDecisionMetrics(store: StateStore, metrics: Metrics): StateStore {
  const replica = store.fleet?.replicaId;
  const recordDecision: StateStore['recordDecision'] = async (itemKey, decision, options) => {
    count(metrics, decision as DecisionShape);
    const stamped =
      replica !== undefined && decision !== null && typeof decision === 'object' && !Array.isArray(decision)
        ? { ...decision, replica }
        : decision;
    return store.recordDecision(itemKey, stamped, options);
  };
  // Every other member is the store's own, bound to it (its methods use private fields).
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'recordDecision') return recordDecision;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function count(metrics: Metrics, decision: DecisionShape): void {
  if (decision.queueEvent !== undefined) return;
  // A sweep's run carries its job id (scheduler.ts, sweep-set.ts): the reconcile, merge watch and
  // merge queue sweeps evaluate items under the triggers of hooks, so the trigger cannot tell.
  const bySweep = currentLogContext()?.job !== undefined || decision.evaluation?.trigger?.kind === 'schedule';
  metrics.evaluation(bySweep ? 'sweep' : 'hook');
  for (const rule of decision.evaluation?.rules ?? []) if (rule.matched) metrics.ruleMatch(rule.rule);
}
