/**
 * docs/security.md's authority table and the suite's (table.ts) are one table: the same rows in the
 * same order, each named by the same text (the doc's first column), and for each role the same
 * outcome, read from the doc cell's leading keyword (`yes`, `no`, `cannot`, `only`, `n/a`; `as
 * <row>` takes that row's keyword for the same role). What follows the keyword (the reason) is the
 * doc's prose. The family files drive each row as each role against the sandbox and compare what
 * landed with table.ts, so neither the doc nor the suite can change a cell alone.
 */
import { describe, expect, it } from 'vitest';
import { ROLES } from '../helpers/authority-world.ts';
import { readDoc, tableUnder } from '../helpers/docs-tables.ts';
import { TABLE } from './table.ts';

const KEYWORD = /^(yes|no|cannot|only|n\/a|as)\b/;

describe('docs/security.md "The table" is the suite\'s table', () => {
  const rows = tableUnder(readDoc('docs/security.md'), 'The table');
  const FIRST_ROLE = 4; // write, rules, whose act, what stands between, then the roles

  it("has the columns of the roles in the suite's order", () => {
    const doc = readDoc('docs/security.md').split('\n');
    const header = doc.find((line) => line.startsWith('| write'))!;
    const columns = header
      .slice(1, header.lastIndexOf('|'))
      .split('|')
      .map((cell) => cell.trim());
    expect(columns.slice(FIRST_ROLE)).toEqual([...ROLES]);
  });

  it('has the same rows, named alike, in the same order', () => {
    expect(rows.map((row) => row[0])).toEqual(TABLE.map((row) => row.write));
  });

  /** A doc cell's outcome: its leading keyword, `as <row>` resolved through that row. */
  function outcomeOf(rowIndex: number, roleIndex: number, seen: number[] = []): string {
    const cell = rows[rowIndex]![FIRST_ROLE + roleIndex]!;
    const keyword = KEYWORD.exec(cell)?.[1];
    if (keyword === undefined) return `no keyword: "${cell}"`;
    if (keyword !== 'as') return keyword;
    const name = cell.slice(3).trim();
    const target = rows.findIndex((row) => row[0] === name || row[0]!.startsWith(`${name} (`));
    if (target < 0 || seen.includes(target)) return `"${cell}" names no row`;
    return outcomeOf(target, roleIndex, [...seen, rowIndex]);
  }

  it.each(TABLE.map((row, i) => [row.write, i] as const))('%s: every role', (_write, i) => {
    const doc = Object.fromEntries(ROLES.map((role, r) => [role, outcomeOf(i, r)]));
    expect(doc).toEqual(TABLE[i]!.cells);
  });
});
