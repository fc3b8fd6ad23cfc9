/**
 * A call no rule's evaluation plans as such, carried out now under its outbox id: the merge
 * queue's merges and comments, the merge watch's merge, the disarm of the server's merge
 * (rules/item/disarm.ts). It is put in the outbox first, leased for a while (the retry sweep leaves
 * it alone meanwhile), then run by the executor with every re-check of a retry: a crash between the
 * two leaves it to the retry sweep, and a call planned meanwhile by a hook is the same action, not a
 * second one.
 */
import type { StateStore } from '../../state/index.ts';
import type { CallReport, Executor } from './executor.ts';
import { actionIdOf } from './ids.ts';
import type { StoredCall } from './types.ts';

/** How long a call run now is leased from the retry sweep. */
const LEASE_MS = 60_000;

export interface OutboxNowDeps {
  store: Pick<StateStore, 'putAction' | 'getAction'>;
  executor: Pick<Executor, 'retryAction'>;
  now: () => number;
}

/** Puts `stored` in the outbox for `itemKey` under its deterministic id, leased; the id. */
export async function toOutbox(deps: OutboxNowDeps, itemKey: string, stored: StoredCall): Promise<string> {
  const { rule, call } = stored.planned;
  const id = actionIdOf(itemKey, rule, call);
  await deps.store.putAction({ id, itemKey, rule, call: stored, nextTryAt: deps.now() + LEASE_MS });
  return id;
}

/** Runs the outbox action `id` now (the executor's retry, with its re-checks). */
export async function runOutbox(deps: OutboxNowDeps, id: string): Promise<CallReport> {
  const action = deps.store.getAction(id);
  if (!action) throw new Error(`outbox lost action ${id}`);
  return deps.executor.retryAction(action);
}

/** Both: the call put in the outbox and run now. */
export async function runNow(deps: OutboxNowDeps, itemKey: string, stored: StoredCall): Promise<CallReport> {
  return runOutbox(deps, await toOutbox(deps, itemKey, stored));
}
