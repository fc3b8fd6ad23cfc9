/**
 * The echo brake (issue 28): a rule with `allow_bot: true` runs on the bot's own events, so two such
 * rules can answer each other for ever (one swaps a label to b, the other back to a: 131 writes in
 * 20 s on one issue, until the file was removed). Hook-driven rules have no per-run budget as
 * scheduled ones do, so the writes a rule makes to an item in an evaluation caused only by the bot's
 * own events (its echoes) are counted, per item and rule, in a sliding window:
 *
 * - an echo evaluation whose writes would take a rule past `writes` in `windowMs` on that item trips
 *   the brake: the rule is paused in that project (`echo:<project>:<rule>` in the store's paused
 *   rules, the reason naming the item, the count and the way to approve), and the evaluation goes on
 *   without it;
 * - a paused rule does not run in that project, on any event, until a person approves it
 *   (`hookbot sweep --once --approve RULE [--project P]`, which also starts its count afresh) or its
 *   definition changes (the pause records the definition that tripped: rules/item/brake.ts).
 *
 * Per project rather than per item: a rule that loops on one item loops on every item it matches,
 * and the pauses stay bounded by the rules in force (one per project and rule), whatever the number
 * of items. The counts are this process's (a bounded map, least recently written first out): a
 * restart starts them afresh, and with several replicas each counts the writes it made, so a loop
 * spread over R replicas trips after at most R times the bound. The pause itself is in the store.
 */
import type { PausedRule } from '../../state/index.ts';
import type { CompiledRule } from '../engine/compile.ts';
import type { Evaluation } from '../engine/engine.ts';
import type { PlannedCall } from '../engine/planned-call.ts';
import type { ExecutionReport } from '../executor/executor.ts';
import { definitionHash, pause, pauseReason, pausedDefinition, type BrakeStore } from './brake.ts';

export interface EchoLimits {
  /** Writes one rule may make to one item after the bot's own changes, within the window. */
  writes: number;
  windowMs: number;
}

/** `scheduler.breaker.echo_writes` and `echo_window` (config/schema.ts). */
export const DEFAULT_ECHO_LIMITS: EchoLimits = { writes: 10, windowMs: 10 * 60_000 };

/** (item, rule, definition) counts kept at most; the least recently written go first. */
const MAX_TRACKED = 10_000;

const PREFIX = 'echo:';

/** The store key of the echo brake of `rule` in `project` (a `namespace/project` path). */
export function echoPauseKey(project: string, rule: string): string {
  return `${PREFIX}${project}:${rule}`;
}

/** The project and rule of an echo brake's pause; undefined for another pause (the breaker's). */
export function echoPauseOf(paused: Pick<PausedRule, 'rule'>): { project: string; rule: string } | undefined {
  if (!paused.rule.startsWith(PREFIX)) return undefined;
  const rest = paused.rule.slice(PREFIX.length);
  // Project paths hold no `:`; rule names may.
  const at = rest.indexOf(':');
  if (at <= 0) return undefined;
  return { project: rest.slice(0, at), rule: rest.slice(at + 1) };
}

/** The echo brakes in force, optionally only those of one rule or one project. */
export function echoPauses(
  store: Pick<BrakeStore, 'pausedRules'>,
  filter: { rule?: string; project?: string } = {},
): (PausedRule & { project: string; ruleName: string })[] {
  const found = [];
  for (const paused of store.pausedRules()) {
    const echo = echoPauseOf(paused);
    if (!echo) continue;
    if (filter.rule !== undefined && echo.rule !== filter.rule) continue;
    if (filter.project !== undefined && echo.project.toLowerCase() !== filter.project.toLowerCase()) continue;
    found.push({ ...paused, project: echo.project, ruleName: echo.rule });
  }
  return found;
}

const approvalKey = (key: string): string => `echo-approved:${key}`;

/**
 * Lifts the echo brakes of `rule` (in `project`, or in every project) and starts its counts afresh
 * from `at`: the writes before the approval no longer count. The projects lifted.
 */
export async function approveEcho(
  store: BrakeStore,
  rule: string,
  project: string | undefined,
  at: number,
): Promise<string[]> {
  const lifted: string[] = [];
  for (const paused of echoPauses(store, { rule, ...(project !== undefined ? { project } : {}) })) {
    await store.setLastSuccess(approvalKey(paused.rule), at);
    await store.approveRule(paused.rule);
    lifted.push(paused.project);
  }
  return lifted;
}

export interface EchoBrakeLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface EchoBrake {
  /**
   * The rules of the project that the brake holds, by name, with the reason explain shows. A pause
   * whose rule is gone or has another definition now is lifted (unless `dryRun`).
   */
  paused(project: string, rules: readonly CompiledRule[], dryRun: boolean): Promise<Map<string, string>>;
  /**
   * For an evaluation caused only by the bot's own events: the rules whose planned writes would take
   * them past the bound on this item, paused now (their names and reasons). Empty for any other.
   */
  trip(
    itemKey: string,
    evaluation: Evaluation,
    rules: readonly CompiledRule[],
    dryRun: boolean,
  ): Promise<Map<string, string>>;
  /** Counts the writes that such an evaluation made (calls done). */
  record(
    itemKey: string,
    evaluation: Evaluation,
    execution: ExecutionReport,
    rules: readonly CompiledRule[],
  ): void;
}

export interface EchoBrakeOptions {
  store: BrakeStore;
  limits?: EchoLimits;
  now?: () => number;
  log?: EchoBrakeLog;
}

const isLabelCall = (planned: PlannedCall): boolean => planned.call.labels !== undefined;

/** The rules behind a planned call: the label writes of several rules are merged into one call. */
function rulesOf(planned: PlannedCall, evaluation: Evaluation): string[] {
  if (!isLabelCall(planned)) return [planned.rule];
  return evaluation.rules.filter((rule) => rule.planned.some(isLabelCall)).map((rule) => rule.rule);
}

/** A call that writes to the server (a merge queue entry is the bot's own state). */
const writes = (planned: PlannedCall): boolean => !planned.call.op.startsWith('mergeQueue.');

const itemRef = (evaluation: Evaluation): string =>
  `${evaluation.item.kind === 'issue' ? '#' : '!'}${evaluation.item.iid}`;

function span(ms: number): string {
  if (ms < 120_000) return `${Math.max(1, Math.round(ms / 1000))} s`;
  return `${Math.round(ms / 60_000)} min`;
}

function windowText(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;
}

export function createEchoBrake(options: EchoBrakeOptions): EchoBrake {
  const { store } = options;
  const limits = options.limits ?? DEFAULT_ECHO_LIMITS;
  const now = options.now ?? (() => Date.now());
  /** `<item>\n<rule>\n<definition>` -> times of its echo writes, oldest first, at most `limits.writes`. */
  const counts = new Map<string, number[]>();

  const countKey = (itemKey: string, rule: CompiledRule): string =>
    `${itemKey}\n${rule.name}\n${definitionHash(rule)}`;

  /** The echo writes of the rule on the item still in the window (and since its last approval). */
  function recent(itemKey: string, rule: CompiledRule, project: string, at: number): number[] {
    const approved = store.lastSuccess(approvalKey(echoPauseKey(project, rule.name))) ?? 0;
    const since = Math.max(at - limits.windowMs, approved);
    return (counts.get(countKey(itemKey, rule)) ?? []).filter((time) => time > since);
  }

  /** Planned writes per rule of the set, in an echo evaluation. */
  function plannedWrites(evaluation: Evaluation): Map<string, number> {
    const planned = new Map<string, number>();
    for (const call of evaluation.plan) {
      if (!writes(call)) continue;
      for (const rule of rulesOf(call, evaluation)) planned.set(rule, (planned.get(rule) ?? 0) + 1);
    }
    return planned;
  }

  return {
    async paused(project, rules, dryRun) {
      const held = new Map<string, string>();
      for (const paused of echoPauses(store, { project })) {
        const rule = rules.find((one) => one.name === paused.ruleName);
        const hash = pausedDefinition(paused);
        if (rule === undefined || (hash !== undefined && definitionHash(rule) !== hash)) {
          // The rule was changed or removed: the definition that looped is gone.
          if (!dryRun) {
            await store.approveRule(paused.rule);
            options.log?.info(
              { project, rule: paused.ruleName },
              'echo brake lifted: the rule changed since it tripped',
            );
          }
          continue;
        }
        held.set(paused.ruleName, pauseReason(paused));
      }
      return held;
    },

    async trip(itemKey, evaluation, rules, dryRun) {
      const tripped = new Map<string, string>();
      if (!evaluation.trigger.byBot) return tripped;
      const at = now();
      const project = evaluation.item.project;
      for (const [name, planned] of plannedWrites(evaluation)) {
        const rule = rules.find((one) => one.name === name);
        if (!rule) continue;
        const before = recent(itemKey, rule, project, at);
        if (before.length + planned <= limits.writes) continue;
        const first = before[0] ?? at;
        const reason =
          `rule "${name}" wrote ${before.length} times to ${itemRef(evaluation)} in ${span(at - first)}, ` +
          `each time after the bot's own change (at most ${limits.writes} in ${windowText(limits.windowMs)}: ` +
          `scheduler.breaker.echo_writes); approve with hookbot sweep --once --approve "${name}" --project ${project}`;
        tripped.set(name, reason);
        if (dryRun) continue;
        await pause(store, echoPauseKey(project, name), definitionHash(rule), reason);
        options.log?.warn(
          { project, rule: name, item: itemKey, writes: before.length },
          `echo brake: ${reason}`,
        );
      }
      return tripped;
    },

    record(itemKey, evaluation, execution, rules) {
      if (!evaluation.trigger.byBot || execution.dryRun) return;
      const at = now();
      // The executor reports the plan's calls in order (withdrawals follow them).
      evaluation.plan.forEach((planned, index) => {
        if (execution.calls[index]?.status !== 'done' || !writes(planned)) return;
        for (const name of rulesOf(planned, evaluation)) {
          const rule = rules.find((one) => one.name === name);
          if (!rule) continue;
          const key = countKey(itemKey, rule);
          const times = [...recent(itemKey, rule, evaluation.item.project, at), at].slice(-limits.writes);
          counts.delete(key);
          counts.set(key, times);
          if (counts.size > MAX_TRACKED) counts.delete(counts.keys().next().value!);
        }
      });
    },
  };
}
