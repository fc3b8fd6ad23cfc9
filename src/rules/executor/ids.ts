/**
 * Identity and timing of outbox actions: a deterministic id per planned call (so a retried delivery
 * or a re-run after a crash finds the same outbox entry instead of adding a second one), and the
 * retry backoff.
 */
import { createHash } from 'node:crypto';
import type { ApiCall } from '../engine/planned-call.ts';
import type { ItemKind } from '../engine/snapshot.ts';

/** `issue:<projectId>:<id>` / `merge_request:<projectId>:<id>`, as `itemKey` in events/hints.ts. */
export function itemKeyOf(kind: ItemKind, projectId: number, id: number): string {
  return `${kind}:${projectId}:${id}`;
}

/** JSON with object keys sorted, so that the same call always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The idempotency key of one planned call on one item: item, rule, op and arguments (the label
 * delta and comment marker included). Readable prefix for logs, hash for uniqueness.
 */
export function actionIdOf(itemKey: string, rule: string, call: ApiCall): string {
  const hash = createHash('sha256')
    .update(canonicalJson([itemKey, rule, call.op, call.args, call.labels ?? null, call.marker ?? null]))
    .digest('hex')
    .slice(0, 20);
  return `${itemKey}:${call.op}:${hash}`;
}

export interface BackoffOptions {
  /** Delay after the first failure. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** In [0, 1): tests pass a fixed one. */
  random: () => number;
}

/**
 * Exponential backoff with jitter between half and all of the delay (the same shape as the HTTP
 * core's): retries of many actions after one outage spread out instead of arriving together.
 */
export function backoffMs(failures: number, options: BackoffOptions): number {
  const exp = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.max(0, failures - 1));
  return Math.round(exp / 2 + options.random() * (exp / 2));
}
