/**
 * Evaluations, matches and actions per rule, counted from the decisions as they are recorded: every
 * evaluation (hooks, sweeps) ends in `recordDecision`, so observing it there misses none and needs no
 * hook in the engine.
 */
import type { ActionResult, Metrics } from './metrics.ts';
import type { StateStore } from '../state/index.ts';

interface DecisionShape {
  evaluation?: { rules?: { rule: string; matched: boolean }[]; trigger?: { kind?: string } };
  execution?: { dryRun?: boolean; calls?: { rule: string; action: string; status: string }[] };
}

const RESULTS: Record<string, ActionResult> = {
  done: 'done',
  skipped: 'noop',
  failed: 'failed',
  ambiguous: 'retry',
  'dry-run': 'dry_run',
};

/**
 * The store, with `recordDecision` also counting into `metrics`. Where several replicas share the
 * state (PostgreSQL), each decision also names the replica that made it (`replica`), so explain and
 * the status page say which replica did what.
 */
export function withDecisionMetrics(store: StateStore, metrics: Metrics): StateStore {
  const replica = store.fleet?.replicaId;
  const recordDecision = async (itemKey: string, decision: unknown) => {
    count(metrics, decision as DecisionShape);
    const stamped =
      replica !== undefined && decision !== null && typeof decision === 'object' && !Array.isArray(decision)
        ? { ...decision, replica }
        : decision;
    return store.recordDecision(itemKey, stamped);
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
  metrics.evaluation(decision.evaluation?.trigger?.kind === 'schedule' ? 'sweep' : 'hook');
  for (const rule of decision.evaluation?.rules ?? []) if (rule.matched) metrics.ruleMatch(rule.rule);
  for (const call of decision.execution?.calls ?? []) {
    // A merged labels write names every contributing rule, comma-separated.
    for (const rule of call.rule.split(', '))
      metrics.ruleAction(rule, call.action, RESULTS[call.status] ?? 'failed');
  }
}
