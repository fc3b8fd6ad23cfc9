/**
 * The decisions kept for explain in PostgreSQL (`hookbot_decision_history`, schema version 4): one
 * row per decision, with its item, whether it acted and its size. The rules are those of the other
 * backends (kept-decisions.ts), in SQL:
 *
 * - each decision's row is inserted with the latest-decision and ring rows (write-through.ts), and
 *   its item's rows are trimmed at once, in the same chain of writes: by count (the newest
 *   `decisionHistory`, and the newest `actingDecisions` that acted) and by bytes
 *   (`decisionItemBytes`: the newest and the newest that acted always, then those that acted, then
 *   the others, newest first, while the running sum fits);
 * - the bounds over every item (`decisionItems` items, `decisionBytes` bytes: the least recently
 *   decided items' rows go first, the most recently decided item's never) at each refresh, with
 *   the other bounds.
 *
 * The rows are not part of a replica's view (reloaded every refresh, they would cost their bytes at
 * each one): `keptDecisions` reads an item's rows when explain asks. Rows are only ever inserted and
 * deleted, so replicas writing decisions of different items never lose each other's.
 */
import type pg from 'pg';
import type { DecisionRecord } from '../store.ts';
import type { KeptBounds } from '../kept-decisions.ts';

type Query = (text: string, values: unknown[]) => Promise<pg.QueryResult>;

/**
 * Inserts the decision's row (with its latest-decision row and its ring row: one statement), then
 * trims its item's rows. `json` is the record's JSON, as the view holds it.
 */
export async function insertDecision(query: Query, record: DecisionRecord, json: string, bounds: KeptBounds) {
  await query(
    `WITH latest AS (
       INSERT INTO hookbot_latest_decisions (item_key, record) VALUES ($1, $2)
       ON CONFLICT (item_key) DO UPDATE SET record = excluded.record, n = excluded.n
     ), kept AS (
       INSERT INTO hookbot_decision_history (n, item_key, acted, bytes, record)
       VALUES (nextval('hookbot_decision_n'), $1, $3, octet_length($2), $2)
     )
     INSERT INTO hookbot_recent_decisions (record) VALUES ($2)`,
    [record.itemKey, json, record.acted === true],
  );
  await query(
    `WITH ranked AS (
       SELECT n, bytes, acted,
              row_number() OVER (ORDER BY n DESC) AS r,
              row_number() OVER (PARTITION BY acted ORDER BY n DESC) AS ra
       FROM hookbot_decision_history WHERE item_key = $1
     ), counted AS (
       SELECT n, bytes, acted, (r = 1 OR (acted AND ra = 1)) AS must
       FROM ranked WHERE r <= $2 OR (acted AND ra <= $3)
     ), sized AS (
       SELECT n, must,
              sum(bytes) OVER (ORDER BY must DESC, acted DESC, n DESC ROWS UNBOUNDED PRECEDING) AS running
       FROM counted
     )
     DELETE FROM hookbot_decision_history
     WHERE item_key = $1 AND n NOT IN (SELECT n FROM sized WHERE must OR running <= $4)`,
    [record.itemKey, bounds.decisionHistory, bounds.actingDecisions, bounds.decisionItemBytes],
  );
}

/** The bounds over every item: the least recently decided items' rows go first. */
export async function pruneDecisionHistory(query: Query, bounds: KeptBounds & { decisionItems: number }) {
  await query(
    `DELETE FROM hookbot_decision_history WHERE item_key IN (
       SELECT item_key FROM (
         SELECT item_key,
                row_number() OVER (ORDER BY max(n) DESC) AS r,
                sum(sum(bytes)) OVER (ORDER BY max(n) DESC ROWS UNBOUNDED PRECEDING) AS running
         FROM hookbot_decision_history GROUP BY item_key
       ) items
       WHERE r > $1 OR (r > 1 AND running > $2)
     )`,
    [bounds.decisionItems, bounds.decisionBytes],
  );
}

/** One item's kept decisions, newest first (also read by `hookbot explain --database`). */
export async function readKept(
  query: (text: string, values: unknown[]) => Promise<pg.QueryResult<{ record: string }>>,
  itemKey: string,
  table = 'hookbot_decision_history',
): Promise<DecisionRecord[]> {
  const rows = await query(`SELECT record FROM ${table} WHERE item_key = $1 ORDER BY n DESC`, [itemKey]);
  return rows.rows.map((row) => JSON.parse(row.record) as DecisionRecord);
}
