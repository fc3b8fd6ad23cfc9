/**
 * What a rule file can get wrong even when every file is valid on its own: rules that can never act
 * (a condition or action about the other kind of item, a merge that could never be planned, a label
 * toggled against the rule's own condition), and what only shows in the set of rules a project gets
 * (duplicate names, label toggles that would fight, rules that feed one queue with different shapes).
 * load.ts runs these on every load, so the bot refuses exactly what `hookbot check` (which reports
 * the loader's problems) refuses.
 */
import { actionsByName } from '../actions/index.ts';
import type { CompiledRule } from '../engine/compile.ts';
import { conditionsByName } from '../conditions/index.ts';
import { BOTH_KINDS } from '../engine/define-condition.ts';
import type { ParsedRuleFile } from './parse-file.ts';
import type { Problem } from './problem.ts';
import type { RuleSpec } from './schema.ts';
import type { ItemKind } from '../engine/snapshot.ts';
import type { ValuePath } from './yaml-positions.ts';
import { trainIgnoredOptions } from './train-options.ts';
import { depthAsked, depthText, type DepthParam } from '../actions/queue.ts';

/** A rule where it was written, with its compiled form (undefined when it did not compile). */
export interface PlacedRule {
  parsed: ParsedRuleFile;
  index: number;
  spec: RuleSpec;
  compiled: CompiledRule | undefined;
}

const problemAt = (placed: PlacedRule, path: ValuePath, message: string, hint?: string): Problem => ({
  file: placed.parsed.file,
  ...placed.parsed.locate(['rules', placed.index, ...path]),
  message,
  ...(hint ? { hint } : {}),
});

const where = (placed: PlacedRule, path: ValuePath = []): string => {
  const { line, column } = placed.parsed.locate(['rules', placed.index, ...path]);
  return `${placed.parsed.file}:${line}:${column}`;
};

function duplicateNames(rules: readonly PlacedRule[]): Problem[] {
  const first = new Map<string, PlacedRule>();
  const problems: Problem[] = [];
  for (const placed of rules) {
    const earlier = first.get(placed.spec.name);
    if (earlier)
      problems.push(
        problemAt(
          placed,
          ['name'],
          `duplicate rule name "${placed.spec.name}" (first defined at ${where(earlier)})`,
          'rule names must be unique in the rules a project gets',
        ),
      );
    else first.set(placed.spec.name, placed);
  }
  return problems;
}

interface LabelUse {
  placed: PlacedRule;
  path: ValuePath;
  how: 'toggle' | 'add' | 'remove';
}

function labelUses(placed: PlacedRule): Map<string, LabelUse[]> {
  const uses = new Map<string, LabelUse[]>();
  placed.spec.do.forEach((action, actionIndex) => {
    if (typeof action === 'string' || !('label' in action)) return;
    const params = action.label as { add?: string[]; remove?: string[]; toggle?: string[] };
    for (const how of ['toggle', 'add', 'remove'] as const)
      (params[how] ?? []).forEach((name, index) => {
        const list = uses.get(name) ?? [];
        list.push({ placed, path: ['do', actionIndex, 'label', how, index], how });
        uses.set(name, list);
      });
  });
  return uses;
}

/**
 * A toggled label fights any other rule that toggles, adds or removes it: whenever one matches and
 * the other does not, each evaluation undoes the other's write.
 */
function toggleFights(rules: readonly PlacedRule[]): Problem[] {
  const all = new Map<string, LabelUse[]>();
  for (const placed of rules)
    for (const [name, uses] of labelUses(placed)) all.set(name, [...(all.get(name) ?? []), ...uses]);
  const problems: Problem[] = [];
  for (const [name, uses] of all) {
    uses.forEach((use, index) => {
      if (use.how !== 'toggle') return;
      for (const [otherIndex, other] of uses.entries()) {
        if (other.placed === use.placed) continue;
        // A pair of toggles is reported once, at the later one.
        if (other.how === 'toggle' && otherIndex > index) continue;
        problems.push(
          problemAt(
            use.placed,
            use.path,
            `label "${name}" is toggled by rule "${use.placed.spec.name}" and ${other.how === 'toggle' ? 'toggled' : other.how === 'add' ? 'added' : 'removed'} by rule "${other.placed.spec.name}" (${where(other.placed, other.path)}): they would flip it back and forth`,
            'toggle a label from one rule only',
          ),
        );
      }
    });
  }
  return problems;
}

/** A rule that toggles a label its own conditions require to be absent adds it, stops matching, removes it... */
function selfFlips(placed: PlacedRule): Problem[] {
  const absent = new Set<string>();
  for (const condition of placed.spec.if ?? []) {
    const labels = condition.labels as { none?: string[] } | undefined;
    for (const name of labels?.none ?? []) absent.add(name);
  }
  const problems: Problem[] = [];
  for (const [name, uses] of labelUses(placed))
    for (const use of uses)
      if (use.how === 'toggle' && absent.has(name))
        problems.push(
          problemAt(
            placed,
            use.path,
            `rule "${placed.spec.name}" toggles label "${name}" but requires it to be absent: it would add it, stop matching and remove it again`,
            'use label: { add: [...] } instead',
          ),
        );
  return problems;
}

const KIND_NAMES: Record<ItemKind, string> = { issue: 'issues', merge_request: 'merge requests' };

/** The kinds of item a rule can run on, from `for` or else from its events. */
function ruleKinds(spec: RuleSpec): readonly ItemKind[] {
  if (spec.for) return [spec.for === 'issues' ? 'issue' : 'merge_request'];
  if (spec.schedule !== undefined) return BOTH_KINDS;
  const kinds = new Set<ItemKind>();
  for (const event of spec.on ?? []) {
    if (event.startsWith('issue.')) kinds.add('issue');
    else if (event === 'note.created') BOTH_KINDS.forEach((kind) => kinds.add(kind));
    else kinds.add('merge_request');
  }
  return [...kinds];
}

function neverApplies(placed: PlacedRule): Problem[] {
  const kinds = ruleKinds(placed.spec);
  const problems: Problem[] = [];
  const fits = (itemKinds: readonly ItemKind[]) => itemKinds.some((kind) => kinds.includes(kind));
  const runsOn = kinds.map((kind) => KIND_NAMES[kind]).join(' and ');
  const visit = (condition: Record<string, unknown>, path: ValuePath): void => {
    const [name, params] = Object.entries(condition)[0] ?? [];
    if (name === undefined) return;
    const itemKinds = conditionsByName.get(name)?.itemKinds ?? BOTH_KINDS;
    if (!fits(itemKinds))
      problems.push(
        problemAt(
          placed,
          path,
          `condition "${name}" is about ${itemKinds.map((k) => KIND_NAMES[k]).join(' and ')}, but rule "${placed.spec.name}" only runs on ${runsOn}: it can never hold`,
        ),
      );
    if (name === 'all' || name === 'any' || name === 'not') {
      const children = Array.isArray(params) ? params : [params];
      children.forEach((child, index) =>
        visit(
          child as Record<string, unknown>,
          Array.isArray(params) ? [...path, name, index] : [...path, name],
        ),
      );
    }
  };
  (placed.spec.if ?? []).forEach((condition, index) => visit(condition, ['if', index]));
  placed.spec.do.forEach((action, index) => {
    const name = typeof action === 'string' ? action : Object.keys(action)[0];
    const itemKinds = (name && actionsByName.get(name)?.itemKinds) || BOTH_KINDS;
    if (name && !fits(itemKinds))
      problems.push(
        problemAt(
          placed,
          ['do', index],
          `action "${name}" acts on ${itemKinds.map((k) => KIND_NAMES[k]).join(' and ')}, but rule "${placed.spec.name}" only runs on ${runsOn}: it would never act`,
        ),
      );
  });
  return problems;
}

/** Merges need the statuses they rely on in the same rule (merge-safety.ts). */
function unsafeMerges(placed: PlacedRule): Problem[] {
  // A rule that did not compile is already reported (compileFolder); its guarantees are unknown.
  if (!placed.compiled) return [];
  const guarantees = placed.compiled.conditions.flatMap((condition) => condition.guarantees);
  const has = (state: string) => guarantees.some((g) => g.kind === 'statuses' && g.state === state);
  const problems: Problem[] = [];
  placed.spec.do.forEach((action, index) => {
    const name = typeof action === 'string' ? action : Object.keys(action)[0];
    if (name === 'merge' && !has('success'))
      problems.push(
        problemAt(
          placed,
          ['do', index],
          `rule "${placed.spec.name}" merges without a statuses condition with state success: the merge would never be planned`,
          'add - statuses: { required: [ci/build], state: success }',
        ),
      );
    if (name === 'merge_when_build_succeeds' && !has('pending'))
      problems.push(
        problemAt(
          placed,
          ['do', index],
          `rule "${placed.spec.name}" arms merge_when_build_succeeds without a statuses condition with state pending: it would never be planned`,
          'add - statuses: { required: [ci/build], state: pending }',
        ),
      );
    if (name === 'queue' && guarantees.some((g) => g.kind === 'statuses'))
      problems.push(
        problemAt(
          placed,
          ['do', index],
          `rule "${placed.spec.name}" queues with a statuses condition: each time the queue pushes an updated head its statuses are pending, the rule stops matching and the merge request leaves the queue`,
          'drop the statuses condition and name the statuses in the action: queue: { statuses: [ci/test] }',
        ),
      );
  });
  return problems;
}

/** A `queue` action as written: the queue it feeds and the shape it asks for (absent = 1). */
interface QueueUse {
  placed: PlacedRule;
  index: number;
  name: string;
  /** Whether `name` is written (else the default queue). */
  explicitName: boolean;
  /** The most cars it asks for (a number, or the upper bound of `depth: auto`'s window). */
  depth: number;
  /** As written, in words: `3`, `auto (2..10)`. */
  depthText: string;
  /** `depth: auto` (a window that follows the CI). */
  auto: boolean;
  batch: number;
}

/** Every `queue` action of a rule (queue.ts: `name` defaults to `default`, depth and batch to 1). */
export function queueUses(placed: PlacedRule): QueueUse[] {
  const uses: QueueUse[] = [];
  placed.spec.do.forEach((action, index) => {
    if (typeof action === 'string' || !('queue' in action)) return;
    const params = (action.queue ?? {}) as { name?: string; depth?: DepthParam; batch?: number };
    uses.push({
      placed,
      index,
      name: params.name ?? 'default',
      explicitName: params.name !== undefined,
      depth: depthAsked(params.depth).max,
      depthText: depthText(params.depth),
      auto: depthAsked(params.depth).auto,
      batch: params.batch ?? 1,
    });
  });
  return uses;
}

/**
 * Rules that feed one queue with a different `depth` or `batch` (docs/merge-queue.md#rules-that-feed-one-queue):
 * depth and batch are the queue's, not each merge request's, and the queue runs with the smallest
 * of its live entries, so the rule that asked for more would not get it. Reported at the later
 * action, naming the first one of that queue. Names only: which target branches each rule's merge
 * requests have is not known here (queues are per target branch too).
 */
function queueShapes(rules: readonly PlacedRule[]): Problem[] {
  const first = new Map<string, QueueUse>();
  const problems: Problem[] = [];
  for (const use of rules.flatMap(queueUses)) {
    const earlier = first.get(use.name);
    if (!earlier) {
      first.set(use.name, use);
      continue;
    }
    if (earlier.depthText === use.depthText && earlier.batch === use.batch) continue;
    const shape = (one: QueueUse) => `depth ${one.depthText}, batch ${one.batch}`;
    problems.push(
      problemAt(
        use.placed,
        ['do', use.index],
        `queue "${use.name}" is fed by rule "${use.placed.spec.name}" with ${shape(use)} and by rule "${earlier.placed.spec.name}" (${where(earlier.placed, ['do', earlier.index])}) with ${shape(earlier)}: the queue would run with the smallest depth and the smallest batch of the merge requests in it${autoWords(use, earlier)}`,
        'give both queue actions the same depth and batch, or name different queues (queue: { name: ... })',
      ),
    );
  }
  return problems;
}

/** How `depth: auto` meets another depth in one queue (state/queue-order.ts `queueShape`). */
function autoWords(one: QueueUse, other: QueueUse): string {
  if (!one.auto && !other.auto) return '';
  if (one.auto && other.auto)
    return ' (with every merge request asking auto, the window runs from the smallest lower bound to the smallest upper bound)';
  return " (a number wins over auto: the queue runs that number of cars, never more than the window's upper bound, and its depth does not follow the CI)";
}

/** What is wrong with one rule wherever it is used. */
export function ruleProblems(placed: PlacedRule): Problem[] {
  return [
    ...selfFlips(placed),
    ...neverApplies(placed),
    ...unsafeMerges(placed),
    ...trainIgnoredOptions(placed),
  ];
}

/** What is wrong with a set of rules (a project's, in order: extended files first). */
export function setProblems(rules: readonly PlacedRule[]): Problem[] {
  return [...duplicateNames(rules), ...toggleFights(rules), ...queueShapes(rules)];
}
