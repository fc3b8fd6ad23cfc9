/**
 * The write-through: each mutation a replica makes to its view (held-state.ts) becomes the statement
 * that makes the database hold the same record, run in the order the writes were made (the store's
 * chain). The keys it writes are touched, so a reload under way keeps this replica's value for them.
 */
import type { Mutation } from '../mutations.ts';
import { queueKeyOf } from '../queue-order.ts';
import { insertDecision } from './decision-history.ts';
import type { StoreAccess } from './store-access.ts';

/** The statement that makes the database hold what `mutation` left in this replica's view. */
export function writeThrough(
  store: StoreAccess,
  touch: (collection: string, key: string) => void,
  m: Mutation,
): (() => Promise<void>) | undefined {
  const q = async (text: string, values: unknown[]) => void (await store.query(text, values));
  switch (m.op) {
    case 'accept':
    case 'processed':
    case 'attempt':
      return undefined; // their own paths (accept, markProcessed, beginAttempt)
    case 'attempt_released':
      return () => q('UPDATE hookbot_inbox SET attempts = greatest(attempts - 1, 0) WHERE id = $1', [m.id]);
    case 'park_delivery':
      // Out of the inbox and into the parked ones in one statement; the oldest past the bound go.
      return async () => {
        await q(
          `WITH gone AS (DELETE FROM hookbot_inbox WHERE id = $1 RETURNING id)
           INSERT INTO hookbot_parked_deliveries (id, record) SELECT id, $2 FROM gone
           ON CONFLICT (id) DO NOTHING`,
          [m.parked.id, JSON.stringify(m.parked)],
        );
        await q(
          `DELETE FROM hookbot_parked_deliveries WHERE seq <= (SELECT max(seq) FROM hookbot_parked_deliveries) - $1`,
          [store.options.maxParked],
        );
      };
    case 'put_action':
      touch('outbox', m.action.id);
      return () =>
        q('INSERT INTO hookbot_outbox (id, action) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [
          m.action.id,
          JSON.stringify(m.action),
        ]);
    case 'complete_action':
      touch('outbox', m.id);
      return () => q('DELETE FROM hookbot_outbox WHERE id = $1', [m.id]);
    case 'fail_action':
    case 'park_action': {
      touch('outbox', m.id);
      const parked = store.model.parked.get(m.id);
      const action = parked ?? store.model.outbox.get(m.id);
      if (action === undefined) return undefined;
      const json = JSON.stringify(action);
      return () =>
        q(
          `UPDATE hookbot_outbox SET action = $2,
             parked_seq = CASE WHEN $3 THEN nextval('hookbot_parked_n') ELSE NULL END
           WHERE id = $1`,
          [m.id, json, parked !== undefined],
        );
    }
    case 'watch':
      touch('watches', m.entry.itemKey);
      return () =>
        q(
          'INSERT INTO hookbot_watches (item_key, entry) VALUES ($1, $2) ON CONFLICT (item_key) DO UPDATE SET entry = excluded.entry',
          [m.entry.itemKey, JSON.stringify(m.entry)],
        );
    case 'unwatch':
      touch('watches', m.itemKey);
      return () => q('DELETE FROM hookbot_watches WHERE item_key = $1', [m.itemKey]);
    case 'enqueue':
      touch('queue', m.entry.itemKey);
      return () =>
        q(
          'INSERT INTO hookbot_queue (item_key, entry) VALUES ($1, $2) ON CONFLICT (item_key) DO UPDATE SET entry = excluded.entry',
          [m.entry.itemKey, JSON.stringify(m.entry)],
        );
    case 'dequeue':
      touch('queue', m.itemKey);
      return () => q('DELETE FROM hookbot_queue WHERE item_key = $1', [m.itemKey]);
    case 'queue_control': {
      const key = queueKeyOf(m.control.project, m.control.targetBranch, m.control.queue);
      touch('controls', key);
      if (m.control.paused === undefined)
        return () => q('DELETE FROM hookbot_queue_controls WHERE key = $1', [key]);
      return () =>
        q(
          'INSERT INTO hookbot_queue_controls (key, control) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET control = excluded.control',
          [key, JSON.stringify(m.control)],
        );
    }
    case 'next_run':
      touch('nextRuns', JSON.stringify([m.sweep, m.project]));
      return () =>
        q(
          'INSERT INTO hookbot_next_runs (sweep, project, at) VALUES ($1, $2, $3) ON CONFLICT (sweep, project) DO UPDATE SET at = excluded.at',
          [m.sweep, m.project, m.at],
        );
    case 'last_success':
      touch('lastSuccess', m.sweep);
      return () =>
        q(
          'INSERT INTO hookbot_last_success (sweep, at) VALUES ($1, $2) ON CONFLICT (sweep) DO UPDATE SET at = excluded.at',
          [m.sweep, m.at],
        );
    case 'pause_rule':
      touch('paused', m.paused.rule);
      return () =>
        q(
          'INSERT INTO hookbot_paused_rules (rule, paused) VALUES ($1, $2) ON CONFLICT (rule) DO UPDATE SET paused = excluded.paused',
          [m.paused.rule, JSON.stringify(m.paused)],
        );
    case 'approve_rule':
      touch('paused', m.rule);
      return () => q('DELETE FROM hookbot_paused_rules WHERE rule = $1', [m.rule]);
    case 'decision':
      touch('decisions', m.record.itemKey);
      return () =>
        insertDecision(
          (text, values) => store.query(text, values),
          m.record,
          JSON.stringify(m.record),
          store.options,
        );
  }
}
