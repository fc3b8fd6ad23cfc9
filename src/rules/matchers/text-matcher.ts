/**
 * Matching a text field (title, branch, milestone, note...): a plain string is equality; the
 * object form combines operators, all of which must hold.
 */
import picomatch from 'picomatch';
import { z } from 'zod';
import { globSchema, regexSchema } from '../engine/param-schemas.ts';
import { compileRegex, showRegex, testBounded } from '../engine/regex.ts';

const OPERATORS = ['equals', 'in', 'matches', 'contains', 'glob'] as const;

const textOperators = z
  .strictObject({
    equals: z.string().optional().meta({ description: 'the whole text equals this' }),
    in: z.array(z.string()).min(1).optional().meta({ description: 'the whole text is one of these' }),
    matches: regexSchema.optional(),
    contains: z.string().min(1).optional().meta({ description: 'the text contains this (case matters)' }),
    glob: globSchema.optional(),
  })
  .refine((ops) => OPERATORS.some((op) => ops[op] !== undefined), {
    message: `give at least one of ${OPERATORS.join(', ')}`,
    when: (payload) => payload.issues.length === 0,
  });

export const textMatcherSchema = z.union([z.string(), textOperators]);
/** For fields that may be empty (milestone): `null` matches "none". */
export const nullableTextMatcherSchema = z.union([z.string(), z.null(), textOperators]);

export type TextMatcher = z.output<typeof nullableTextMatcherSchema>;

const quote = (text: string): string => JSON.stringify(text);

export function describeText(field: string, matcher: TextMatcher): string {
  if (matcher === null) return `${field} is none`;
  if (typeof matcher === 'string') return `${field} is ${quote(matcher)}`;
  const parts: string[] = [];
  if (matcher.equals !== undefined) parts.push(`is ${quote(matcher.equals)}`);
  if (matcher.in) parts.push(`is one of [${matcher.in.map(quote).join(', ')}]`);
  if (matcher.matches !== undefined) parts.push(`matches ${showRegex(compileRegex(matcher.matches))}`);
  if (matcher.contains !== undefined) parts.push(`contains ${quote(matcher.contains)}`);
  if (matcher.glob !== undefined) parts.push(`matches glob ${quote(matcher.glob)}`);
  return `${field} ${parts.join(' and ')}`;
}

export type TextTest = (text: string | null) => boolean;

export function compileText(matcher: TextMatcher): TextTest {
  if (matcher === null) return (text) => text === null;
  if (typeof matcher === 'string') return (text) => text === matcher;
  const tests: TextTest[] = [];
  const { equals, contains } = matcher;
  if (equals !== undefined) tests.push((text) => text === equals);
  if (matcher.in) {
    const allowed = new Set(matcher.in);
    tests.push((text) => text !== null && allowed.has(text));
  }
  if (matcher.matches !== undefined) {
    const regex = compileRegex(matcher.matches);
    tests.push((text) => testBounded(regex, text ?? ''));
  }
  if (contains !== undefined) tests.push((text) => (text ?? '').includes(contains));
  if (matcher.glob !== undefined) {
    const isMatch = picomatch(matcher.glob, { dot: true });
    tests.push((text) => isMatch(text ?? ''));
  }
  return tests.length === 1 ? (tests[0] as TextTest) : (text) => tests.every((test) => test(text));
}

/** Long texts are cut in explain records: the verdict is what matters, not 64 KiB of description. */
export function preview(text: string | null, max = 120): string | null {
  if (text === null || text.length <= max) return text;
  return `${text.slice(0, max)}…`;
}
