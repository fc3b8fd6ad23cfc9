import { describe, expect, it } from 'vitest';
import { checkRegex, compileRegex, MAX_INPUT_LENGTH, showRegex, testBounded } from '../../src/rules/regex.ts';

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
    { source: '(a+)+$', message: 'regular expression /(a+)+$/ may backtrack catastrophically' },
    { source: '^(\\w+\\s?)*$', message: 'regular expression /^(\\w+\\s?)*$/ may backtrack catastrophically' },
    { source: '(x+x+)+y', message: 'regular expression /(x+x+)+y/ may backtrack catastrophically' },
    { source: '[a-', message: 'invalid regular expression /[a-/: Unterminated character class' },
    { source: '(?g)x', message: 'unsupported inline flag "g" in /(?g)x/' },
    { source: 'a'.repeat(501), message: 'regular expression is too long (501 characters, at most 500)' },
  ])('refuses $source', ({ source, message }) => {
    const checked = checkRegex(source);
    expect(checked.ok).toBe(false);
    expect(checked.ok ? '' : checked.message).toBe(message);
    expect(() => compileRegex(source)).toThrow(message);
  });

  it('matches only the first 64 KiB of the input', () => {
    const regex = compileRegex('end$');
    expect(testBounded(regex, `${'a'.repeat(MAX_INPUT_LENGTH - 3)}end`)).toBe(true);
    expect(testBounded(regex, `${'a'.repeat(MAX_INPUT_LENGTH)}end`)).toBe(false);
  });
});
