/** `created` and `updated` share their grammar: `{ older_than: 60d }`, `{ newer_than: 2h }`. */
import { z } from 'zod';
import type { Evaluator } from '../engine/define-condition.ts';
import { formatDuration, parseDuration } from '../../time/index.ts';
import type { EvalInput } from '../engine/eval-input.ts';
import { durationSchema } from '../engine/param-schemas.ts';

export const ageSchema = z
  .strictObject({ older_than: durationSchema.optional(), newer_than: durationSchema.optional() })
  .refine((p) => p.older_than !== undefined || p.newer_than !== undefined, {
    message: 'give older_than, newer_than or both',
    when: (payload) => payload.issues.length === 0,
  });

export type Age = z.output<typeof ageSchema>;

export function describeAge(field: string, age: Age): string {
  const parts: string[] = [];
  if (age.older_than) parts.push(`more than ${age.older_than} ago`);
  if (age.newer_than) parts.push(`less than ${age.newer_than} ago`);
  return `${field} ${parts.join(' and ')}`;
}

export function compileAge(
  age: Age,
  read: (input: EvalInput) => number,
  written: (input: EvalInput) => string,
): Evaluator {
  const older = age.older_than === undefined ? undefined : parseDuration(age.older_than);
  const newer = age.newer_than === undefined ? undefined : parseDuration(age.newer_than);
  return (input) => {
    const at = read(input);
    if (Number.isNaN(at)) return { value: null, ok: false, unknown: true, note: 'unreadable timestamp' };
    const elapsed = input.now - at;
    return {
      value: `${written(input)} (${formatDuration(elapsed)} ago)`,
      ok: (older === undefined || elapsed > older) && (newer === undefined || elapsed < newer),
    };
  };
}
