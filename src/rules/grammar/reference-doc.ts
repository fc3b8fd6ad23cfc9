/**
 * The rules reference (docs/rules.md), generated from the registries: each condition's and
 * action's summary, parameter shape (from the same schema the validator uses), an example, and
 * how the example reads in explain. `scripts/gen-rules-doc.ts` writes it; a test keeps it current.
 */
import { z } from 'zod';
import { actionDefinitions } from '../actions/index.ts';
import { createConditionTools } from '../engine/compile.ts';
import { conditionDefinitions } from '../conditions/index.ts';
import { BOTH_KINDS, type ConditionDefinition, type ConditionSpec } from '../engine/define-condition.ts';
import type { AnyActionDefinition } from '../engine/define-action.ts';
import { LISTENABLE_EVENTS } from '../engine/event-names.ts';
import { MAX_INPUT_LENGTH, MAX_PATTERN_LENGTH } from '../engine/regex.ts';
import { conditionListSchema, conditionSchema, paramsSchemaOf, ruleSchema } from './schema.ts';
import type { ItemKind } from '../engine/snapshot.ts';
import { PLACEHOLDERS } from '../engine/template.ts';
import { membersCommandsSection } from './reference-members.ts';

type Json = Record<string, unknown>;

const PLAIN = /^\w[\w./*@-]*$/;
const RESERVED = /^(?:null|true|false|~|yes|no|on|off|[\d.]+)$/i;

/** A value in YAML flow style, quoting only what needs it (as people write rule files). */
export function flowYaml(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(flowYaml).join(', ')}]`;
  if (typeof value === 'object')
    return `{ ${Object.entries(value as Json)
      .map(([key, item]) => `${key}: ${flowYaml(item)}`)
      .join(', ')} }`;
  if (typeof value === 'string')
    return PLAIN.test(value) && !RESERVED.test(value) ? value : `'${value.replaceAll("'", "''")}'`;
  return String(value);
}

/** The YAML list item of an example: `- title: { matches: '...' }` or `- close`. */
export function exampleLine(name: string, example: unknown, bare = false): string {
  return bare ? `- ${name}` : `- ${name}: ${flowYaml(example)}`;
}

/** A compact type from a JSON Schema: `text | { equals?: text, in?: [text, …] }`. */
function typeOf(schema: Json): string {
  if (typeof schema.$ref === 'string') return schema.$ref.replace('#/$defs/', '');
  if (typeof schema.title === 'string') return schema.title;
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Json[]).map(typeOf).join(' | ');
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((v) => flowYaml(v)).join(' | ');
  if (schema.const !== undefined) return flowYaml(schema.const);
  switch (schema.type) {
    case 'string':
      return 'text';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'true | false';
    case 'null':
      return 'null';
    case 'array':
      return `[${typeOf((schema.items as Json | undefined) ?? {})}, …]`;
    case 'object': {
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const properties = Object.entries((schema.properties as Record<string, Json> | undefined) ?? {});
      return `{ ${properties.map(([key, value]) => `${key}${required.has(key) ? '' : '?'}: ${typeOf(value)}`).join(', ')} }`;
    }
    default:
      return 'any';
  }
}

function paramsType(schema: z.ZodType): string {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  return typeOf(json);
}

const KINDS: Record<ItemKind, string> = { issue: 'issues', merge_request: 'merge requests' };
const kindsText = (kinds: readonly ItemKind[] = BOTH_KINDS): string =>
  kinds.length === BOTH_KINDS.length
    ? 'issues and merge requests'
    : `${kinds.map((k) => KINDS[k]).join(', ')} only`;

function conditionSection(definition: ConditionDefinition): string[] {
  const recursive = { condition: conditionSchema, conditions: conditionListSchema };
  const spec = { [definition.name]: definition.example } as ConditionSpec;
  const parsed = conditionSchema.parse(spec);
  return [
    `### \`${definition.name}\``,
    '',
    definition.summary,
    '',
    `- Parameters: \`${paramsType(paramsSchemaOf(definition, recursive))}\``,
    `- Reads: ${kindsText(definition.itemKinds)}`,
    `- Reads in explain as: ${createConditionTools().describeCondition(parsed)}`,
    '',
    '```yaml',
    'if:',
    `  ${exampleLine(definition.name, definition.example)}`,
    '```',
    '',
  ];
}

function actionSection(definition: AnyActionDefinition): string[] {
  const bare = definition.example === null;
  const params = bare ? definition.bareParams : definition.params.parse(definition.example);
  return [
    `### \`${definition.name}\``,
    '',
    definition.summary,
    '',
    `- Parameters: ${bare ? 'none (write the bare name)' : `\`${paramsType(definition.params)}\``}${
      !bare && definition.bareParams !== undefined
        ? `; may also be written bare (\`- ${definition.name}\`)`
        : ''
    }`,
    `- Acts on: ${kindsText(definition.itemKinds)}`,
    `- In a repository's \`.hookbot.yml\`: ${definition.inRepositories === 'allowed' ? 'allowed' : "only with the operator's permission (`rules.repository.allow`)"}`,
    definition.explained
      ? `- Reads in explain as: \`→ ${definition.name}: ${definition.explained.planned}\` when it plans its call (${definition.explained.note}); \`${definition.describe(params)}\` when it plans none (held back, or nothing to do)`
      : `- Reads in explain as: ${definition.describe(params)}`,
    '',
    '```yaml',
    'do:',
    `  ${exampleLine(definition.name, definition.example, bare)}`,
    '```',
    '',
  ];
}

/**
 * Which actions a project's own `.hookbot.yml` may use, from each action's `inRepositories`: the one
 * list of them (docs/repository-rules.md and `rules.repository.allow`'s description point here).
 */
function repositoryActionsSection(): string[] {
  const names = (which: AnyActionDefinition['inRepositories']) =>
    actionDefinitions
      .filter((definition) => definition.inRepositories === which)
      .map((definition) => `\`${definition.name}\``)
      .join(', ');
  return [
    '### Actions in repository rules',
    '',
    `A project's own \`.hookbot.yml\` ([repository-rules.md](repository-rules.md)) may use ${names('allowed')} by default; ${names('operator')} only when the operator lists them in \`rules.repository.allow\` (a \`move\` then stays within the project's namespace, a \`queue\` within the operator's limits). Each action below says which it is.`,
    '',
  ];
}

function ruleKeys(): string[] {
  const json = z.toJSONSchema(ruleSchema, { io: 'input', unrepresentable: 'any' }) as Json;
  const required = new Set((json.required as string[] | undefined) ?? []);
  return Object.entries((json.properties as Record<string, Json>) ?? {}).map(
    ([key, value]) =>
      `| \`${key}\` | ${required.has(key) ? 'yes' : 'no'} | \`${typeOf(value).replaceAll('|', '\\|')}\` | ${String(value.description ?? '')} |`,
  );
}

export function renderRulesDoc(): string {
  return [
    '# Rules reference',
    '',
    '<!-- Generated by `npx tsx scripts/gen-rules-doc.ts` from src/rules (the condition and action registries); do not edit by hand. -->',
    '',
    'hookbot decides what to do from YAML rules: on an event (or a schedule) it reads the fresh state of the issue or merge request, evaluates every rule that applies, and plans API calls. Every evaluation records each condition with the value it saw, so `hookbot explain` can always say why.',
    '',
    '## Where rules live',
    '',
    '- `rules/default.yml` applies to every project that has no file of its own.',
    '- `rules/<namespace>/<project>.yml` applies to that project and replaces the default; `extends: [../default.yml]` brings the default rules back (they come first). `extends` takes paths relative to the file, inside the rules folder; cycles are refused.',
    '- Other files (deeper folders, other names at the top) are only read through `extends`, for rules shared by several projects.',
    '- A file defines its rules under `rules:`. A file with neither `rules:` nor `extends:` (empty, only comments) is refused as a mistake rather than read as "no rules"; write `rules: []` to mean none on purpose.',
    '- Rule names must be unique within the rules a project gets. `hookbot check` reports every problem as `file:line:column: message (hint)`; `hookbot schema` prints the JSON Schema for editors.',
    '- The running bot refuses exactly what `hookbot check` reports: a reload with any problem keeps the last good rules in force, and at start (no rules in force yet) `hookbot serve` exits 1 with every problem listed rather than load the valid files alone (a broken guard rule must not leave the rules it holds back acting).',
    "- The running bot reloads the folder by itself (`rules.watch`, on by default) about 0.2 s after a change to any file in it or in a subfolder, however the file was written: in place, or replaced by a rename as `sed -i` and editors' safe writes do (each directory is watched, not each file). `kill -HUP <pid>` reloads it on demand: where change events never arrive (some network or container mounts) or with `rules.watch: false`. The log says `rules loaded`, or `rules refused` with every problem.",
    "- With `rules.repository.enabled` (`HOOKBOT_REPOSITORY_RULES=true`), a project's own `.hookbot.yml` (at the root of its default branch, same grammar, no `extends`) adds its rules after the ones above; the operator decides which actions it may use. See [repository-rules.md](repository-rules.md).",
    '',
    '```yaml',
    'extends: [../default.yml]',
    'rules:',
    '  - name: merge when green',
    '    on: [merge_request.open, merge_request.update, status.changed]',
    '    if:',
    '      - state: opened',
    '      - work_in_progress: false',
    '      - labels: { any: [automerge] }',
    '      - statuses: { required: [ci/build, ci/test], state: success }',
    '    do: [ { merge: { remove_source_branch: true } } ]',
    '```',
    '',
    '## A rule',
    '',
    '| Key | Required | Type | Meaning |',
    '| --- | --- | --- | --- |',
    ...ruleKeys(),
    '',
    'A rule needs `on` or `schedule` (or both). A condition or an action is an object with one key, its name; actions without parameters may be written as a bare name (`- close`).',
    '',
    '## When a rule runs',
    '',
    `- \`on:\` lists events: ${LISTENABLE_EVENTS.map((event) => `\`${event}\``).join(', ')}. \`issue.*\` and \`merge_request.*\` cover every action of the kind; a push to the source branch of a merge request arrives as \`merge_request.update\`.`,
    '- `schedule:` (`hourly`, `daily`, `weekly`, `every 6h`, or a five-field cron line) runs the rule from the scheduler sweeps, over the items of `for:` (default: both kinds).',
    '- A manual run (re-evaluation asked by an operator) evaluates every rule for the item.',
    '- Events the bot\'s own user caused never run a rule, unless the rule sets `allow_bot: true` (the bot\'s comments fire hooks too: this prevents loops). Such a rule is bounded: the writes it makes to one item in evaluations caused only by the bot\'s own events are counted (`scheduler.breaker.echo_writes`, 10 within `echo_window`, 10 minutes); an evaluation that would take it past that pauses the rule in that project, and the status page and explain say so (`paused: rule "swap" wrote 10 times to #4 in 3 s, each time after the bot\'s own change ...; approve with hookbot sweep --once --approve "swap" --project acme/web`). See [scheduler.md](scheduler.md#the-echo-brake-rules-that-answer-the-bots-own-changes).',
    '- All rules read the same fresh state; one rule does not see what another plans. The writes cause new events, and the next evaluation sees their result.',
    '',
    '### Bursts: no event is lost',
    '',
    "A hook is a hint that an item changed, not the truth: the bot waits a short window (`pipeline.debounce_ms`, 250 ms by default) for more events on the same item, reads the item once, and evaluates every rule on that fresh state. The events of the burst are kept as a **set**, not folded into the last one: **a rule runs when any event of the burst is in its `on:`**. A merge request opened and its first `pending` status a few milliseconds later (real CI does this on every push) still run the `merge_request.open` rules. Events caused by the bot count only for rules with `allow_bot: true`; a rule whose only events in the burst are the bot's does not run. The `event` condition holds when any event of the burst matches, and explain lists them all (`event merge_request.open, status.changed`).",
    '',
    '- **One item, one run at a time.** A run is everything done for an item from reading it to recording the decision: a hook burst, or a sweep working on it (reconciliation, the merge watch, a merge queue step, retries, a scheduled rule acting). A run waits for the one in progress on the same item, in the process and, with several replicas, in the whole fleet ([deployment.md](deployment.md#replicas-on-postgresql)): two runs never read and act on one item side by side, so one cannot merge while the other withdraws the same merge as no longer matching.',
    '- Events that arrive while the item is being evaluated start a new burst, evaluated after the running one: they are never folded into a run that already read the item. That later run sees what the earlier one did; when the earlier one merged, closed or moved the item and the later one finds nothing to do, explain keeps showing the decision that merged (closed, moved) it.',
    "- Comments stay apart: each note is its own evaluation, with that note's text, because each may be a command.",
    '- Why a set and not the latest event: rules are written per event (`on: [merge_request.open]`), while the state they read is the same whichever event of a burst is named; evaluating once per burst with every event keeps both the economy of one read and the promise that every event is heard.',
    '',
    '### Facts come from the server',
    '',
    "- A comment event is read back by the note's id through the API: `note` matches the text the server has, `actor` is the note's author as the server says, and a system note is not a command. A delivery for a note the server does not have (forged, or deleted since) causes nothing.",
    "- For every other event the API cannot confirm who caused it, so `actor` is unknown there, and unknown never holds. A payload's `user` is only a hint for loop prevention: a forged claim can only make the bot skip work that the sweeps redo.",
    "- Access levels (`author_access`, `actor_access`, and the gate of `merge`, `merge_when_build_succeeds` and `queue`) are read through the members API with each evaluation that needs them ([Members' commands](#members-commands)).",
    '',
    '### An action is sent only while the latest evaluation plans it',
    '',
    "- After each evaluation, the item's pending actions (waiting for a retry) of the rules that ran on this event and no longer plan them are **withdrawn**, with the reason explain and the status page show: `withdrawn: merge when green no longer matches (labels include any of [automerge] seen [])`.",
    "- A retry re-evaluates first: the item is read afresh and evaluated with the rules in force now, under the event that planned the action; the action is sent again only if that fresh plan still holds it (the same call: same rule, same pinned head, same arguments), otherwise it is withdrawn. What a sweep decided rather than a rule (the merge watch's merge, the merge queue's merges and comments) is no rule's plan: a retry sends it as stored, behind its own gate (the fresh check just before a merge; a queue's removal comment only once the removal took effect).",
    '- `merge`, `move`, `merge_when_build_succeeds` and `cancel_merge_when_build_succeeds` are re-evaluated on a fresh read immediately before the call, besides pinning the head commit. A merge the merge watch makes (the rule armed merge-when-build-succeeds while its statuses were pending) goes ahead only while every condition of the rule but those pending statuses still holds, the head is the pinned one and every required status has passed.',
    '- Rules reloaded without a rule: its pending actions are withdrawn.',
    "- A merge request in a merge queue leaves it at once when its rule applies to an event and no longer plans `queue`; the queue's merge goes ahead only while the rule still holds on a fresh read (its `statuses` conditions aside; under the comment that queued it, read again, when a comment did), the head is the one the queue tested and every required status passed on it. See [merge-queue.md](merge-queue.md).",
    '',
    '## Conditions',
    '',
    'All conditions under `if` must hold. A condition whose fact is not known (changed files not read, no head commit, a merge request condition on an issue) is **unknown**: it never holds, and `not` of an unknown stays unknown, so missing data can never make a rule act.',
    '',
    ...conditionDefinitions.flatMap(conditionSection),
    '## Actions',
    '',
    'Actions plan API calls; the executor makes them (or, in dry-run, describes them). An action whose effect already holds plans nothing and says why: a present label is not added again, a closed issue is not closed again. All label changes to one item become one write of the whole set, computed from the fresh set, because the v3 API replaces it.',
    '',
    ...repositoryActionsSection(),
    ...actionDefinitions.flatMap(actionSection),
    ...membersCommandsSection(),
    '## Summary status',
    '',
    '`summary_status: true` (or `{ name: ... }`, default `hookbot/rules`) posts a commit status on the head commit of an open merge request each time the rule applies: `success` when it matched and nothing held it back, otherwise `pending` with a description (at most 140 characters) of what blocks it, e.g. `blocked: statuses ci/build, ci/test are all success (seen ci/build=success, ci/test=running)`. When the reason changes the description follows: real servers refuse a pending status over a pending one, so the old one is finished as `canceled` (its row keeps the old reason in the history, `all=true`) and the new reason is posted as a new pending status.',
    '',
    '## Placeholders',
    '',
    `Comments, status descriptions and target URLs, and merge messages take \`{{ placeholder }}\`: ${Object.keys(
      PLACEHOLDERS,
    )
      .map((name) => `\`${name}\``)
      .join(', ')}. A field the item does not have is empty.`,
    '',
    '## Regular expressions',
    '',
    `JavaScript syntax. A leading \`(?i)\`, \`(?m)\` or \`(?s)\` (as in Python or RE2) becomes a flag. Patterns run on a linear-time engine (RE2's automaton, in JavaScript): no pattern can make matching slow, whatever the text. What such an engine cannot run is refused when the file loads: backreferences (\`\\1\`, \`\\k<name>\`) and lookaround (\`(?=\`, \`(?!\`, \`(?<=\`, \`(?<!\`); so are patterns longer than ${MAX_PATTERN_LENGTH} characters. \`\\s\`, \`\\w\`, \`\\d\` and \`\\b\` are ASCII classes (\`\\s\` does not match a no-break space). Matching reads at most the first ${MAX_INPUT_LENGTH / 1024} KiB of a text.`,
    '',
  ].join('\n');
}
