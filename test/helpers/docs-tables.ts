/**
 * The tables of the project's docs, read as the tests that hold the docs to the code need them: the
 * rows of the first table under a heading, each cell trimmed, and the words a cell sets in backticks.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function readDoc(file: string): string {
  return readFileSync(new URL(file, `file://${ROOT}`), 'utf8');
}

/** The rows (header and separator left out) of the first table after the heading `heading` (any level). */
export function tableUnder(doc: string, heading: string): string[][] {
  const lines = doc.split('\n');
  const start = lines.findIndex(
    (line) => /^#{1,6} /.test(line) && line.replace(/^#+ /, '').trim() === heading,
  );
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const rows: string[][] = [];
  let inTable = false;
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,6} /.test(line)) break;
    if (line.startsWith('|')) {
      inTable = true;
      rows.push(
        line
          .slice(1, line.lastIndexOf('|'))
          .split('|')
          .map((cell) => cell.trim()),
      );
    } else if (inTable) break;
  }
  if (rows.length < 2) throw new Error(`no table under "${heading}"`);
  return rows.slice(2);
}

/** The words a cell sets in backticks: `` `a`, `b` `` -> ['a', 'b']. */
export function codeWords(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
}
