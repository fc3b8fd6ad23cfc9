/**
 * What the parts of the PostgreSQL store (postgres-store.ts) reach of it: its statements, its
 * replica's view and its options. The store is one class; its parts (the batch of accepts, the
 * write-through, the reload, the fleet's upkeep) are functions in their own files that take this.
 */
import type pg from 'pg';
import type { HeldState } from '../held-state.ts';
import type { ResolvedPostgresStoreOptions } from '../options.ts';

/** One statement on the store's pool; fails with `closed` once the store is closed. */
export type Query = <R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string,
  values?: unknown[],
) => Promise<pg.QueryResult<R>>;

export interface StoreAccess {
  readonly query: Query;
  /** This replica's view, as it is now (the store replaces it at open and close). */
  readonly model: HeldState;
  /** The store's options: those of every backend and the database's own (`options` and `#pg` there). */
  readonly options: ResolvedPostgresStoreOptions;
  readonly replicaId: string;
}

/** About how many de-dup keys the table holds (pruned past maxDedupKeys). */
export interface DedupEstimate {
  keys: number;
}
