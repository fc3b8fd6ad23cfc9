/**
 * The batch of accepts (group commit): the deliveries a replica accepted meanwhile go to the database
 * in one multi-row insert, each de-dup key with its inbox row, and each comes back accepted, a
 * duplicate (with the first copy's id, whichever replica inserted it) or refused (the inbox is full).
 */
import { StateError } from '../errors.ts';
import type { AcceptResult } from '../store.ts';
import type { DedupEstimate, StoreAccess } from './store-access.ts';

export interface PendingAccept {
  key: string;
  id: string;
  json: string;
  bytes: number;
  expiresAt: number;
  now: number;
}

export type AcceptOutcome = AcceptResult | StateError;

/**
 * One batch of accepts: one multi-row insert (each key and its inbox row in one statement, so both
 * or neither). A key already in force, whoever inserted it, is not inserted again and comes back
 * as a duplicate with the first copy's id.
 */
export async function writeAccepts(
  store: StoreAccess,
  dedup: DedupEstimate,
  items: PendingAccept[],
): Promise<AcceptOutcome[]> {
  const now = items.reduce((latest, item) => Math.max(latest, item.now), 0);
  // One round trip per batch: no look-up first. A key already in force is not inserted again by
  // the statement below (its de-dup row is kept, so its inbox row is not written), and comes back
  // as a duplicate with the first copy's id from the look-up that follows, which only runs when
  // some key was in force. Let the event loop apply the previous batch to the view first.
  await Promise.resolve();
  // The bounds are this replica's: what it holds in memory (its view of the inbox). Every accepted
  // row is held by the replica that accepted it, and a replica takes over orphaned rows only while
  // it has room, so the database holds at most the replicas' bounds together. Counting the whole
  // table instead cost a scan per batch, over every row deleted since the last vacuum: half the
  // throughput, measured (docs/state.md).
  let pending = store.model.inbox.size;
  let pendingBytes = store.model.inboxBytes;
  const outcomes: (AcceptOutcome | undefined)[] = [];
  /** Key -> the item of this batch that inserts it. */
  const inserting = new Map<string, PendingAccept>();
  for (const item of items) {
    const first = inserting.get(item.key)?.id;
    if (first !== undefined) {
      outcomes.push({ id: first, duplicate: true });
      continue;
    }
    if (pending >= store.options.maxPending) {
      outcomes.push(
        new StateError(
          'inbox_full',
          `the inbox holds ${pending} unprocessed deliveries (the limit, maxPending); refusing more until some are processed`,
        ),
      );
      continue;
    }
    if (pendingBytes + item.bytes > store.options.maxPendingBytes) {
      outcomes.push(
        new StateError(
          'inbox_full',
          `the inbox holds ${pendingBytes} bytes of unprocessed deliveries and this one (${item.bytes} bytes) would pass the limit of ${store.options.maxPendingBytes} (maxPendingBytes); refusing more until some are processed`,
        ),
      );
      continue;
    }
    pending++;
    pendingBytes += item.bytes;
    inserting.set(item.key, item);
    outcomes.push(undefined);
  }
  const fresh = [...inserting.values()];
  if (fresh.length > 0) {
    const inserted = await store.query<{ id: string }>(
      `WITH input AS (
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::int[])
           WITH ORDINALITY AS t(key, id, expires_at, entry, bytes, ord)
       ), keyed AS (
         INSERT INTO hookbot_dedup (key, delivery_id, expires_at)
         SELECT key, id, expires_at FROM input ORDER BY ord
         ON CONFLICT (key) DO UPDATE
           SET delivery_id = excluded.delivery_id, expires_at = excluded.expires_at, n = excluded.n
           WHERE hookbot_dedup.expires_at <= $6
         RETURNING delivery_id
       )
       INSERT INTO hookbot_inbox (id, entry, bytes, holder, lease_until)
       SELECT input.id, input.entry, input.bytes, $7, clock_timestamp() + $8 * interval '1 millisecond'
       FROM input JOIN keyed ON keyed.delivery_id = input.id ORDER BY input.ord
       RETURNING id`,
      [
        fresh.map((item) => item.key),
        fresh.map((item) => item.id),
        fresh.map((item) => item.expiresAt),
        fresh.map((item) => item.json),
        fresh.map((item) => item.bytes),
        now,
        store.replicaId,
        store.options.leaseMs,
      ],
    );
    const stored = new Set(inserted.rows.map((r) => r.id));
    const lost = fresh.filter((item) => !stored.has(item.id));
    // Keys another replica inserted after the first look: theirs is the first copy.
    const winners = new Map<string, string>();
    if (lost.length > 0) {
      const found = await store.query<{ key: string; delivery_id: string }>(
        'SELECT key, delivery_id FROM hookbot_dedup WHERE key = ANY($1::text[])',
        [lost.map((item) => item.key)],
      );
      for (const r of found.rows) winners.set(r.key, r.delivery_id);
    }
    dedup.keys += stored.size;
    if (dedup.keys > store.options.maxDedupKeys) await pruneDedup(store, dedup);
    items.forEach((item, i) => {
      if (outcomes[i] !== undefined) return;
      if (stored.has(item.id)) outcomes[i] = { id: item.id, duplicate: false };
      else outcomes[i] = { id: winners.get(item.key) ?? item.id, duplicate: true };
    });
    // Duplicates of a key this batch inserted but lost: point them at the winner too.
    items.forEach((item, i) => {
      const outcome = outcomes[i];
      if (outcome instanceof StateError || outcome === undefined || !outcome.duplicate) return;
      const winner = winners.get(item.key);
      if (winner !== undefined) outcomes[i] = { id: winner, duplicate: true };
    });
  }
  return outcomes as AcceptOutcome[];
}

/** Deletes the oldest de-dup keys past maxDedupKeys. */
export async function pruneDedup(store: StoreAccess, dedup: DedupEstimate): Promise<void> {
  const removed = await store.query(
    'DELETE FROM hookbot_dedup WHERE key IN (SELECT key FROM hookbot_dedup ORDER BY n DESC OFFSET $1)',
    [store.options.maxDedupKeys],
  );
  dedup.keys = Math.max(0, dedup.keys - (removed.rowCount ?? 0));
  if (dedup.keys > store.options.maxDedupKeys) dedup.keys = store.options.maxDedupKeys;
}
