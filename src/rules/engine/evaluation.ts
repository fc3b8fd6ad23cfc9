/**
 * What an evaluation records (engine.ts fills it in; blocking.ts, explain.ts, the executor and the
 * decision log read it), apart from the engine so that its readers do not import the engine.
 */
import type { ConditionResult } from './define-condition.ts';
import type { PlannedCall } from './planned-call.ts';
import type { ItemKind, Trigger } from './snapshot.ts';

export interface ActionRecord {
  action: string;
  describe: string;
  planned: readonly PlannedCall[];
  /** Why the action planned nothing. */
  skipped?: string;
  /** The skip holds the rule back (a merge that cannot happen), rather than "already done". */
  blocks?: boolean;
}

export interface RuleEvaluation {
  rule: string;
  source?: { file: string; line: number; column: number };
  /** The rule's `on`/`schedule`, `for` and bot setting let it run on this event and item. */
  applies: boolean;
  /** Why it does not apply. */
  why?: string;
  matched: boolean;
  /** Every condition's verdict (all are evaluated, for explain; empty when the rule does not apply). */
  conditions: readonly ConditionResult[];
  actions: readonly ActionRecord[];
  /** What this rule contributed; label changes are merged into one write in the evaluation's plan. */
  planned: readonly PlannedCall[];
}

export interface ItemSummary {
  kind: ItemKind;
  id: number;
  iid: number;
  project: string;
  title: string;
  state: string;
  labels: string[];
  sha?: string | null;
}

export interface Evaluation {
  item: ItemSummary;
  trigger: Trigger;
  event: string;
  /** The clock of the evaluation (ISO 8601). */
  at: string;
  rules: RuleEvaluation[];
  /** The calls to make, in order. */
  plan: PlannedCall[];
}
