/**
 * Access levels of the v3 era by name (8.x: guest 10, reporter 20, developer 30, master 40, owner
 * 50), for `author_access`, `actor_access` and the gate of merge-like actions
 * (docs/rules.md#members-commands).
 */
import { z } from 'zod';

export const ACCESS_LEVELS = { guest: 10, reporter: 20, developer: 30, master: 40, owner: 50 } as const;
export type AccessLevelName = keyof typeof ACCESS_LEVELS;

/** What 8.x asks to push to an unprotected branch, and what the gate asks of whoever decides a merge. */
export const DEVELOPER_ACCESS = ACCESS_LEVELS.developer;

const NAMES = Object.keys(ACCESS_LEVELS) as AccessLevelName[];

/** `developer (30)`, `none` for no access; a level without a name as its number. */
export function showAccess(level: number): string {
  if (level <= 0) return 'none';
  const name = NAMES.find((one) => ACCESS_LEVELS[one] === level);
  return name ? `${name} (${level})` : String(level);
}

const levelSchema = z.enum(NAMES as [AccessLevelName, ...AccessLevelName[]]);

/** A bare level means "at least"; `{ at_least }`, `{ below }`, or both for a range. */
export const accessParamsSchema = z.union([
  levelSchema,
  z
    .strictObject({
      at_least: levelSchema.optional(),
      below: levelSchema.optional(),
    })
    .refine((p) => p.at_least !== undefined || p.below !== undefined, {
      message: 'give at_least, below or both',
      when: (payload) => payload.issues.length === 0,
    }),
]);
export type AccessParams = z.output<typeof accessParamsSchema>;

export function describeAccess(subject: string, params: AccessParams): string {
  if (typeof params === 'string') return `${subject} at least ${params}`;
  const parts: string[] = [];
  if (params.at_least !== undefined) parts.push(`at least ${params.at_least}`);
  if (params.below !== undefined) parts.push(`below ${params.below}`);
  return `${subject} ${parts.join(' and ')}`;
}

export function compileAccess(params: AccessParams): (level: number) => boolean {
  const atLeast = typeof params === 'string' ? params : params.at_least;
  const below = typeof params === 'string' ? undefined : params.below;
  const low = atLeast === undefined ? -Infinity : ACCESS_LEVELS[atLeast];
  const high = below === undefined ? Infinity : ACCESS_LEVELS[below];
  return (level) => level >= low && level < high;
}
