/**
 * The grammar of rule files, built from the condition and action registries: one source of truth
 * for validation (load, check) and for the JSON Schema editors use (`hookbot schema`).
 *
 * A condition or an action is an object with exactly one key, its name (`- title: {...}`);
 * actions without parameters may be written as a bare name (`- close`).
 */
import { z } from 'zod';
import { actionDefinitions } from '../actions/index.ts';
import { conditionDefinitions } from '../conditions/index.ts';
import type { ConditionDefinition, ConditionSpec, RecursiveSchemas } from '../engine/define-condition.ts';
import { LISTENABLE_EVENTS } from '../engine/event-names.ts';
import { scheduleSchema } from './schedule.ts';

const ONE_KEY = { minProperties: 1, maxProperties: 1 };

// An unknown key such as `onn` or `titel` already says what is wrong: no second message about it.
const noUnknownKey = (payload: { issues: readonly z.core.$ZodRawIssue[] }): boolean =>
  !payload.issues.some((issue) => issue.code === 'unrecognized_keys' && (issue.path ?? []).length === 0);

/** A condition or action is an object with exactly one key. */
function exactlyOne(what: string) {
  return [
    (value: Record<string, unknown>) => Object.keys(value).length === 1,
    {
      when: noUnknownKey,
      error: (issue: { input?: unknown }) => {
        const keys = Object.keys(issue.input ?? {});
        return keys.length === 0
          ? `empty ${what}`
          : `one ${what} per list item, found ${keys.length}: ${keys.join(', ')}; write each as its own "- " item`;
      },
    },
  ] as const;
}

export function paramsSchemaOf(definition: ConditionDefinition, recursive: RecursiveSchemas): z.ZodType {
  return typeof definition.params === 'function' ? definition.params(recursive) : definition.params;
}

// Forward references: `all`, `any` and `not` hold conditions (resolved when first used).
const conditions: z.ZodType<ConditionSpec[]> = z
  .lazy(() => z.array(conditionSchema).min(1))
  .meta({ id: 'conditions', description: 'a list of conditions' });
const recursive: RecursiveSchemas = { condition: z.lazy(() => conditionSchema), conditions };

export const conditionSchema: z.ZodType<ConditionSpec> = z
  .strictObject(
    Object.fromEntries(
      conditionDefinitions.map((definition) => [
        definition.name,
        paramsSchemaOf(definition, recursive).optional().meta({ description: definition.summary }),
      ]),
    ),
  )
  .refine(...exactlyOne('condition'))
  .meta({
    id: 'condition',
    description: 'a condition: an object with one key, the name of the condition',
    ...ONE_KEY,
  });

export const conditionListSchema = conditions;

const bareActionNames = actionDefinitions.filter((d) => d.bareParams !== undefined).map((d) => d.name);

export const actionSchema = z
  .union([
    z.enum(bareActionNames as [string, ...string[]]).meta({ description: 'an action without parameters' }),
    z
      .strictObject(
        Object.fromEntries(
          actionDefinitions.map((definition) => [
            definition.name,
            definition.params.optional().meta({ description: definition.summary }),
          ]),
        ),
      )
      .refine(...exactlyOne('action'))
      .meta({ description: 'an action: an object with one key, the name of the action', ...ONE_KEY }),
  ])
  .meta({ id: 'action' });

export const ITEM_SCOPES = ['issues', 'merge_requests'] as const;

export const ruleSchema = z
  .strictObject({
    name: z.string().min(1).meta({ description: 'unique within the rules that apply to a project' }),
    description: z.string().optional(),
    on: z
      .array(z.enum(LISTENABLE_EVENTS).meta({ title: 'event' }))
      .min(1)
      .optional()
      .meta({ description: 'the events that run this rule' }),
    schedule: scheduleSchema.optional(),
    for: z
      .enum(ITEM_SCOPES)
      .optional()
      .meta({ description: 'the kind of item the rule is for (default: both)' }),
    if: conditions.optional().meta({ description: 'conditions that must all hold (default: none)' }),
    do: z.array(actionSchema).min(1).meta({ description: 'actions, in order' }),
    allow_bot: z
      .boolean()
      .optional()
      .meta({ description: "also run on events the bot's own user caused (off: prevents loops)" }),
    summary_status: z
      .union([z.boolean(), z.strictObject({ name: z.string().min(1) })])
      .optional()
      .meta({
        description:
          'post a commit status on the head commit of merge requests saying what blocks this rule (name default: hookbot/rules)',
      }),
  })
  .refine((rule) => rule.on !== undefined || rule.schedule !== undefined, {
    message: 'a rule needs "on" (events) or "schedule"',
    when: noUnknownKey,
  });

export const ruleFileSchema = z
  .strictObject({
    extends: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .optional()
      .meta({ description: 'rule files whose rules come first, relative to this file' }),
    rules: z.array(ruleSchema).default([]),
  })
  .meta({
    title: 'hookbot rules',
    description: 'A hookbot rule file (rules/default.yml or rules/<namespace>/<project>.yml).',
  });

export type RuleFileSpec = z.output<typeof ruleFileSchema>;
export type RuleSpec = z.output<typeof ruleSchema>;
export type ActionSpec = z.output<typeof actionSchema>;

/** The JSON Schema of rule files, for editors (`hookbot schema`). */
export function ruleFileJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ruleFileSchema, { io: 'input' }) as Record<string, unknown>;
}
