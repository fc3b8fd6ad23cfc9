import { describe, expect, it } from 'vitest';
import {
  checkRegex,
  compileRegex,
  MAX_INPUT_LENGTH,
  REGEX_ENGINE,
  showRegex,
  testBounded,
} from '../../../src/rules/engine/regex.ts';
import { PATHOLOGICAL_PATTERNS } from '../../fixtures/pathological-patterns.ts';

describe('regular expressions of rule files', () => {
  it.each([
    { source: '(?i)\\b(bug|crash)\\b', shown: '/\\b(bug|crash)\\b/i' },
    { source: '(?im)^severity: high$', shown: '/^severity: high$/im' },
    { source: '(?ii)x', shown: '/x/i' },
    { source: '^/hookbot merge\\b', shown: '/^\\/hookbot merge\\b/' },
  ])('compiles $source as $shown', ({ source, shown }) => {
    expect(showRegex(compileRegex(source))).toBe(shown);
  });

  it.each([
    { source: '(?i)\\b(bug|crash)\\b', yes: 'A Crash on start', no: 'crashes' },
    { source: '(?im)^severity: high$', yes: 'x\nSeverity: HIGH\ny', no: 'severity: high!' },
    { source: '(?s)a.b', yes: 'a\nb', no: 'ab' },
    { source: 'a.b', yes: 'axb', no: 'a\nb' },
    { source: '^\\[WIP\\]', yes: '[WIP] login', no: 'WIP login' },
    { source: '(?<major>\\d+)\\.x', yes: 'v12.x', no: 'v12.y' },
    { source: 'caf\\u00e9', yes: 'café', no: 'cafe' },
    { source: 'end$', yes: 'the end', no: 'the end\n' },
  ])('matches as JavaScript does: $source', ({ source, yes, no }) => {
    const regex = compileRegex(source);
    expect(regex.test(yes)).toBe(true);
    expect(regex.test(no)).toBe(false);
  });

  it.each([
    {
      source: '(a)\\1',
      message:
        'regular expression /(a)\\1/ uses a backreference (\\1), which the linear-time engine cannot run',
    },
    {
      source: '(?<q>["\'])x\\k<q>',
      message:
        'regular expression /(?<q>["\'])x\\k<q>/ uses a backreference (\\k<…>), which the linear-time engine cannot run',
    },
    {
      source: 'fix(?!ed)',
      message:
        'regular expression /fix(?!ed)/ uses a lookahead (?!…), which the linear-time engine cannot run',
    },
    {
      source: '(?<=v)\\d+',
      message:
        'regular expression /(?<=v)\\d+/ uses a lookbehind (?<=…), which the linear-time engine cannot run',
    },
    { source: '[a-', message: 'invalid regular expression /[a-/: Unterminated character class' },
    { source: '(?g)x', message: 'unsupported inline flag "g" in /(?g)x/' },
    { source: 'a'.repeat(501), message: 'regular expression is too long (501 characters, at most 500)' },
  ])('refuses $source', ({ source, message }) => {
    const checked = checkRegex(source);
    expect(checked.ok).toBe(false);
    expect(checked.ok ? '' : checked.message).toBe(message);
    expect(() => compileRegex(source)).toThrow(message);
  });

  it('reads escapes and character classes as such, not as backreferences or lookaround', () => {
    expect(checkRegex('\\\\1 [(?=] \\(?!x').ok).toBe(true);
    expect(compileRegex('[(?=]x').test('=x')).toBe(true);
  });

  it('matches only the first 64 KiB of the input', () => {
    const regex = compileRegex('end$');
    expect(testBounded(regex, `${'a'.repeat(MAX_INPUT_LENGTH - 3)}end`)).toBe(true);
    expect(testBounded(regex, `${'a'.repeat(MAX_INPUT_LENGTH)}end`)).toBe(false);
  });

  // Each of these freezes a backtracking engine for seconds to years on these inputs. Here they are
  // accepted, run on the linear-time engine, and every evaluation comes back with an answer (how
  // long the worst one takes is the rules benchmark's figure, not a timed assertion here).
  it.each(PATHOLOGICAL_PATTERNS)(
    'runs $source in linear time on a hostile 64 KiB input',
    ({ source, input }) => {
      expect(input().length).toBeGreaterThanOrEqual(MAX_INPUT_LENGTH);
      const regex = compileRegex(source);
      expect(regex.engine).toBe(REGEX_ENGINE);
      expect(typeof testBounded(regex, input())).toBe('boolean');
    },
  );

  it('answers the freezing title of the review with the expected verdicts', () => {
    const regex = compileRegex('^(\\w|\\d)+$');
    expect(testBounded(regex, '11111111111111111111111111111!')).toBe(false);
    expect(testBounded(regex, '11111111111111111111111111111')).toBe(true);
  });
});
