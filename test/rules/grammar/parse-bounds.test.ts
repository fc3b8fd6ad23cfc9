/**
 * The parse work a rule file may ask for is bounded before it is done (issue 28, item 4): a file
 * past a bound is refused with one problem at its place, naming the bound, and the document (whose
 * duplicate-key check is quadratic in the keys of a mapping) is never built from it. Asserted on the
 * work done (the composer is never called) and the outcome, never on wall time.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Composer } from 'yaml';
import {
  MAX_MAPPING_KEYS,
  MAX_YAML_DEPTH,
  MAX_YAML_TOKENS,
} from '../../../src/rules/grammar/parse-bounds.ts';
import { MAX_RULE_FILE_BYTES, parseRuleFile } from '../../../src/rules/grammar/parse-file.ts';
import { formatProblem } from '../../../src/rules/grammar/problem.ts';

const problems = (text: string): string[] => parseRuleFile(text, 'r.yml').problems.map(formatProblem);

/** The file of the report: ~32,800 keys in one mapping, under the size limit. */
export function keyBomb(keys = 32_800): string {
  return `${Array.from({ length: keys }, (_, i) => `${i.toString(36)}: 1`).join('\n')}\n`;
}

const RULE = `  - name: r
    on: [issue.open]
    do: [close]
`;

describe('parse bounds', () => {
  afterEach(() => vi.restoreAllMocks());

  it('the key bomb of the report (32,800 keys, within 256 KB) is refused by the lexer pass; no document is built', () => {
    const text = keyBomb();
    expect(Buffer.byteLength(text)).toBeLessThan(MAX_RULE_FILE_BYTES);
    const compose = vi.spyOn(Composer.prototype, 'compose');
    const parsed = parseRuleFile(text, 'r.yml');
    expect(compose).not.toHaveBeenCalled();
    expect(parsed.spec).toBeNull();
    // 3 tokens a line (the key, its `:`, the value): token 20,001 is the value of line 6,667 (`556: 1`).
    expect(parsed.problems.map(formatProblem)).toEqual([
      `r.yml:6667:6: more than ${MAX_YAML_TOKENS.toLocaleString('en-US')} YAML tokens (keys, values, items), the limit of a rule file (a rule file holds rules, not data: split it, or move the data elsewhere)`,
    ]);
  });

  it('a mapping with more keys than the bound, within the token bound, is refused at the first key past it; no document is built', () => {
    const text = `rules: []\n${Array.from({ length: MAX_MAPPING_KEYS + 50 }, (_, i) => `k${i}: 1`).join('\n')}\n`;
    const compose = vi.spyOn(Composer.prototype, 'compose');
    expect(problems(text)).toEqual([
      `r.yml:${MAX_MAPPING_KEYS + 1}:1: more than ${MAX_MAPPING_KEYS} keys in one mapping, the limit of a rule file (no mapping of the rules grammar has more than a few dozen keys: look for a misplaced indentation, or split the data)`,
    ]);
    expect(compose).not.toHaveBeenCalled();
  });

  it('a flow mapping is bounded the same way', () => {
    const text = `x: {${Array.from({ length: MAX_MAPPING_KEYS + 1 }, (_, i) => `k${i}: 1`).join(', ')}}\n`;
    const [problem] = problems(text);
    expect(problem).toContain(`more than ${MAX_MAPPING_KEYS} keys in one mapping`);
    // The 201st key: `x: {` then 200 keys of `kN: 1, `.
    expect(problem).toMatch(/^r\.yml:1:\d+: /);
    const column = Number(/^r\.yml:1:(\d+):/.exec(problem!)![1]);
    expect(text.slice(column - 1)).toMatch(new RegExp(`^k${MAX_MAPPING_KEYS}: 1`));
  });

  it('brackets nested past the bound are refused by the lexer pass, at the first one too deep', () => {
    const depth = 100_000; // 200 KB: within the size limit
    const text = `${'['.repeat(depth)}${']'.repeat(depth)}\n`;
    const compose = vi.spyOn(Composer.prototype, 'compose');
    expect(problems(text)).toEqual([
      `r.yml:1:${MAX_YAML_DEPTH + 1}: nested more than ${MAX_YAML_DEPTH} levels deep, the limit of a rule file (a rule nests a few levels: flatten the structure)`,
    ]);
    expect(compose).not.toHaveBeenCalled();
  });

  it('block collections nested past the bound are refused on the syntax tree', () => {
    const lines = Array.from({ length: MAX_YAML_DEPTH + 5 }, (_, i) => `${' '.repeat(i)}k${i}:`);
    const [problem] = problems(`${lines.join('\n')} end\n`);
    expect(problem).toContain(`nested more than ${MAX_YAML_DEPTH} levels deep`);
  });

  it('a file within every bound is parsed as before', () => {
    const text = `rules:\n${RULE.replace('name: r', 'name: a')}${RULE.replace('name: r', 'name: b')}`;
    const parsed = parseRuleFile(text, 'r.yml');
    expect(parsed.problems).toEqual([]);
    expect(parsed.spec?.rules.map((rule) => rule.name)).toEqual(['a', 'b']);
  });

  it('grammar problems past 200 are counted, not each explained and placed', () => {
    // 1,000 rules without an action: within the token bound, one problem each.
    const text = `rules:\n${Array.from({ length: 1_000 }, (_, i) => `  - { name: r${i}, on: [issue.open] }`).join('\n')}\n`;
    const found = problems(text);
    expect(found).toHaveLength(201);
    expect(found[0]).toMatch(/^r\.yml:2:5: /);
    expect(found[200]).toBe(
      'r.yml:202:5: and 800 more problems of the same kinds from here on (the first 200 are listed)',
    );
  });
});
