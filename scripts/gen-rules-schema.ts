/**
 * Writes docs/rules.schema.json, the JSON Schema of rule files (what `hookbot schema` prints),
 * formatted by Prettier as `npm run lint` expects it.
 *   npx tsx scripts/gen-rules-schema.ts           write it
 *   npx tsx scripts/gen-rules-schema.ts --check   exit 1 if it is not current
 * test/cli/schema.test.ts runs the same check.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { rulesJsonSchema } from '../src/cli/schema.ts';

export const RULES_SCHEMA = fileURLToPath(new URL('../docs/rules.schema.json', import.meta.url));

export async function generateRulesSchema(): Promise<string> {
  const options = (await resolveConfig(RULES_SCHEMA)) ?? {};
  return format(JSON.stringify(await rulesJsonSchema(), null, 2), { ...options, filepath: RULES_SCHEMA });
}

async function main(argv: string[]): Promise<number> {
  const text = await generateRulesSchema();
  if (argv.includes('--check')) {
    let current: string | undefined;
    try {
      current = readFileSync(RULES_SCHEMA, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === text) return 0;
    process.stderr.write(`${RULES_SCHEMA} is not current: run npx tsx scripts/gen-rules-schema.ts\n`);
    return 1;
  }
  writeFileSync(RULES_SCHEMA, text);
  process.stdout.write(`wrote ${RULES_SCHEMA}\n`);
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
