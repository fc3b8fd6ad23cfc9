/**
 * Moves a whole state from one store to another through the StateStore interface only, so it works
 * between any two backends (`hookbot state migrate --to postgres|file`). The target's clock is
 * set to each record's own time while it is written, so times come over as they were (when a
 * delivery was accepted, an action planned, a rule paused, a decision made). The decisions kept for
 * explain come over with their ids, so links to them (the status page's) still lead to them.
 *
 * What does not come over: the de-duplication keys of deliveries already processed (the interface
 * does not list them; a redelivery of one within the window is then evaluated again, on the item's
 * current state, which the level-triggered design makes harmless), and delivery ids (each pending
 * delivery is accepted anew and gets a new one), with the attempts begun on them and the deliveries
 * parked unprocessed (a migration starts each pending delivery's count again: at worst one more
 * attempt at a poison delivery, which is then parked as before).
 */
import type { DecisionRecord, StateStore } from './store.ts';

export interface TransferCounts {
  deliveries: number;
  actions: number;
  parked: number;
  watches: number;
  queued: number;
  queueControls: number;
  pausedRules: number;
  decisions: number;
  schedules: number;
}

/** A clock the transfer moves: give its `read` as the target store's `now`. */
export interface TransferClock {
  at: number | undefined;
  read: () => number;
}

export function transferClock(): TransferClock {
  const clock: TransferClock = { at: undefined, read: () => clock.at ?? Date.now() };
  return clock;
}

/** What the target already holds: a transfer goes into an empty state only (nothing is merged). */
export function holdsAnything(store: StateStore): string | undefined {
  const s = store.stats();
  const held = (
    [
      [s.inbox, 'delivery', 'deliveries'],
      [s.outbox, 'action', 'actions'],
      [s.parked, 'parked action', 'parked actions'],
      [s.watched, 'watch', 'watches'],
      [s.pausedRules, 'paused rule', 'paused rules'],
      [s.queueControls, 'queue control', 'queue controls'],
      [s.decisionItems, 'decision', 'decisions'],
    ] as const
  ).filter(([n]) => n > 0);
  return held.length === 0
    ? undefined
    : held.map(([n, one, many]) => `${n} ${n === 1 ? one : many}`).join(', ');
}

/** `sweeps`: the sweep names whose schedules to carry (the interface has no list of them). */
export async function transferState(
  from: StateStore,
  to: StateStore,
  clock: TransferClock,
  sweeps: readonly string[],
): Promise<TransferCounts> {
  const counts: TransferCounts = {
    deliveries: 0,
    actions: 0,
    parked: 0,
    watches: 0,
    queued: 0,
    queueControls: 0,
    pausedRules: 0,
    decisions: 0,
    schedules: 0,
  };
  try {
    for (const entry of from.pending()) {
      clock.at = entry.acceptedAt;
      await to.accept({
        key: entry.key,
        kind: entry.kind,
        receivedAt: entry.receivedAt,
        headers: entry.headers,
        body: entry.body,
      });
      counts.deliveries++;
    }
    const active = from.dueActions(Number.MAX_SAFE_INTEGER);
    for (const action of [...active, ...from.listParked()]) {
      clock.at = action.createdAt;
      await to.putAction({
        id: action.id,
        itemKey: action.itemKey,
        rule: action.rule,
        call: action.call,
        nextTryAt: action.nextTryAt,
      });
      // The tries so far, each a retryable failure with the last error (the count is what matters).
      for (let i = 0; i < action.attempts; i++)
        await to.failAction(action.id, {
          error: action.lastError ?? 'failed before the migration',
          retryable: true,
          nextTryAt: action.nextTryAt,
        });
      if (action.parked) {
        clock.at = action.parked.at;
        await to.parkAction(action.id, action.parked.reason);
        counts.parked++;
      } else counts.actions++;
    }
    for (const entry of from.watched()) {
      await to.watch(entry);
      counts.watches++;
    }
    for (const entry of from.queued()) {
      await to.enqueue(entry);
      counts.queued++;
    }
    // An operator's pause, with who, why and when (the control carries its own time).
    for (const control of from.queueControls()) {
      await to.setQueueControl(control);
      counts.queueControls++;
    }
    for (const paused of from.pausedRules()) {
      clock.at = paused.at;
      await to.pauseRule(paused.rule, paused.reason);
      counts.pausedRules++;
    }
    for (const sweep of sweeps) {
      const next = from.nextRun(sweep);
      if (next !== undefined) await to.setNextRun(sweep, undefined, next);
      const last = from.lastSuccess(sweep);
      if (last !== undefined) await to.setLastSuccess(sweep, last);
      if (next !== undefined || last !== undefined) counts.schedules++;
    }
    // Every decision kept for explain, with its id and whether it acted, each item's oldest first
    // and its latest last; all of them in the order they were made, so the target keeps the same
    // latest decisions, in the same order (and within the same bounds).
    const decisions: DecisionRecord[] = [];
    for (const latest of from.latestDecisions()) {
      const kept = (await from.keptDecisions(latest.itemKey)).reverse();
      const newest = kept.at(-1);
      const same =
        newest !== undefined && (newest.id === undefined ? newest.at === latest.at : newest.id === latest.id);
      decisions.push(...kept, ...(same ? [] : [latest]));
    }
    // Stable: records made in the same millisecond keep the order above.
    decisions.sort((a, b) => a.at - b.at);
    for (const record of decisions) {
      clock.at = record.at;
      await to.recordDecision(record.itemKey, record.decision, {
        ...(record.acted ? { acted: true } : {}),
        ...(record.id === undefined ? {} : { id: record.id }),
      });
      counts.decisions++;
    }
    await to.flush();
  } finally {
    clock.at = undefined;
  }
  return counts;
}
