/**
 * Writes docs/rules.md from the rule engine's registries: `npx tsx scripts/gen-rules-doc.ts`.
 * The text is formatted with the project's Prettier settings, so `prettier --check` agrees with it.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { renderRulesDoc } from '../src/rules/grammar/reference-doc.ts';

export const RULES_DOC = fileURLToPath(new URL('../docs/rules.md', import.meta.url));

export async function generateRulesDoc(): Promise<string> {
  const options = (await prettier.resolveConfig(RULES_DOC)) ?? {};
  return prettier.format(renderRulesDoc(), { ...options, parser: 'markdown' });
}

// Writes only when run as a script: the test imports generateRulesDoc.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(RULES_DOC, await generateRulesDoc());
  console.log(`wrote ${RULES_DOC}`);
}
