/**
 * The PostgreSQL store's connections: a pool whose every wait has a bound, and the bookkeeping that
 * tells a wedged store from a slow one.
 *
 * A connection can die silently: a firewall, a NAT that forgot the flow or a network partition
 * drops its packets, and neither side hears an error. Without bounds a query sent on it waits for
 * the kernel's retransmissions to give up (about a quarter of an hour on Linux), and whatever waits
 * behind it (the next accept batch, the refresh that renews the leases, a stop) waits as long. So:
 *
 * - `connectionTimeoutMillis`: opening a connection, or waiting for one of the pool's;
 * - `statement_timeout` (the server's) and `query_timeout` (ours, longer): a statement the server
 *   runs too long is cancelled by the server with an error; a round trip nobody answers is ended
 *   here, and the pool destroys its connection;
 * - `idle_in_transaction_session_timeout`: a transaction whose client vanished frees its locks;
 * - TCP keepalive: an idle connection that died is found by the kernel, and the flow is kept alive
 *   in the firewalls on the way.
 *
 * Every query is tracked from the moment it is asked for until it settles, so readiness can say
 * "this replica has a statement that has waited too long" even while a fresh connection would
 * answer a `SELECT 1` at once (the wedged ones hold the accept batches).
 */
import type { Socket } from 'node:net';
import pg from 'pg';
import { StateError } from '../errors.ts';
import type { ResolvedPostgresStoreOptions } from '../options.ts';
import { quoteIdent } from './schema-migrations.ts';

type PoolOptions = Pick<
  ResolvedPostgresStoreOptions,
  | 'url'
  | 'schema'
  | 'poolSize'
  | 'connectTimeoutMs'
  | 'statementTimeoutMs'
  | 'queryTimeoutMs'
  | 'idleInTransactionTimeoutMs'
  | 'keepAliveMs'
>;

/** The pool with every bound set, and the sockets it opened (to destroy them at a forced close). */
export class Connections {
  readonly pool: pg.Pool;
  readonly #clients = new Set<pg.PoolClient>();
  /** Queries asked for and not settled: id -> when asked (performance.now()). */
  readonly #inFlight = new Map<number, number>();
  #nextId = 0;

  constructor(options: PoolOptions, onLost: (error: Error) => void) {
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: options.statementTimeoutMs,
      query_timeout: options.queryTimeoutMs,
      idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: options.keepAliveMs,
      options: `-c search_path=${quoteIdent(options.schema)}`,
      // Names the schema too: an operator (or a test) can tell one deployment's connections apart.
      application_name: `hookbot/${options.schema}`.slice(0, 63),
    });
    // A connection that dies while idle (the server restarted, a backend was terminated, keepalive
    // found it dead) is an event, not a crash: the pool drops it and the next query opens a new one.
    this.pool.on('error', onLost);
    this.pool.on('connect', (client) => this.#clients.add(client));
    this.pool.on('remove', (client) => this.#clients.delete(client));
  }

  /** A query, tracked until it settles; a lost or wedged connection becomes StateError `unavailable`. */
  query<R extends pg.QueryResultRow>(
    label: string,
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    return this.track(
      this.pool.query<R>(text, values).catch((error: unknown) => {
        throw isConnectionLoss(error)
          ? new StateError(
              'unavailable',
              `${label}: ${error instanceof Error ? error.message : String(error)} (try again)`,
              { cause: error },
            )
          : error;
      }),
    );
  }

  /** Counts `work` as in flight until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    const id = ++this.#nextId;
    this.#inFlight.set(id, performance.now());
    return work.finally(() => this.#inFlight.delete(id));
  }

  /** Queries in flight now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** How long the oldest query in flight has waited, in ms (0 when none). */
  oldestWaitMs(): number {
    let oldest = Infinity;
    for (const since of this.#inFlight.values()) oldest = Math.min(oldest, since);
    return oldest === Infinity ? 0 : performance.now() - oldest;
  }

  /**
   * Destroys every socket the pool opened, in use or idle: the queries on them fail at once and the
   * pool forgets them. For a close that may not wait any longer for a database that does not answer.
   */
  destroy(): void {
    for (const client of this.#clients) {
      const socket = (client as unknown as { connection?: { stream?: Socket } }).connection?.stream;
      socket?.destroy();
    }
  }
}

/**
 * A connection refused, reset, timed out or terminated (a restart, `pg_terminate_backend`), a
 * statement cancelled by `statement_timeout`, a session ended by `idle_in_transaction_session_timeout`:
 * SQLSTATE classes 08 (connection exception) and 57P (operator intervention), 57014 (query
 * cancelled), 25P03 (idle in transaction timeout), or no SQLSTATE at all (the socket failed, or
 * `query_timeout` ended a round trip nobody answered). Retrying, on a new connection, can succeed.
 */
function isConnectionLoss(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return error instanceof Error;
  return code.startsWith('08') || code.startsWith('57P') || code === '57014' || code === '25P03';
}

/** True when `work` settled within `ms`; always waits for it when `ms` is undefined. */
export async function settlesWithin(work: Promise<void>, ms: number | undefined): Promise<boolean> {
  if (ms === undefined) {
    await work;
    return true;
  }
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The store's readiness check (`ping`, postgres-store.ts): a `SELECT 1` that fails as soon as any
 * statement in flight, itself included, has waited longer than `bound` ms.
 */
export async function answersWithin(db: Connections, label: string, bound: number): Promise<void> {
  const stalled = (): StateError | undefined => {
    const waited = db.oldestWaitMs();
    return waited > bound
      ? new StateError(
          'unavailable',
          `${label}: a statement has waited ${Math.round(waited)} ms for the database (the bound is ${bound} ms)`,
        )
      : undefined;
  };
  const now = stalled();
  if (now !== undefined) throw now;
  let watch: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      watch = setInterval(
        () => {
          const problem = stalled();
          if (problem !== undefined) reject(problem);
        },
        Math.min(250, bound),
      );
      db.query(label, 'SELECT 1').then(() => resolve(), reject);
    });
  } finally {
    clearInterval(watch);
  }
}
