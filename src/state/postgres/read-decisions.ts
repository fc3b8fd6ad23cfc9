/**
 * The latest decision of every item, and the decisions kept for one of them, read straight from the
 * database for `hookbot explain`.
 *
 * Why not open the store: a store is a replica. Opening one registers it in the fleet, migrates the
 * schema, heartbeats and may take over deliveries, none of which a question like "why did it act?"
 * should do while the replicas run. This is one read-only transaction that writes nothing, so it is
 * safe beside a running fleet (the file store has one writer; here the database serialises).
 */
import pg from 'pg';
import { StateError } from '../errors.ts';
import type { DecisionRecord, QueueEntry } from '../store.ts';
import { describeDatabase } from './postgres-store.ts';
import { PG_SCHEMA_VERSION, quoteIdent } from './schema-migrations.ts';
import { readKept } from './decision-history.ts';

export interface ReadDecisions {
  latest: DecisionRecord[];
  /** The decisions kept for the item `pick` chose, newest first (none before schema version 4). */
  kept: DecisionRecord[];
}

/**
 * `pick`: given the latest decisions, the item whose kept decisions to read as well (undefined:
 * none). Both are read in one read-only transaction that sees one snapshot of the database.
 */
export async function readDecisions(
  url: string,
  schema: string,
  pick: (latest: readonly DecisionRecord[]) => string | undefined = () => undefined,
): Promise<ReadDecisions> {
  return readOnly(url, schema, 'explain', async (client, where, found) => {
    const unreadable = (table: string) =>
      new StateError(
        'corrupt',
        `${where}: a row of ${table} is not the JSON hookbot writes; ask a running replica with --bot instead`,
      );
    const rows = await client.query<{ record: string }>(
      `SELECT record FROM ${quoteIdent(schema)}.hookbot_latest_decisions ORDER BY n`,
    );
    const latest = rows.rows.map((row) => {
      try {
        return JSON.parse(row.record) as DecisionRecord;
      } catch {
        throw unreadable('hookbot_latest_decisions');
      }
    });
    const itemKey = pick(latest);
    let kept: DecisionRecord[] = [];
    if (itemKey !== undefined && found >= 4)
      kept = await readKept(
        (text, values) => client.query<{ record: string }>(text, values),
        itemKey,
        `${quoteIdent(schema)}.hookbot_decision_history`,
      ).catch((error: unknown) => {
        if (error instanceof SyntaxError) throw unreadable('hookbot_decision_history');
        throw error;
      });
    return { latest, kept };
  });
}

/**
 * The merge queues' entries, those the queue took out included (their `left` memory), for `simulate`
 * and `plan`: what the bot remembers decides whether a merge request enters its queue again (issue
 * 37). One read-only transaction, safe beside running replicas, as readDecisions.
 */
export async function readQueueEntries(url: string, schema: string, tool: string): Promise<QueueEntry[]> {
  return readOnly(url, schema, tool, async (client, where) => {
    const rows = await client.query<{ entry: string }>(
      `SELECT entry FROM ${quoteIdent(schema)}.hookbot_queue ORDER BY seq`,
    );
    return rows.rows.map((row) => {
      try {
        return JSON.parse(row.entry) as QueueEntry;
      } catch {
        throw new StateError('corrupt', `${where}: a row of hookbot_queue is not the JSON hookbot writes`);
      }
    });
  });
}

/** `fn` in one read-only transaction of the database, its hookbot schema checked first. */
async function readOnly<T>(
  url: string,
  schema: string,
  tool: string,
  fn: (client: pg.Client, where: string, version: number) => Promise<T>,
): Promise<T> {
  const where = `state database ${describeDatabase(url)} (schema ${schema})`;
  const client = new pg.Client({
    connectionString: url,
    application_name: `hookbot ${tool}`,
    connectionTimeoutMillis: 10_000,
  });
  try {
    await client.connect();
  } catch (error) {
    throw new StateError('unavailable', `${where}: cannot connect (${(error as Error).message})`, {
      cause: error,
    });
  }
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const meta = await client.query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', [
      `${quoteIdent(schema)}.hookbot_meta`,
    ]);
    if (!meta.rows[0]?.found)
      throw new StateError(
        'closed',
        `${where}: holds no hookbot state (no hookbot_meta table). Check HOOKBOT_DATABASE_URL and the schema (--database-schema).`,
      );
    const version = await client.query<{ schema_version: number }>(
      `SELECT schema_version FROM ${quoteIdent(schema)}.hookbot_meta`,
    );
    const found = version.rows[0]?.schema_version ?? 0;
    if (found > PG_SCHEMA_VERSION)
      throw new StateError(
        'newer_version',
        `${where}: written by a newer hookbot (schema version ${found}; this one knows up to ${PG_SCHEMA_VERSION}). Run ${tool} from the same version as the replicas, or ask one of them with --bot.`,
      );
    const result = await fn(client, where, found);
    await client.query('COMMIT');
    return result;
  } finally {
    await client.end().catch(() => undefined);
  }
}
