/**
 * The fleet's upkeep, at open and at each refresh of a replica: its heartbeat (its row in
 * `hookbot_replicas`, the leases of the deliveries and names it holds), the bounds enforced in the
 * database, the deliveries the fleet parked, and the deliveries of replicas gone that it takes over.
 */
import { HeldEntry } from '../held-entry.ts';
import { inboxEntrySchema } from '../mutations.ts';
import type { ParkedDelivery, ReplicaView } from '../store.ts';
import { pruneDedup } from './accept-batch.ts';
import { pruneDecisionHistory } from './decision-history.ts';
import type { DedupEstimate, StoreAccess } from './store-access.ts';

/** The bounds, enforced in the database (each replica's view enforces them too). */
export async function prune(store: StoreAccess, dedup: DedupEstimate): Promise<void> {
  const o = store.options;
  await store.query('DELETE FROM hookbot_dedup WHERE expires_at <= $1', [o.now()]);
  const counted = await store.query<{ n: string }>('SELECT count(*) AS n FROM hookbot_dedup');
  dedup.keys = Number(counted.rows[0]?.n ?? 0);
  if (dedup.keys > o.maxDedupKeys) await pruneDedup(store, dedup);
  await store.query(
    `DELETE FROM hookbot_outbox WHERE id IN (SELECT id FROM hookbot_outbox WHERE parked_seq IS NOT NULL ORDER BY parked_seq DESC OFFSET $1)`,
    [o.maxParked],
  );
  await store.query(
    `DELETE FROM hookbot_latest_decisions WHERE item_key IN (SELECT item_key FROM hookbot_latest_decisions ORDER BY n DESC OFFSET $1)`,
    [o.decisionItems],
  );
  await store.query(
    `DELETE FROM hookbot_recent_decisions WHERE n IN (SELECT n FROM hookbot_recent_decisions ORDER BY n DESC OFFSET $1)`,
    [o.recentDecisions],
  );
  await pruneDecisionHistory((text, values) => store.query(text, values), o);
}

export async function heartbeat(
  store: StoreAccess,
  leases: ReadonlySet<string>,
  unfinishedDeletes: ReadonlySet<string>,
): Promise<void> {
  await store.query(
    `INSERT INTO hookbot_replicas (id, started_at, seen_at) VALUES ($1, clock_timestamp(), clock_timestamp())
     ON CONFLICT (id) DO UPDATE SET seen_at = clock_timestamp(), stopped_at = NULL`,
    [store.replicaId],
  );
  const extend = [store.replicaId, store.options.leaseMs];
  // Only the deliveries this replica knows it holds (its view, and those whose delete is pending).
  // A row inserted by an accept whose answer was lost (the connection dropped after the commit)
  // names this replica as its holder too, but nothing here will ever process it: it must run out
  // and be taken over, or it would be renewed, unprocessed, for as long as this replica lives
  // (found by the replicas scenario: two deliveries answered 202 as duplicates on another
  // replica were never processed).
  const viewed = [...store.model.inbox.keys()];
  const held = [...viewed, ...unfinishedDeletes];
  if (held.length > 0) {
    const renewed = await store.query<{ id: string }>(
      `UPDATE hookbot_inbox SET lease_until = clock_timestamp() + $2 * interval '1 millisecond'
       WHERE holder = $1 AND id = ANY($3::text[]) RETURNING id`,
      [...extend, held],
    );
    if (renewed.rows.length < held.length) releaseLost(store, viewed, renewed.rows);
  }
  if (leases.size > 0)
    await store.query(
      `UPDATE hookbot_leases SET until = clock_timestamp() + $2 * interval '1 millisecond'
       WHERE holder = $1 AND name = ANY($3::text[])`,
      [...extend, [...leases]],
    );
}

/**
 * Deliveries of this view the renewal did not find held by this replica: processed meanwhile (gone
 * already), or their lease ran out before this renewal (a pause longer than the lease: a stalled
 * process, the database away) and another replica took them over. Those leave this view: the other
 * replica processes them, and both doing so would act twice (found by the replicas test on a busy
 * machine: two replicas each holding the same three deliveries).
 */
function releaseLost(
  store: StoreAccess,
  viewed: readonly string[],
  renewed: readonly { id: string }[],
): void {
  const kept = new Set(renewed.map((row) => row.id));
  const lost = viewed.filter((id) => !kept.has(id) && store.model.inbox.has(id));
  for (const id of lost) store.model.release(id);
  if (lost.length > 0)
    store.options.log?.warn(
      { deliveries: lost.length },
      'deliveries whose lease ran out before it was renewed were taken over by another replica; left to it',
    );
}

/** The deliveries parked by the fleet (the status page's), oldest parked first. */
export async function loadParkedDeliveries(store: StoreAccess): Promise<void> {
  const rows = await store.query<{ record: string }>(
    'SELECT record FROM (SELECT record, seq FROM hookbot_parked_deliveries ORDER BY seq DESC LIMIT $1) t ORDER BY seq',
    [store.options.maxParked],
  );
  const parked = store.model.parkedDeliveries;
  parked.clear();
  for (const row of rows.rows) {
    const record = JSON.parse(row.record) as ParkedDelivery;
    parked.set(record.id, record);
  }
}

/** Takes over deliveries whose lease ran out (their replica died or closed), oldest first. */
export async function adopt(store: StoreAccess, adoptedListeners: readonly (() => void)[]): Promise<void> {
  if (!store.options.takeDeliveries) return;
  const room = Math.max(0, store.options.maxPending - store.model.inbox.size);
  if (room === 0) return;
  const taken = await store.query<{
    id: string;
    entry: string;
    bytes: number;
    seq: string;
    attempts: number;
  }>(
    `UPDATE hookbot_inbox SET holder = $1, lease_until = clock_timestamp() + $2 * interval '1 millisecond'
     WHERE id IN (
       SELECT id FROM hookbot_inbox WHERE lease_until < clock_timestamp()
       ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED
     )
     RETURNING id, entry, bytes, seq, attempts`,
    [store.replicaId, store.options.leaseMs, Math.min(room, 1_000)],
  );
  if (taken.rowCount === 0) return;
  const rows = taken.rows.sort((a, b) => Number(a.seq) - Number(b.seq));
  for (const r of rows) {
    const parsed = inboxEntrySchema.safeParse(JSON.parse(r.entry));
    if (!parsed.success) {
      store.options.log?.warn({ delivery: r.id }, 'an inbox row is not an entry hookbot writes; left aside');
      continue;
    }
    store.model.adopt(HeldEntry.fromJson(parsed.data, r.entry, r.bytes));
    if (r.attempts > 0) store.model.attempts.set(r.id, r.attempts);
  }
  for (const listener of adoptedListeners) listener();
}

/** Every replica the fleet has had, with the deliveries and names each holds now. */
export async function readReplicas(store: StoreAccess): Promise<ReplicaView[]> {
  const rows = await store.query<{
    id: string;
    started_at: Date;
    seen_at: Date;
    stopped_at: Date | null;
    deliveries: string;
    leases: string[] | null;
  }>(
    `SELECT r.id, r.started_at, r.seen_at, r.stopped_at,
            (SELECT count(*) FROM hookbot_inbox i WHERE i.holder = r.id AND i.lease_until > clock_timestamp()) AS deliveries,
            (SELECT array_agg(l.name ORDER BY l.name) FROM hookbot_leases l WHERE l.holder = r.id AND l.until > clock_timestamp()) AS leases
     FROM hookbot_replicas r ORDER BY r.started_at`,
  );
  return rows.rows.map((row) => ({
    id: row.id,
    startedAt: row.started_at.getTime(),
    seenAt: row.seen_at.getTime(),
    ...(row.stopped_at ? { stoppedAt: row.stopped_at.getTime() } : {}),
    deliveries: Number(row.deliveries),
    leases: row.leases ?? [],
  }));
}
