/**
 * What the fleet shares (outbox, watches, queue and its controls, schedules, paused rules,
 * decisions), reloaded from the database into a replica's view at each refresh. The keys this
 * replica wrote while the reload read (touched) keep this replica's value, so a reload never undoes
 * a write it raced with.
 */
import { SCHEMA_VERSION as DOCUMENT_VERSION } from '../file/document.ts';
import { HeldState } from '../held-state.ts';
import type {
  DecisionRecord,
  OutboxAction,
  PausedRule,
  QueueControl,
  QueueEntry,
  WatchEntry,
} from '../store.ts';
import type { StoreAccess } from './store-access.ts';
import { queueKeyOf } from '../queue-order.ts';

/** A replica's view keeps no decisions for explain beyond the latest and the ring: they are read when asked. */
export const VIEW = { keepDecisions: false } as const;

/** Reads what the fleet shares, as a view of its own. */
export async function readShared(store: StoreAccess): Promise<HeldState> {
  const [outbox, watches, nextRuns, lastSuccess, paused, latest, recent, queue, controls] = await Promise.all(
    [
      store.query<{ action: string; parked_seq: string | null }>(
        'SELECT action, parked_seq FROM hookbot_outbox ORDER BY seq',
      ),
      store.query<{ entry: string }>('SELECT entry FROM hookbot_watches ORDER BY seq'),
      store.query<{ sweep: string; project: string; at: string }>(
        'SELECT sweep, project, at FROM hookbot_next_runs',
      ),
      store.query<{ sweep: string; at: string }>('SELECT sweep, at FROM hookbot_last_success'),
      store.query<{ paused: string }>('SELECT paused FROM hookbot_paused_rules ORDER BY seq'),
      store.query<{ record: string }>(
        'SELECT record FROM (SELECT record, n FROM hookbot_latest_decisions ORDER BY n DESC LIMIT $1) t ORDER BY n',
        [store.options.decisionItems],
      ),
      store.query<{ record: string }>(
        'SELECT record FROM (SELECT record, n FROM hookbot_recent_decisions ORDER BY n DESC LIMIT $1) t ORDER BY n',
        [store.options.recentDecisions],
      ),
      store.query<{ entry: string }>('SELECT entry FROM hookbot_queue ORDER BY seq'),
      store.query<{ control: string }>('SELECT control FROM hookbot_queue_controls ORDER BY seq'),
    ],
  );
  const actions = outbox.rows.map((r) => ({
    action: JSON.parse(r.action) as OutboxAction,
    parkedSeq: r.parked_seq === null ? undefined : Number(r.parked_seq),
  }));
  return HeldState.fromDocument(
    {
      version: DOCUMENT_VERSION,
      seq: 0,
      inbox: [],
      dedup: [],
      outbox: actions.filter((a) => a.parkedSeq === undefined).map((a) => a.action),
      parked: actions
        .filter((a) => a.parkedSeq !== undefined)
        .sort((a, b) => (a.parkedSeq ?? 0) - (b.parkedSeq ?? 0))
        .map((a) => a.action),
      watches: watches.rows.map((r) => JSON.parse(r.entry) as WatchEntry),
      queue: queue.rows.map((r) => JSON.parse(r.entry) as QueueEntry),
      schedules: {
        nextRuns: nextRuns.rows.map((r) => ({ sweep: r.sweep, project: r.project, at: Number(r.at) })),
        lastSuccess: lastSuccess.rows.map((r) => ({ sweep: r.sweep, at: Number(r.at) })),
      },
      pausedRules: paused.rows.map((r) => JSON.parse(r.paused) as PausedRule),
      decisions: {
        latest: latest.rows.map((r) => JSON.parse(r.record) as DecisionRecord),
        recent: recent.rows.map((r) => JSON.parse(r.record) as DecisionRecord),
      },
      dedupFiles: [],
      queueControls: controls.rows.map((r) => JSON.parse(r.control) as QueueControl),
    },
    store.options,
    [],
    [],
    VIEW,
  );
}

/**
 * Takes what a reload read (`theirs`) into the view's collection (`mine`), except the keys written
 * during the reload (`touched`, `collection\0key`), which keep this replica's value.
 */
function mergeLoaded<V>(
  collection: string,
  mine: Map<string, V>,
  theirs: Map<string, V>,
  touched: ReadonlySet<string>,
): void {
  const result = new Map(theirs);
  for (const entry of touched) {
    const [name, key] = entry.split('\0') as [string, string];
    if (name !== collection) continue;
    const value = mine.get(key);
    if (value === undefined) result.delete(key);
    else result.set(key, value);
  }
  mine.clear();
  for (const [key, value] of result) mine.set(key, value);
}

/**
 * The merge queues' tables alone, read into the view (Fleet.reloadQueue: the train's driver, under
 * its lock, works from the queue as the database holds it), except the keys written meanwhile.
 */
export async function reloadQueueInto(
  store: StoreAccess,
  view: HeldState,
  touched: ReadonlySet<string>,
): Promise<void> {
  const [queue, controls] = await Promise.all([
    store.query<{ entry: string }>('SELECT entry FROM hookbot_queue ORDER BY seq'),
    store.query<{ control: string }>('SELECT control FROM hookbot_queue_controls ORDER BY seq'),
  ]);
  const loaded = new Map<string, QueueEntry>();
  for (const row of queue.rows) {
    const entry = JSON.parse(row.entry) as QueueEntry;
    loaded.set(entry.itemKey, entry);
  }
  const loadedControls = new Map<string, QueueControl>();
  for (const row of controls.rows) {
    const control = JSON.parse(row.control) as QueueControl;
    loadedControls.set(queueKeyOf(control.project, control.targetBranch, control.queue), control);
  }
  mergeLoaded('queue', view.queue, loaded, touched);
  mergeLoaded('controls', view.controls, loadedControls, touched);
}

/** Takes the shared collections of `loaded` into the view, except the keys written meanwhile. */
export function installShared(view: HeldState, loaded: HeldState, touched: Set<string>): void {
  const merge = <V>(collection: string, mine: Map<string, V>, theirs: Map<string, V>) =>
    mergeLoaded(collection, mine, theirs, touched);
  // The outbox and the parked actions are one collection: an id is in one or the other.
  const touchedActions = [...touched].filter((t) => t.startsWith('outbox\0')).map((t) => t.slice(7));
  const mineOutbox = new Map(view.outbox);
  const mineParked = new Map(view.parked);
  view.outbox.clear();
  view.parked.clear();
  for (const [id, action] of loaded.outbox) if (!touchedActions.includes(id)) view.outbox.set(id, action);
  for (const [id, action] of loaded.parked) if (!touchedActions.includes(id)) view.parked.set(id, action);
  for (const id of touchedActions) {
    const active = mineOutbox.get(id);
    const parked = mineParked.get(id);
    if (active !== undefined) view.outbox.set(id, active);
    if (parked !== undefined) view.parked.set(id, parked);
  }
  merge('watches', view.watches, loaded.watches);
  merge('queue', view.queue, loaded.queue);
  merge('controls', view.controls, loaded.controls);
  merge('nextRuns', view.nextRuns, loaded.nextRuns);
  merge('lastSuccess', view.lastSuccess, loaded.lastSuccess);
  merge('paused', view.paused, loaded.paused);
  merge('decisions', view.latest, loaded.latest);
  if (![...touched].some((t) => t.startsWith('decisions\0')))
    view.recent.splice(0, view.recent.length, ...loaded.recent);
}
