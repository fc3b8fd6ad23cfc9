import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { generateRulesDoc, RULES_DOC } from '../../../scripts/gen-rules-doc.ts';
import { actionDefinitions } from '../../../src/rules/actions/index.ts';
import { conditionDefinitions } from '../../../src/rules/conditions/index.ts';
import { exampleLine, flowYaml } from '../../../src/rules/grammar/reference-doc.ts';
import { expectGenerated } from '../../helpers/generated.ts';

describe('the rules reference', () => {
  it('docs/rules.md is the generated text (run npx tsx scripts/gen-rules-doc.ts)', async () => {
    expectGenerated(RULES_DOC, await generateRulesDoc(), 'npx tsx scripts/gen-rules-doc.ts');
  });

  it('lists every condition and action', async () => {
    const text = await readFile(RULES_DOC, 'utf8');
    for (const definition of [...conditionDefinitions, ...actionDefinitions])
      expect(text).toContain(`### \`${definition.name}\``);
  });

  it.each(conditionDefinitions.map((d) => [d.name, d.example] as const))(
    'the YAML example of condition %s reads back as its example',
    (name, example) => {
      expect(YAML.parse(exampleLine(name, example))).toEqual([{ [name]: example }]);
    },
  );

  it.each(actionDefinitions.map((d) => [d.name, d.example] as const))(
    'the YAML example of action %s reads back as its example',
    (name, example) => {
      expect(YAML.parse(exampleLine(name, example, example === null))).toEqual([
        example === null ? name : { [name]: example },
      ]);
    },
  );

  it.each([
    { value: 'plain', yaml: 'plain' },
    { value: '60d', yaml: '60d' },
    { value: '**/*.lock', yaml: "'**/*.lock'" },
    { value: 'null', yaml: "'null'" },
    { value: '2', yaml: "'2'" },
    { value: "it's", yaml: "'it''s'" },
    { value: { a: [1, true, null] }, yaml: '{ a: [1, true, null] }' },
  ])('writes $value in flow style as $yaml', ({ value, yaml }) => {
    expect(flowYaml(value)).toBe(yaml);
    expect(YAML.parse(yaml)).toEqual(value);
  });
});
