/**
 * Every knob of the state store, with its default. The config loader maps its `state:` section
 * onto these; nothing here reads the environment or the disk.
 */
import { hostname } from 'node:os';
import { dirname, join, basename, extname } from 'node:path';
import type { Logger } from 'pino';

/** Bounds and clock, shared by every backend. */
export interface StateOptions {
  /** How long a delivery key counts as a duplicate. Default 24 h (real servers retry a timed-out delivery for hours). */
  dedupTtlMs?: number;
  /** Most de-duplication keys kept; past it the oldest go first (the window shrinks under extreme load). Default 100,000. */
  maxDedupKeys?: number;
  /** Most accepted-but-unprocessed deliveries; `accept` rejects with `inbox_full` past it. Default 10,000. */
  maxPending?: number;
  /**
   * Most bytes of accepted-but-unprocessed deliveries (as stored: the entry's JSON); `accept` rejects
   * with `inbox_full` when a delivery would pass it. Default 32 MiB: the pending bodies are held in
   * memory as text, and this fits beside everything else in the Docker image's 256 MB heap with
   * room for a restart's replay (docs/state.md).
   */
  maxPendingBytes?: number;
  /** Most parked actions kept; past it the oldest parked are dropped. Default 1,000. */
  maxParked?: number;
  /** Items whose latest decision is kept for explain (least recently decided go first). Default 500. */
  decisionItems?: number;
  /** Size of the ring of recent decisions (all items: the status page's). Default 200. */
  recentDecisions?: number;
  /** Evaluations kept per item for explain: the newest ones, whatever they did. Default 20. */
  decisionHistory?: number;
  /**
   * Decisions that acted kept per item besides those (the newest ones), so that evaluations that
   * did nothing, such as the echoes of the bot's own changes, do not push them out. Default 10.
   */
  actingDecisions?: number;
  /**
   * Bytes (of JSON) of the decisions kept for one item; past it the oldest that did nothing go
   * first, then the oldest that acted. The newest decision and the newest that acted stay whatever
   * their size. Default 256 KiB.
   */
  decisionItemBytes?: number;
  /**
   * Bytes (of JSON) of the decisions kept for all items; past it the least recently decided items'
   * kept decisions go first (their latest decision stays, for `latestDecision`). Default 8 MiB.
   */
  decisionBytes?: number;
  /** The clock (ms since the epoch). Default `Date.now`; tests pass a fake one. */
  now?: () => number;
  /** Where notable events go (a torn journal tail truncated, a migration, a compaction). Default: nowhere. */
  log?: Pick<Logger, 'info' | 'warn'>;
}

/** The embedded backend's files and write path. */
export interface FileStoreOptions extends StateOptions {
  /** The lowdb document. Default `data/hookbot.json`. */
  path?: string;
  /** The append-only journal. Default: next to the document, extension `.journal` (`data/hookbot.journal`). */
  journalPath?: string;
  /** The copy of the last good document, taken before each compaction replaces it. Default: `<path>.bak`. */
  backupPath?: string;
  /**
   * Group commit window: mutations arriving within it share one append and one fsync. Default 0: a
   * batch is what arrived in the current event-loop turn, and under load the next batch gathers while
   * the fsync is in flight anyway. A window only made every ack of a lone delivery wait for it:
   * measured with the receiver benchmark's paced load (500 and 1,000 deliveries/s), 2 ms gave an ack
   * p50 of 3.0-3.4 ms and 0 gave 1.9-2.1 ms, at the same saturated rate.
   */
  groupWindowMs?: number;
  /** Most mutations in one group commit. Default 1,000. */
  maxBatch?: number;
  /**
   * Called after each group commit, with how long it took from its write until the event loop saw
   * the fdatasync done: what every acknowledgement waits for (the runtime turns it into a metric).
   * Default: nothing.
   */
  onCommit?: (sample: CommitSample) => void;
  /** Compact once the journal holds more bytes than this. Default 8 MiB. */
  compactBytes?: number;
  /** Compact once the journal holds more records than this. Default 20,000. */
  compactRecords?: number;
  /**
   * New de-dup keys a compaction writes to a de-dup file of their own; fewer stay inline in the
   * document until there are this many. Default 1,000.
   */
  dedupFileKeys?: number;
}

export interface CommitSample {
  /** From the write until the fdatasync is seen done, in ms. */
  ms: number;
  records: number;
  bytes: number;
}

export type ResolvedStateOptions = Required<Omit<StateOptions, 'log'>> & Pick<StateOptions, 'log'>;
export type ResolvedFileStoreOptions = ResolvedStateOptions &
  Required<Omit<FileStoreOptions, keyof StateOptions>>;

export const STATE_DEFAULTS = {
  dedupTtlMs: 24 * 60 * 60 * 1000,
  maxDedupKeys: 100_000,
  maxPending: 10_000,
  maxPendingBytes: 32 * 1024 * 1024,
  maxParked: 1_000,
  decisionItems: 500,
  recentDecisions: 200,
  decisionHistory: 20,
  actingDecisions: 10,
  decisionItemBytes: 256 * 1024,
  decisionBytes: 8 * 1024 * 1024,
} as const;

export const FILE_STORE_DEFAULTS = {
  path: 'data/hookbot.json',
  groupWindowMs: 0,
  maxBatch: 1_000,
  compactBytes: 8 * 1024 * 1024,
  compactRecords: 20_000,
  dedupFileKeys: 1_000,
} as const;

export function resolveStateOptions(options: StateOptions = {}): ResolvedStateOptions {
  const resolved = {
    dedupTtlMs: options.dedupTtlMs ?? STATE_DEFAULTS.dedupTtlMs,
    maxDedupKeys: options.maxDedupKeys ?? STATE_DEFAULTS.maxDedupKeys,
    maxPending: options.maxPending ?? STATE_DEFAULTS.maxPending,
    maxPendingBytes: options.maxPendingBytes ?? STATE_DEFAULTS.maxPendingBytes,
    maxParked: options.maxParked ?? STATE_DEFAULTS.maxParked,
    decisionItems: options.decisionItems ?? STATE_DEFAULTS.decisionItems,
    recentDecisions: options.recentDecisions ?? STATE_DEFAULTS.recentDecisions,
    decisionHistory: options.decisionHistory ?? STATE_DEFAULTS.decisionHistory,
    actingDecisions: options.actingDecisions ?? STATE_DEFAULTS.actingDecisions,
    decisionItemBytes: options.decisionItemBytes ?? STATE_DEFAULTS.decisionItemBytes,
    decisionBytes: options.decisionBytes ?? STATE_DEFAULTS.decisionBytes,
    now: options.now ?? (() => Date.now()),
    log: options.log,
  };
  for (const key of [
    'dedupTtlMs',
    'maxDedupKeys',
    'maxPending',
    'maxPendingBytes',
    'maxParked',
    'decisionItems',
    'recentDecisions',
    'decisionHistory',
    'actingDecisions',
    'decisionItemBytes',
    'decisionBytes',
  ] as const) {
    requirePositiveInteger(key, resolved[key]);
  }
  return resolved;
}

export function resolveFileStoreOptions(options: FileStoreOptions = {}): ResolvedFileStoreOptions {
  const path = options.path ?? FILE_STORE_DEFAULTS.path;
  const resolved = {
    ...resolveStateOptions(options),
    path,
    journalPath: options.journalPath ?? join(dirname(path), `${basename(path, extname(path))}.journal`),
    backupPath: options.backupPath ?? `${path}.bak`,
    groupWindowMs: options.groupWindowMs ?? FILE_STORE_DEFAULTS.groupWindowMs,
    maxBatch: options.maxBatch ?? FILE_STORE_DEFAULTS.maxBatch,
    onCommit: options.onCommit ?? (() => undefined),
    compactBytes: options.compactBytes ?? FILE_STORE_DEFAULTS.compactBytes,
    compactRecords: options.compactRecords ?? FILE_STORE_DEFAULTS.compactRecords,
    dedupFileKeys: options.dedupFileKeys ?? FILE_STORE_DEFAULTS.dedupFileKeys,
  };
  if (!Number.isFinite(resolved.groupWindowMs) || resolved.groupWindowMs < 0)
    throw new RangeError(`state option groupWindowMs must be 0 or more, got ${resolved.groupWindowMs}`);
  for (const key of ['maxBatch', 'compactBytes', 'compactRecords', 'dedupFileKeys'] as const)
    requirePositiveInteger(key, resolved[key]);
  const paths = new Set([resolved.path, resolved.journalPath, resolved.backupPath]);
  if (paths.size !== 3)
    throw new RangeError('state options path, journalPath and backupPath must name three different files');
  return resolved;
}

function requirePositiveInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new RangeError(`state option ${name} must be a positive integer, got ${value}`);
}

/** The PostgreSQL backend (several replicas sharing one database). */
export interface PostgresStoreOptions extends StateOptions {
  /** Connection string, e.g. `postgres://hookbot@db:5432/hookbot` (`HOOKBOT_DATABASE_URL`). */
  url: string;
  /** The schema holding hookbot's tables. Default `public`; tests give each test its own. */
  schema?: string;
  /** This replica's name in leases, decisions and the status page. Default `<hostname>:<pid>`. */
  replicaId?: string;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /**
   * How long a replica's claim on a delivery, an item run or a sweep holds without being renewed:
   * a replica killed mid-item loses its claims after this and another replica takes the work over.
   * Default 30 s.
   */
  leaseMs?: number;
  /**
   * How often a replica renews its leases, takes over deliveries whose lease expired, prunes the
   * bounds and reloads the state the fleet shares (outbox, watches, schedules, decisions). Default 2 s.
   */
  refreshMs?: number;
  /** How long to wait for a connection before a write fails (and the receiver answers 503). Default 5 s. */
  connectTimeoutMs?: number;
  /**
   * The server's own bound on one statement (PostgreSQL's `statement_timeout`): past it the server
   * cancels the statement and the write fails with `unavailable`. Default 10 s; hookbot's statements
   * take milliseconds.
   */
  statementTimeoutMs?: number;
  /**
   * This replica's bound on one round trip (node-postgres's `query_timeout`): past it the query fails
   * and its connection is destroyed. It is what ends a query on a connection that died silently (a
   * firewall or a partition dropping packets: nothing ever answers, not even an error). Longer than
   * `statementTimeoutMs`, so that a server that is only slow says so itself first. Default 15 s.
   */
  queryTimeoutMs?: number;
  /**
   * PostgreSQL's `idle_in_transaction_session_timeout`: a session that opened a transaction and
   * then went silent (the schema migration's, whose replica vanished) is ended by the server and its
   * locks freed. Default 15 s.
   */
  idleInTransactionTimeoutMs?: number;
  /**
   * TCP keepalive on every connection, first probe after this long idle: an idle connection that
   * died silently is found by the kernel rather than by the next query, and a firewall or NAT that
   * forgets idle flows sees traffic. Default 10 s.
   */
  keepAliveMs?: number;
  /**
   * How long an accept may wait for its commit (its batch, a connection, the statement) before it
   * fails with `unavailable` and the receiver answers 503: a real server waits 10 s for the answer and
   * retries later. Also the readiness bound: a replica whose statement has waited longer than this is
   * not ready (`ping`). Default 5 s.
   */
  acceptTimeoutMs?: number;
  /** Most mutations in one batch (one multi-row statement). Default 1,000. */
  maxBatch?: number;
  /**
   * Take over deliveries other replicas left (their lease ran out). Default true; false for tools
   * that open the state without processing deliveries (`hookbot sweep --once`, explain).
   */
  takeDeliveries?: boolean;
}

export type ResolvedPostgresStoreOptions = ResolvedStateOptions &
  Required<Omit<PostgresStoreOptions, keyof StateOptions>>;

export const POSTGRES_STORE_DEFAULTS = {
  schema: 'public',
  poolSize: 10,
  leaseMs: 30_000,
  refreshMs: 2_000,
  connectTimeoutMs: 5_000,
  statementTimeoutMs: 10_000,
  queryTimeoutMs: 15_000,
  idleInTransactionTimeoutMs: 15_000,
  keepAliveMs: 10_000,
  acceptTimeoutMs: 5_000,
  maxBatch: 1_000,
  takeDeliveries: true,
} as const;

export function resolvePostgresStoreOptions(options: PostgresStoreOptions): ResolvedPostgresStoreOptions {
  if (typeof options.url !== 'string' || !/^postgres(ql)?:\/\//.test(options.url))
    throw new RangeError(
      'state option url must be a PostgreSQL connection string (postgres://user@host:5432/database)',
    );
  const resolved = {
    ...resolveStateOptions(options),
    url: options.url,
    schema: options.schema ?? POSTGRES_STORE_DEFAULTS.schema,
    replicaId: options.replicaId ?? `${hostname()}:${process.pid}`,
    poolSize: options.poolSize ?? POSTGRES_STORE_DEFAULTS.poolSize,
    leaseMs: options.leaseMs ?? POSTGRES_STORE_DEFAULTS.leaseMs,
    refreshMs: options.refreshMs ?? POSTGRES_STORE_DEFAULTS.refreshMs,
    connectTimeoutMs: options.connectTimeoutMs ?? POSTGRES_STORE_DEFAULTS.connectTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs ?? POSTGRES_STORE_DEFAULTS.statementTimeoutMs,
    queryTimeoutMs: options.queryTimeoutMs ?? POSTGRES_STORE_DEFAULTS.queryTimeoutMs,
    idleInTransactionTimeoutMs:
      options.idleInTransactionTimeoutMs ?? POSTGRES_STORE_DEFAULTS.idleInTransactionTimeoutMs,
    keepAliveMs: options.keepAliveMs ?? POSTGRES_STORE_DEFAULTS.keepAliveMs,
    acceptTimeoutMs: options.acceptTimeoutMs ?? POSTGRES_STORE_DEFAULTS.acceptTimeoutMs,
    maxBatch: options.maxBatch ?? POSTGRES_STORE_DEFAULTS.maxBatch,
    takeDeliveries: options.takeDeliveries ?? POSTGRES_STORE_DEFAULTS.takeDeliveries,
  };
  for (const key of [
    'poolSize',
    'leaseMs',
    'refreshMs',
    'connectTimeoutMs',
    'statementTimeoutMs',
    'queryTimeoutMs',
    'idleInTransactionTimeoutMs',
    'keepAliveMs',
    'acceptTimeoutMs',
    'maxBatch',
  ] as const)
    requirePositiveInteger(key, resolved[key]);
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(resolved.schema))
    throw new RangeError(
      `state option schema must be a plain identifier (letters, digits, _), got ${JSON.stringify(resolved.schema)}`,
    );
  return resolved;
}
