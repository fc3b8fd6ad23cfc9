/**
 * The PostgreSQL schema and the steps between its versions. The bot creates and migrates its own
 * tables on open: every replica runs `migrateSchema`, one at a time (a transaction-scoped advisory
 * lock), and only the first finds anything to do. A database whose schema is newer than this build
 * knows is refused with a message saying so, before anything is read or written: an older replica
 * in a rolling deploy then stops instead of writing what it does not understand.
 *
 * Times are numbers (ms since the epoch) as everywhere in the state, except leases, which use the
 * database's own clock (`clock_timestamp()`), so replicas on machines whose clocks disagree still
 * agree on when a lease ran out. JSON values are `text`, not `jsonb`: jsonb reorders keys, and the
 * store promises values come back as `JSON.parse(JSON.stringify(value))` gives them.
 */
import type { PoolClient } from 'pg';
import { StateError } from '../errors.ts';

/** Bump with a new step at the end of `steps`. */
export const PG_SCHEMA_VERSION = 5;

/** `steps[i]` brings the schema from version i to i + 1. Never change a released step. */
const steps: readonly string[] = [
  `
  CREATE TABLE hookbot_meta (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    schema_version integer NOT NULL
  );
  -- The de-duplication window: a key is new again once expires_at is past. n: the order keys are
  -- pushed out in past maxDedupKeys (a key set again takes a new n).
  CREATE SEQUENCE hookbot_dedup_n;
  CREATE TABLE hookbot_dedup (
    key text PRIMARY KEY,
    delivery_id text NOT NULL,
    expires_at bigint NOT NULL,
    n bigint NOT NULL DEFAULT nextval('hookbot_dedup_n')
  );
  CREATE INDEX hookbot_dedup_by_n ON hookbot_dedup (n);
  CREATE INDEX hookbot_dedup_by_expiry ON hookbot_dedup (expires_at);
  -- Accepted, not processed. holder/lease_until: the replica working it; an expired lease lets
  -- another replica take it over (FOR UPDATE SKIP LOCKED).
  CREATE TABLE hookbot_inbox (
    id text PRIMARY KEY,
    seq bigserial NOT NULL,
    entry text NOT NULL,
    bytes integer NOT NULL,
    holder text,
    lease_until timestamptz NOT NULL DEFAULT '-infinity'
  );
  CREATE INDEX hookbot_inbox_by_seq ON hookbot_inbox (seq);
  CREATE INDEX hookbot_inbox_by_holder ON hookbot_inbox (holder);
  -- Planned actions; parked_seq is set when parked (parking order).
  CREATE SEQUENCE hookbot_parked_n;
  CREATE TABLE hookbot_outbox (
    id text PRIMARY KEY,
    seq bigserial NOT NULL,
    action text NOT NULL,
    parked_seq bigint
  );
  CREATE TABLE hookbot_watches (
    item_key text PRIMARY KEY,
    seq bigserial NOT NULL,
    entry text NOT NULL
  );
  CREATE TABLE hookbot_next_runs (
    sweep text NOT NULL,
    project text NOT NULL,
    at bigint NOT NULL,
    PRIMARY KEY (sweep, project)
  );
  CREATE TABLE hookbot_last_success (sweep text PRIMARY KEY, at bigint NOT NULL);
  CREATE TABLE hookbot_paused_rules (
    rule text PRIMARY KEY,
    seq bigserial NOT NULL,
    paused text NOT NULL
  );
  CREATE SEQUENCE hookbot_decision_n;
  CREATE TABLE hookbot_latest_decisions (
    item_key text PRIMARY KEY,
    n bigint NOT NULL DEFAULT nextval('hookbot_decision_n'),
    record text NOT NULL
  );
  CREATE INDEX hookbot_latest_decisions_by_n ON hookbot_latest_decisions (n);
  CREATE TABLE hookbot_recent_decisions (
    n bigint PRIMARY KEY DEFAULT nextval('hookbot_decision_n'),
    record text NOT NULL
  );
  -- Leases on named work: 'sweep:<name>' (one replica runs a sweep), 'item:<key>' (one replica runs
  -- an item at a time).
  CREATE TABLE hookbot_leases (
    name text PRIMARY KEY,
    holder text NOT NULL,
    until timestamptz NOT NULL
  );
  CREATE INDEX hookbot_leases_by_holder ON hookbot_leases (holder);
  -- The fleet, for the status page.
  CREATE TABLE hookbot_replicas (
    id text PRIMARY KEY,
    started_at timestamptz NOT NULL,
    seen_at timestamptz NOT NULL,
    stopped_at timestamptz
  );
  `,
  // 2: merge queues (docs/merge-queue.md), one row per merge request in a queue.
  `
  CREATE TABLE hookbot_queue (
    item_key text PRIMARY KEY,
    seq bigserial NOT NULL,
    entry text NOT NULL
  );
  `,
  // 3: poison deliveries (issue 28): the attempts begun on each pending delivery, counted before it
  // is processed, and the deliveries parked unprocessed once processes kept dying on them.
  `
  ALTER TABLE hookbot_inbox ADD COLUMN attempts integer NOT NULL DEFAULT 0;
  CREATE TABLE hookbot_parked_deliveries (
    id text PRIMARY KEY,
    seq bigserial NOT NULL,
    record text NOT NULL
  );
  `,
  // 4: the decisions kept for explain per item (issue 30: the decision that acted outlives the
  // echoes of the bot's own changes; postgres/decision-history.ts), one row each: its item, whether
  // it acted, its size. The latest decision of each item so far is where its history starts.
  // Replicas of version 3 go on writing the latest decisions and the ring only, during a rolling
  // deploy: explain shows their decisions as the latest, without history.
  `
  CREATE TABLE hookbot_decision_history (
    n bigint PRIMARY KEY,
    item_key text NOT NULL,
    acted boolean NOT NULL,
    bytes integer NOT NULL,
    record text NOT NULL
  );
  CREATE INDEX hookbot_decision_history_by_item ON hookbot_decision_history (item_key, n);
  INSERT INTO hookbot_decision_history (n, item_key, acted, bytes, record)
    SELECT n, item_key, false, octet_length(record), record FROM hookbot_latest_decisions;
  `,
  // 5: operators' queue controls (docs/merge-queue.md#steering-the-queue), one row per controlled
  // queue: key is the project (lower case), target branch and queue name (state/queue-order.ts).
  // Replicas of version 4 ignore the table during a rolling deploy: they do not see a pause.
  `
  CREATE TABLE hookbot_queue_controls (
    key text PRIMARY KEY,
    seq bigserial NOT NULL,
    control text NOT NULL
  );
  `,
];

/** Any fixed number: the lock every replica takes while it checks and migrates the schema. */
const MIGRATION_LOCK = 0x686f6f6b; // 'hook'

export interface MigrationResult {
  from: number;
  to: number;
}

/**
 * Creates or upgrades the schema to PG_SCHEMA_VERSION, in one transaction; refuses a newer one.
 * `where` names the database for messages (the URL without its password).
 */
export async function migrateSchema(
  client: PoolClient,
  schema: string,
  where: string,
): Promise<MigrationResult> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    const exists = await client.query<{ found: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS found`, [
      `${quoteIdent(schema)}.hookbot_meta`,
    ]);
    let from = 0;
    if (exists.rows[0]?.found) {
      const row = await client.query<{ schema_version: number }>('SELECT schema_version FROM hookbot_meta');
      from = row.rows[0]?.schema_version ?? 0;
    }
    if (from > PG_SCHEMA_VERSION)
      throw new StateError(
        'newer_version',
        `state database ${where} (schema ${schema}): written by a newer hookbot (schema version ${from}; this one knows up to ${PG_SCHEMA_VERSION}); refusing to start and leaving it untouched. Run the newer hookbot (finish the rolling deploy), or restore a backup of the database taken before the upgrade.`,
      );
    for (let version = from; version < PG_SCHEMA_VERSION; version++) {
      await client.query(steps[version] as string);
    }
    if (from === 0)
      await client.query('INSERT INTO hookbot_meta (schema_version) VALUES ($1)', [PG_SCHEMA_VERSION]);
    else if (from < PG_SCHEMA_VERSION)
      await client.query('UPDATE hookbot_meta SET schema_version = $1', [PG_SCHEMA_VERSION]);
    await client.query('COMMIT');
    return { from, to: PG_SCHEMA_VERSION };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** A schema name as SQL (options.ts allows only plain identifiers; quoted anyway). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
