/**
 * Writes config.example.yml and docs/configuration.md from the configuration schema
 * (src/config/schema.ts), formatted by Prettier as `npm run lint` expects them.
 *   npx tsx scripts/gen-config-example.ts           write both files
 *   npx tsx scripts/gen-config-example.ts --check   exit 1 if either is not current
 * test/config/generated-files.test.ts runs the same check.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { renderConfigExample } from '../src/config/render-example.ts';
import { renderConfigReference } from '../src/config/render-reference.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

export interface GeneratedFile {
  /** Relative to the repository root. */
  path: string;
  text: string;
}

export async function generateConfigFiles(): Promise<GeneratedFile[]> {
  const files = [
    { path: 'config.example.yml', text: renderConfigExample() },
    { path: 'docs/configuration.md', text: renderConfigReference() },
  ];
  return Promise.all(
    files.map(async ({ path, text }) => {
      const filepath = `${root}${path}`;
      const options = (await resolveConfig(filepath)) ?? {};
      return { path, text: await format(text, { ...options, filepath }) };
    }),
  );
}

/** The files whose content on disk differs from what the schema generates. */
export async function staleConfigFiles(): Promise<string[]> {
  const stale: string[] = [];
  for (const file of await generateConfigFiles()) {
    let current: string | undefined;
    try {
      current = readFileSync(`${root}${file.path}`, 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== file.text) stale.push(file.path);
  }
  return stale;
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--check')) {
    const stale = await staleConfigFiles();
    for (const path of stale)
      process.stderr.write(`${path} is not current: run npx tsx scripts/gen-config-example.ts\n`);
    return stale.length === 0 ? 0 : 1;
  }
  for (const file of await generateConfigFiles()) {
    writeFileSync(`${root}${file.path}`, file.text);
    process.stdout.write(`wrote ${file.path}\n`);
  }
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
