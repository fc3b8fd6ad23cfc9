/**
 * The API docs name every method of the client, and name only methods it has (issue 39: these
 * tables are written by hand, and nothing said when a new call was missing from them). Each failure
 * names the file to change.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { clientOver } from '../../src/api/index.ts';
import { readDoc, ROOT } from '../helpers/docs-tables.ts';

/** Every family of the client with its methods (the client built over no HTTP core: nothing is called). */
const families = Object.entries(clientOver({} as never) as Record<string, unknown>).flatMap(
  ([family, api]) =>
    family !== 'http' && api !== null && typeof api === 'object'
      ? [{ family, methods: Object.keys(api) }]
      : [],
);
const apiV3 = readDoc('docs/api-v3.md');
const apiClient = readDoc('docs/api-client.md');
/** `family.method` in backticks, as both docs write a client method. */
const namedMethods = (doc: string) =>
  new Set([...doc.matchAll(/`([a-z][A-Za-z]*\.[a-z][A-Za-z]*)`/g)].map((match) => match[1]!));

/** The rows of the first table of docs/api-client.md: the families. */
function familyRows(): { family: string; file: string }[] {
  return apiClient
    .split('\n')
    .filter((line) => /^\| `[a-zA-Z]+`\s*\| `[a-z-]+\.ts`/.test(line))
    .map((line) => {
      const [family, file] = line
        .split('|')
        .slice(1, 3)
        .map((cell) => cell.trim().replaceAll('`', ''));
      return { family: family!, file: file! };
    });
}

describe('the API docs and the client', () => {
  it('every client method is named in the Client column of docs/api-v3.md (or, beyond one endpoint, in docs/api-client.md)', () => {
    const named = new Set([...namedMethods(apiV3), ...namedMethods(apiClient)]);
    const missing = families.flatMap(({ family, methods }) =>
      methods
        .filter((method) => !named.has(`${family}.${method}`))
        .map(
          (method) =>
            `client method ${family}.${method} is not in docs/api-v3.md: add its endpoint's row to the table of its family under "## Endpoints", with \`${family}.${method}\` in the Client column (a method beyond one endpoint: a line in docs/api-client.md)`,
        ),
    );
    expect(missing, missing.join('\n')).toEqual([]);
  });

  it('every method the Client column of docs/api-v3.md names is a method of the client', () => {
    const endpoints = apiV3.slice(apiV3.indexOf('## Endpoints'));
    const cells = endpoints
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) => line.split('|').at(-2)!.trim());
    const known = new Set(families.flatMap(({ family, methods }) => methods.map((m) => `${family}.${m}`)));
    const unknown = [...new Set(cells.flatMap((cell) => [...namedMethods(cell)]))]
      .filter((name) => !known.has(name))
      .map((name) => `docs/api-v3.md names ${name} in a Client column, and the client has no such method`);
    expect(unknown, unknown.join('\n')).toEqual([]);
  });

  it('every family of the client is a row of the table of docs/api-client.md, with its file', () => {
    const rows = familyRows();
    const problems: string[] = [];
    for (const { family } of families) {
      const row = rows.find((one) => one.family === family);
      if (!row)
        problems.push(`docs/api-client.md: the family table has no row for ${family} (src/api/client.ts)`);
      else if (!readFileSync(path.join(ROOT, 'src/api', row.file), 'utf8').includes('export function create'))
        problems.push(`docs/api-client.md: ${family}'s file ${row.file} creates no family`);
    }
    for (const { family } of rows)
      if (!families.some((one) => one.family === family))
        problems.push(`docs/api-client.md names a family ${family} that src/api/client.ts does not register`);
    expect(problems, problems.join('\n')).toEqual([]);
  });
});
