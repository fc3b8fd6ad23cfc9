/** Matching a user by username: `alice`, `{ in: [alice, bob] }`, or `null` for nobody. */
import { z } from 'zod';
import { usernameSchema } from '../engine/param-schemas.ts';
import type { UserRef } from '../engine/snapshot.ts';

export const userMatcherSchema = z.union([
  usernameSchema,
  z.strictObject({ in: z.array(usernameSchema).min(1) }),
]);
export const nullableUserMatcherSchema = z.union([
  usernameSchema,
  z.null(),
  z.strictObject({ in: z.array(usernameSchema).min(1) }),
]);

export type UserMatcher = z.output<typeof nullableUserMatcherSchema>;

export function describeUser(field: string, matcher: UserMatcher): string {
  if (matcher === null) return `${field} is nobody`;
  if (typeof matcher === 'string') return `${field} is @${matcher}`;
  return `${field} is one of [${matcher.in.map((u) => `@${u}`).join(', ')}]`;
}

export function compileUser(matcher: UserMatcher): (user: UserRef | null | undefined) => boolean {
  if (matcher === null) return (user) => !user;
  // Usernames are case-insensitive on the server (logins ignore case).
  if (typeof matcher === 'string') {
    const wanted = matcher.toLowerCase();
    return (user) => user?.username.toLowerCase() === wanted;
  }
  const allowed = new Set(matcher.in.map((u) => u.toLowerCase()));
  return (user) => user !== null && user !== undefined && allowed.has(user.username.toLowerCase());
}

export const showUser = (user: UserRef | null | undefined): string | null =>
  user ? `@${user.username}` : null;
