/**
 * `hookbot schema`: the JSON Schema of rule files, generated from the zod grammar the validator
 * itself uses (src/rules/grammar/schema.ts), so that editors complete and check what `hookbot check`
 * accepts. `scripts/gen-rules-schema.ts` writes it to docs/rules.schema.json, which the files in
 * `rules/` name with `# yaml-language-server: $schema=../docs/rules.schema.json`.
 */
import type { CliIo, RegisterCommand } from './command.ts';

/**
 * The schema as JSON Schema draft-07. Why not zod's default (2020-12, what `ruleFileJsonSchema()`
 * emits): the YAML language server behind most editors validates with draft-07 and warns that
 * "Draft 2020-12 schemas are not yet fully supported" (redhat-developer/vscode-yaml#726,
 * yaml-language-server#856). The grammar's refinements (one key per condition, regex safety...)
 * are not expressible in JSON Schema: editors catch the shape, `hookbot check` the rest.
 */
export async function rulesJsonSchema(): Promise<Record<string, unknown>> {
  const { z } = await import('zod');
  const { ruleFileSchema } = await import('../rules/index.ts');
  return z.toJSONSchema(ruleFileSchema, { io: 'input', target: 'draft-7' }) as Record<string, unknown>;
}

export async function runSchemaCommand(io: CliIo): Promise<number> {
  io.out(`${JSON.stringify(await rulesJsonSchema(), null, 2)}\n`);
  return 0;
}

export const registerSchemaCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('schema')
    .description('Print the JSON Schema of rule files (for editors: completion and checks).')
    .action(async () => {
      setExitCode(await runSchemaCommand(io));
    });
};
