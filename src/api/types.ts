/**
 * Types shared by the resource families of the v3 API (docs/api-v3.md#resources).
 * Resource-specific types live in their resource file. Schemas exist only for the answers the bot
 * acts on (issues, merge requests, statuses, notes, labels, projects): they check the fields the bot
 * reads and let every other field through.
 */
import { z } from 'zod';
import type { Sudo } from './http.ts';

/** A project: its integer id, or its `namespace/project` path (sent URL-encoded as `namespace%2Fproject`). */
export type ProjectRef = number | string;

/** Options every call accepts. */
export interface CallOptions {
  /** Act as this user for this call (admin tokens only); `null` turns off the client's default sudo. */
  sudo?: Sudo | null;
}

/** A call whose answer may be large: read up to `maxBytes`, or fail `too_large` without holding more (http.ts). */
export interface BoundedCallOptions extends CallOptions {
  maxBytes?: number;
}

/** Options of every list call. */
export interface ListOptions extends CallOptions {
  perPage?: number;
  maxPages?: number;
}

export type OrderSort = 'asc' | 'desc';

/** Timestamps are ISO 8601 strings as the server sends them; the bot parses them where it compares. */
export type Timestamp = string;

export const userSummarySchema = z.looseObject({
  id: z.number(),
  username: z.string(),
  name: z.string(),
  state: z.string(),
  avatar_url: z.string().nullable().optional(),
  web_url: z.string().optional(),
  created_at: z.string().optional(),
  email: z.string().optional(),
});
export type UserSummary = z.infer<typeof userSummarySchema>;

export const milestoneSchema = z.looseObject({
  id: z.number(),
  iid: z.number(),
  project_id: z.number(),
  title: z.string(),
  description: z.string().nullable(),
  state: z.string(),
  due_date: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/**
 * Turns `['a', 'b']` into the comma-separated form the v3 API reads (`labels=a,b`). Any other character
 * may be in a name (`label?`, `a&b`: the HTTP layer encodes them); a comma cannot, since the server would
 * read two names, so an array item with one is refused with a TypeError before any call.
 */
export function commaList(values: readonly string[] | string | undefined): string | undefined {
  if (values === undefined) return undefined;
  if (typeof values === 'string') return values;
  const withComma = values.find((name) => name.includes(','));
  if (withComma !== undefined)
    throw new TypeError(`label "${withComma}": a name in a list cannot contain a comma (the separator)`);
  return values.join(',');
}

/**
 * Whether an issue or merge request state is open: `opened`, and `reopened`, which v3-era servers
 * report for a reopened merge request (docs/server-behaviour.md). The one definition: the rules,
 * the executor and the sweeps all ask it.
 */
export const isOpenState = (state: string): boolean => state === 'opened' || state === 'reopened';
