/**
 * `hookbot schema`: the JSON Schema of rule files, from the validator's own zod grammar; the
 * committed docs/rules.schema.json must be what the script generates, and the rules in `rules/`
 * must name it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateRulesSchema, RULES_SCHEMA } from '../../scripts/gen-rules-schema.ts';
import { expectGenerated } from '../helpers/generated.ts';
import { main } from '../../src/cli/main.ts';
import { conditionDefinitions } from '../../src/rules/conditions/index.ts';
import { actionDefinitions } from '../../src/rules/actions/index.ts';

async function schemaOutput(): Promise<{ code: number; out: string; err: string }> {
  const io = { out: '', err: '' };
  const code = await main(['schema'], {
    out: (t) => void (io.out += t),
    err: (t) => void (io.err += t),
  });
  return { code, ...io };
}

interface JsonSchema {
  $schema?: string;
  properties?: Record<string, JsonSchema>;
  definitions?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: string[];
  required?: string[];
  additionalProperties?: boolean;
}

describe('hookbot schema', () => {
  it('prints one JSON document, draft-07 (what editors’ YAML support validates with), and exits 0', async () => {
    const { code, out, err } = await schemaOutput();
    expect(code).toBe(0);
    expect(err).toBe('');
    const schema = JSON.parse(out) as JsonSchema;
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(Object.keys(schema.properties ?? {})).toEqual(['extends', 'rules']);
    expect(schema.additionalProperties).toBe(false);
  });

  it('describes the rule grammar: every rule key, every condition and every action of the registries', async () => {
    const schema = JSON.parse((await schemaOutput()).out) as JsonSchema;
    const rule = schema.properties?.rules?.items;
    expect(rule?.required).toEqual(['name', 'do']);
    expect(Object.keys(rule?.properties ?? {})).toEqual([
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
    const condition = schema.definitions?.condition;
    expect(Object.keys(condition?.properties ?? {}).sort()).toEqual(
      conditionDefinitions.map((definition) => definition.name).sort(),
    );
    const action = schema.definitions?.action?.anyOf ?? [];
    const named = action.flatMap((branch) => Object.keys(branch.properties ?? {}));
    expect(named.sort()).toEqual(actionDefinitions.map((definition) => definition.name).sort());
    const bare = action.flatMap((branch) => branch.enum ?? []);
    expect(bare).toEqual(expect.arrayContaining(['close', 'reopen', 'cancel_merge']));
  });

  it('docs/rules.schema.json is the generated file (run npx tsx scripts/gen-rules-schema.ts)', async () => {
    expectGenerated(RULES_SCHEMA, await generateRulesSchema(), 'npx tsx scripts/gen-rules-schema.ts');
  });

  it('docs/rules.schema.json holds what hookbot schema prints', async () => {
    expect(JSON.parse(readFileSync(RULES_SCHEMA, 'utf8'))).toEqual(JSON.parse((await schemaOutput()).out));
  });

  it('the default rules name the schema for editors', () => {
    expect(readFileSync('rules/default.yml', 'utf8').split('\n')[0]).toBe(
      '# yaml-language-server: $schema=../docs/rules.schema.json',
    );
  });
});
