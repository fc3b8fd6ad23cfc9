/**
 * A condition is data plus a pure function: a parameter schema (part of the rule file grammar),
 * a `describe` for docs, `check` and explain, and a `compile` run once at load that returns the
 * cheap per-event evaluator (regexes, globs and durations are compiled there, not per event).
 */
import type { z } from 'zod';
import type { EvalInput } from './eval-input.ts';
import type { ItemKind } from './snapshot.ts';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * The outcome of a condition on one item. `unknown` means the fact was not available (changed
 * files not read, no head commit...): an unknown condition never matches, and `not` of an unknown
 * stays unknown (three-valued logic), so missing data can never make a rule act.
 */
export interface Verdict {
  /** The value seen, for explain. */
  value: JsonValue;
  ok: boolean;
  unknown?: boolean;
  /** Why the value is unknown or not applicable. */
  note?: string;
  /** Verdicts of nested conditions (`all`, `any`, `not`). */
  children?: ConditionResult[];
}

export interface ConditionResult extends Verdict {
  describe: string;
}

/** What a condition that held proves about the item: actions rely on it (merge, arming). */
export interface StatusesGuarantee {
  kind: 'statuses';
  state: 'success' | 'pending' | 'failed' | 'missing';
  required: readonly string[];
}
export type Guarantee = StatusesGuarantee;

/** Returns a fresh object on every call: the engine adds the condition's `describe` to it. */
export type Evaluator = (input: EvalInput) => Verdict;

export interface CompiledCondition {
  name: string;
  describe: string;
  itemKinds: readonly ItemKind[];
  evaluate: Evaluator;
  /** Facts that hold whenever this condition holds. */
  guarantees: readonly Guarantee[];
}

/** A condition as written: an object with exactly one key, the condition's name. */
export type ConditionSpec = Readonly<Record<string, unknown>>;

/** The recursive pieces of the grammar, for `all`, `any` and `not`. */
export interface RecursiveSchemas {
  condition: z.ZodType<ConditionSpec>;
  conditions: z.ZodType<ConditionSpec[]>;
}

/** Given to `describe` and `compile`, so that `all`, `any` and `not` can handle nested conditions. */
export interface ConditionTools {
  compileCondition(spec: ConditionSpec): CompiledCondition;
  describeCondition(spec: ConditionSpec): string;
}

export interface ConditionDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  /** One sentence for the reference. */
  summary: string;
  /** Example parameters, shown in the reference and checked by the tests. */
  example: z.input<S>;
  params: S | ((recursive: RecursiveSchemas) => S);
  /** The kinds of item the condition reads; on other kinds it is unknown. Default: both. */
  itemKinds?: readonly ItemKind[];
  describe(params: z.output<S>, tools: ConditionTools): string;
  compile(
    params: z.output<S>,
    tools: ConditionTools,
  ): Evaluator | { evaluate: Evaluator; guarantees: readonly Guarantee[] };
}

export function defineCondition<S extends z.ZodType>(
  definition: ConditionDefinition<S>,
): ConditionDefinition<S> {
  return definition;
}

export const BOTH_KINDS: readonly ItemKind[] = ['issue', 'merge_request'];
export const MERGE_REQUESTS_ONLY: readonly ItemKind[] = ['merge_request'];
