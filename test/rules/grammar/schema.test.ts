import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { actionDefinitions } from '../../../src/rules/actions/index.ts';
import { conditionDefinitions } from '../../../src/rules/conditions/index.ts';
import {
  actionSchema,
  conditionSchema,
  ruleFileJsonSchema,
  ruleFileSchema,
} from '../../../src/rules/grammar/schema.ts';
import { keysAt, roleAt } from '../../../src/rules/grammar/validation-messages.ts';

describe('the rule file grammar', () => {
  it.each(conditionDefinitions.map((d) => [d.name, d.example] as const))(
    'the example of condition %s is valid',
    (name, example) => {
      expect(conditionSchema.safeParse({ [name]: example }).success).toBe(true);
    },
  );

  it.each(actionDefinitions.map((d) => [d.name, d] as const))(
    'the example of action %s is valid',
    (name, definition) => {
      const written = definition.example === null ? name : { [name]: definition.example };
      expect(actionSchema.safeParse(written).success).toBe(true);
    },
  );

  it('has a JSON Schema for editors, listing every condition and action', () => {
    const schema = ruleFileJsonSchema();
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(keysAt(schema, [])).toEqual(['extends', 'rules']);
    expect(keysAt(schema, ['rules', 0])).toEqual([
      'name',
      'description',
      'on',
      'schedule',
      'for',
      'if',
      'do',
      'allow_bot',
      'summary_status',
    ]);
    expect(keysAt(schema, ['rules', 0, 'if', 0])).toEqual(conditionDefinitions.map((d) => d.name));
    expect(keysAt(schema, ['rules', 0, 'if', 0, 'not', 'any', 0])).toEqual(
      conditionDefinitions.map((d) => d.name),
    );
    expect(keysAt(schema, ['rules', 0, 'do', 0])).toEqual(actionDefinitions.map((d) => d.name));
    expect(keysAt(schema, ['rules', 0, 'do', 0, 'label'])).toEqual(['add', 'remove', 'toggle']);
    expect(JSON.stringify(schema)).toContain('"maxProperties":1');
  });

  it('is the same schema the validator uses', () => {
    const file = { rules: [{ name: 'r', on: ['push'], if: [{ title: 'x' }], do: ['close'] }] };
    expect(ruleFileSchema.parse(file)).toEqual(file);
    expect(z.toJSONSchema(ruleFileSchema, { io: 'input' })).toEqual(ruleFileJsonSchema());
  });

  it.each([
    { path: [], role: 'file' },
    { path: ['rules', 0], role: 'rule' },
    { path: ['rules', 0, 'if', 1], role: 'condition' },
    { path: ['rules', 0, 'if', 1, 'all', 0], role: 'condition' },
    { path: ['rules', 0, 'if', 1, 'not'], role: 'condition' },
    { path: ['rules', 0, 'if', 1, 'not', 2, 'any', 0], role: 'condition' },
    { path: ['rules', 0, 'if', 1, 'labels'], role: 'other' },
    { path: ['rules', 0, 'do', 2], role: 'action' },
    { path: ['rules', 0, 'do', 2, 'merge'], role: 'other' },
  ])('names the object at $path a $role', ({ path, role }) => {
    expect(roleAt(path)).toBe(role);
  });
});
