/**
 * An action is data plus a pure function: a parameter schema, a `describe`, and `plan`, which
 * returns the API calls that would bring the item to the wanted state, or says why none is
 * needed. Actions never call the API: the executor carries out the plan.
 */
import type { z } from 'zod';
import type { Guarantee } from './define-condition.ts';
import type { EvalInput } from './eval-input.ts';
import type { Approval, Proposal, Skip } from './planned-call.ts';
import type { ItemKind } from './snapshot.ts';

export interface ActionContext {
  /** The rule's name (comment markers carry it). */
  rule: string;
  /** What the rule's conditions proved (they all held): merges rely on satisfied statuses. */
  guarantees: readonly Guarantee[];
  /**
   * The rule comes from a project's own `.hookbot.yml`: written by whoever may push its default
   * branch, not by the operator. An action that could reveal more than its writer may read says no.
   */
  fromRepository?: boolean;
}

export type PlanOutcome = readonly Proposal[] | Skip;

/**
 * Whether an evaluation carries the authority for an action that uses the bot's power on a
 * person's decision (a merge, arming merge-when-build-succeeds, the queue): docs/rules.md#members-commands.
 * `comment`: a member's confirmed comment approved the head it read (the approval is recorded).
 */
export type Authority =
  | { ok: true; by: 'author' }
  | { ok: true; by: 'comment'; approval: Approval }
  | { ok: false; reason: string };

export interface ActionDefinition<S extends z.ZodType = z.ZodType, C = z.output<S>> {
  name: string;
  /**
   * Whether the rules of a project's own `.hookbot.yml` may use it by default (`allowed`), or only
   * when the operator lists it in `rules.repository.allow` (`operator`). The only place it is
   * written: docs/rules.md#actions-in-repository-rules and the allow-list check are derived from it.
   */
  inRepositories: 'allowed' | 'operator';
  summary: string;
  /** Example parameters for the reference; `null` when the example is the bare name. */
  example: z.input<S> | null;
  /** Set when the action may be written as a bare name (`- close`): its parameters then. */
  bareParams?: z.output<S>;
  params: S;
  /** The kinds of item it acts on; on others it plans nothing and says so. Default: both. */
  itemKinds?: readonly ItemKind[];
  describe(params: z.output<S>): string;
  /**
   * For the reference (docs/rules.md), when explain shows the planned call in other words than
   * `describe` (which it shows when the action plans nothing): `planned`, the reason the example plans
   * on a merge request into `master` (test/docs/docs-match-code.test.ts runs it), and `note`, how it
   * varies.
   */
  explained?: { planned: string; note: string };
  /** Work done once at load (templates); the result is what `plan` receives. */
  compile?(params: z.output<S>): C;
  /** When the rule matched. */
  plan(compiled: C, input: EvalInput, context: ActionContext): PlanOutcome;
  /** When the rule applied but did not match (label toggles); null: nothing to say. */
  planUnmatched?(compiled: C, input: EvalInput, context: ActionContext): PlanOutcome | null;
  /**
   * For actions gated on whose decision they carry out (merge-safety.ts `mergeAuthority`): the
   * check, or undefined when these parameters waive it (`authors: anyone`). The fresh check before
   * the merge queue's and the merge watch's merges asks it again on its fresh read.
   */
  authority?(compiled: C): ((input: EvalInput) => Authority) | undefined;
}

export function defineAction<S extends z.ZodType, C = z.output<S>>(
  definition: ActionDefinition<S, C>,
): ActionDefinition<S, C> {
  return definition;
}

export type AnyActionDefinition = ActionDefinition<z.ZodType, unknown>;

export interface CompiledAction {
  name: string;
  /**
   * The parameters as validated (a bare name's: `bareParams`): what checks across rule sets read,
   * such as the queue an operator's rule feeds (rules/repository/queues.ts).
   */
  params: unknown;
  describe: string;
  itemKinds: readonly ItemKind[];
  plan(input: EvalInput, context: ActionContext): PlanOutcome;
  planUnmatched?(input: EvalInput, context: ActionContext): PlanOutcome | null;
  /** Present when the action is gated (`ActionDefinition.authority`): the snapshot's needs include the facts it reads. */
  authority?(input: EvalInput): Authority;
}
