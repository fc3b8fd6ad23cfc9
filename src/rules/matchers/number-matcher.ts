/** Numeric comparisons: `2` (equal), or `{ at_least: 2 }`, `{ more_than: 0, less_than: 5 }`... */
import { z } from 'zod';

const COMPARISONS = {
  at_least: (value: number, bound: number) => value >= bound,
  at_most: (value: number, bound: number) => value <= bound,
  more_than: (value: number, bound: number) => value > bound,
  less_than: (value: number, bound: number) => value < bound,
} as const;
type Comparison = keyof typeof COMPARISONS;
const NAMES = Object.keys(COMPARISONS) as Comparison[];

const count = z.number().int().min(0);

export const numberMatcherSchema = z.union([
  count,
  z
    .strictObject({
      at_least: count.optional(),
      at_most: count.optional(),
      more_than: count.optional(),
      less_than: count.optional(),
    })
    .refine((ops) => NAMES.some((name) => ops[name] !== undefined), {
      message: `give at least one of ${NAMES.join(', ')}`,
      when: (payload) => payload.issues.length === 0,
    }),
]);

export type NumberMatcher = z.output<typeof numberMatcherSchema>;

export function describeNumber(field: string, matcher: NumberMatcher): string {
  if (typeof matcher === 'number') return `${field} is ${matcher}`;
  const parts = NAMES.filter((name) => matcher[name] !== undefined).map(
    (name) => `${name.replace('_', ' ')} ${matcher[name]}`,
  );
  return `${field} ${parts.join(' and ')}`;
}

export function compileNumber(matcher: NumberMatcher): (value: number) => boolean {
  if (typeof matcher === 'number') return (value) => value === matcher;
  const bounds = NAMES.flatMap((name) => {
    const bound = matcher[name];
    return bound === undefined ? [] : [{ test: COMPARISONS[name], bound }];
  });
  return (value) => bounds.every(({ test, bound }) => test(value, bound));
}
