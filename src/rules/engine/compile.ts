/**
 * From validated specs to compiled rules: everything that can be done once is done here
 * (regexes, globs, durations, templates, event sets), so that evaluation only reads.
 */
import { actionsByName } from '../actions/index.ts';
import { conditionsByName } from '../conditions/index.ts';
import type { CompiledAction } from './define-action.ts';
import {
  BOTH_KINDS,
  type CompiledCondition,
  type ConditionSpec,
  type ConditionTools,
  type Verdict,
} from './define-condition.ts';
import { skip } from './planned-call.ts';
import type { ActionSpec, RuleSpec } from '../grammar/schema.ts';
import type { ItemKind } from './snapshot.ts';

export interface RuleSource {
  file: string;
  line: number;
  column: number;
  /** A project's own `.hookbot.yml` (docs/repository-rules.md), not the operator's rules folder. */
  repository?: boolean;
}

export interface CompiledRule {
  name: string;
  source?: RuleSource;
  /** `on:` patterns, or null for a rule that only runs on its schedule. */
  events: readonly string[] | null;
  /** Whether the rule listens to an event name (compiled from `events`). */
  listensTo(event: string): boolean;
  /** `events` joined, for explain. */
  eventsText: string;
  schedule: string | null;
  /** `for:`, or null for both kinds. */
  scope: ItemKind | null;
  allowBot: boolean;
  conditions: readonly CompiledCondition[];
  /** Every condition the rule uses, nested ones included. */
  conditionNames: ReadonlySet<string>;
  actions: readonly CompiledAction[];
  /** The name of the summary commit status, or null. */
  summaryStatus: string | null;
}

/**
 * What the rules read beyond the item itself: whoever builds snapshots reads only that (the one
 * definition: read-snapshot.ts takes it, each field optional there, as what to read).
 */
export interface SnapshotNeeds {
  /** The MR's changed paths (one more call: `GET .../changes`). */
  changedFiles: boolean;
  /** The markers of the bot's earlier comments (one more call per page of notes). */
  commentMarkers: boolean;
  /** The author's access level (`author_access`): one or two calls to the members API. */
  authorAccess: boolean;
  /** On note triggers, the comment author's access level (`actor_access`): as above. */
  actorAccess: boolean;
  /**
   * Merge requests only, for the gate of merge-like actions (merge-safety.ts `mergeAuthority`): the
   * author's access, and on note triggers the comment author's and whether a push came after the
   * note (the merge request's notes, in the listing the comment markers use).
   */
  mergeGate: boolean;
  /**
   * Merge requests only, on note triggers: what changed the merge request after the note (a push, a
   * close or reopen, a retarget: `changedSinceNote`), without the rest of the gate. `dequeue` asks
   * it: a member's command takes out only the head it was written on (a replayed delivery of an old
   * command takes out nothing that came back since).
   */
  noteChanges: boolean;
}

export interface CompiledRuleSet {
  rules: readonly CompiledRule[];
  needs: SnapshotNeeds;
}

export const DEFAULT_SUMMARY_STATUS = 'hookbot/rules';

const KIND_NAMES: Record<ItemKind, string> = { issue: 'issues', merge_request: 'merge requests' };

function onlyFor(kinds: readonly ItemKind[]): string {
  return `applies to ${kinds.map((kind) => KIND_NAMES[kind]).join(' and ')} only`;
}

/** The single key of a condition or action object. */
function entryOf(spec: Readonly<Record<string, unknown>>): [string, unknown] {
  const entries = Object.entries(spec);
  const entry = entries[0];
  if (entries.length !== 1 || !entry)
    throw new Error(`expected one key, got ${Object.keys(spec).join(', ')}`);
  return entry;
}

export function createConditionTools(): ConditionTools & { used: Set<string> } {
  const used = new Set<string>();
  const tools: ConditionTools & { used: Set<string> } = {
    used,
    describeCondition(spec: ConditionSpec): string {
      const [name, params] = entryOf(spec);
      const definition = conditionsByName.get(name);
      if (!definition) throw new Error(`unknown condition "${name}"`);
      return definition.describe(params, tools);
    },
    compileCondition(spec: ConditionSpec): CompiledCondition {
      const [name, params] = entryOf(spec);
      const definition = conditionsByName.get(name);
      if (!definition) throw new Error(`unknown condition "${name}"`);
      used.add(name);
      const compiled = definition.compile(params, tools);
      const inner = typeof compiled === 'function' ? compiled : compiled.evaluate;
      const itemKinds = definition.itemKinds ?? BOTH_KINDS;
      // A condition about merge requests is unknown on an issue: it never matches, even under `not`.
      const note = onlyFor(itemKinds);
      const notApplicable = (): Verdict => ({ value: null, ok: false, unknown: true, note });
      const forIssues = itemKinds.includes('issue');
      return {
        name,
        describe: definition.describe(params, tools),
        itemKinds,
        guarantees: typeof compiled === 'function' ? [] : compiled.guarantees,
        evaluate:
          itemKinds.length === BOTH_KINDS.length
            ? inner
            : (input) => ((input.snapshot.kind === 'issue') === forIssues ? inner(input) : notApplicable()),
      };
    },
  };
  return tools;
}

export function compileAction(spec: ActionSpec): CompiledAction {
  const [name, raw] = typeof spec === 'string' ? [spec, undefined] : entryOf(spec);
  const definition = actionsByName.get(name);
  if (!definition) throw new Error(`unknown action "${name}"`);
  const params = typeof spec === 'string' ? definition.bareParams : raw;
  const compiled = definition.compile ? definition.compile(params) : params;
  const itemKinds = definition.itemKinds ?? BOTH_KINDS;
  const fits = (kind: ItemKind): boolean => itemKinds.length === BOTH_KINDS.length || itemKinds[0] === kind;
  const wrongKind = skip(onlyFor(itemKinds));
  const planUnmatched = definition.planUnmatched;
  const authority = definition.authority?.(compiled);
  return {
    name,
    params,
    describe: definition.describe(params),
    itemKinds,
    ...(authority ? { authority } : {}),
    plan: (input, context) =>
      fits(input.snapshot.kind) ? definition.plan(compiled, input, context) : wrongKind,
    ...(planUnmatched
      ? {
          planUnmatched: (input, context) =>
            fits(input.snapshot.kind) ? planUnmatched(compiled, input, context) : null,
        }
      : {}),
  };
}

/** Exact names in a set, `kind.*` as prefixes: a lookup per event instead of a scan of patterns. */
function compileEvents(patterns: readonly string[]): (event: string) => boolean {
  const exact = new Set(patterns.filter((pattern) => !pattern.endsWith('.*')));
  const prefixes = patterns
    .filter((pattern) => pattern.endsWith('.*'))
    .map((pattern) => pattern.slice(0, -1));
  if (prefixes.length === 0) return (event) => exact.has(event);
  return (event) => exact.has(event) || prefixes.some((prefix) => event.startsWith(prefix));
}

export function compileRule(spec: RuleSpec, source?: RuleSource): CompiledRule {
  const tools = createConditionTools();
  const summary = spec.summary_status;
  const conditions = (spec.if ?? []).map((condition) => tools.compileCondition(condition));
  return {
    name: spec.name,
    ...(source ? { source } : {}),
    events: spec.on ?? null,
    listensTo: compileEvents(spec.on ?? []),
    eventsText: (spec.on ?? []).join(', '),
    schedule: spec.schedule ?? null,
    scope: spec.for === 'issues' ? 'issue' : spec.for === 'merge_requests' ? 'merge_request' : null,
    allowBot: spec.allow_bot ?? false,
    conditions,
    conditionNames: tools.used,
    actions: spec.do.map(compileAction),
    summaryStatus:
      summary === undefined || summary === false
        ? null
        : summary === true
          ? DEFAULT_SUMMARY_STATUS
          : summary.name,
  };
}

/** A rule set from compiled rules (load.ts shares compiled rules between the sets of projects). */
export function ruleSet(rules: readonly CompiledRule[]): CompiledRuleSet {
  return {
    rules,
    needs: {
      changedFiles: rules.some((rule) => rule.conditionNames.has('files')),
      commentMarkers: rules.some((rule) => rule.actions.some((action) => action.name === 'comment')),
      authorAccess: rules.some((rule) => rule.conditionNames.has('author_access')),
      // `dequeue` reads a commenter's access itself (only a member takes a merge request out).
      actorAccess: rules.some(
        (rule) =>
          rule.conditionNames.has('actor_access') || rule.actions.some((action) => action.name === 'dequeue'),
      ),
      mergeGate: rules.some((rule) => rule.actions.some((action) => action.authority !== undefined)),
      noteChanges: rules.some((rule) => rule.actions.some((action) => action.name === 'dequeue')),
    },
  };
}

export interface RuleFileInput {
  file?: string;
  rules: readonly RuleSpec[];
  /** Where each rule starts, for explain. */
  sources?: readonly (RuleSource | undefined)[];
}

/** Compiles rule files (validated specs) into the set the engine evaluates. Done once, at load. */
export function compileRules(files: readonly RuleFileInput[]): CompiledRuleSet {
  return ruleSet(
    files.flatMap((file) => file.rules.map((spec, index) => compileRule(spec, file.sources?.[index]))),
  );
}
