/**
 * The state store the configuration asks for: PostgreSQL when `state.database_url`
 * (`HOOKBOT_DATABASE_URL`) is set, so several replicas can share it; the state file otherwise.
 * Here rather than in `src/state/`, which knows nothing of the configuration.
 */
import type { Config } from './config/index.ts';
import { createFileStore } from './state/index.ts';
import type { CommitSample, StateOptions } from './state/index.ts';
import { createPostgresStore } from './state/index.ts';
import type { StateStore } from './state/index.ts';

export interface StoreExtras extends Pick<StateOptions, 'log' | 'decisionItems' | 'recentDecisions'> {
  onCommit?: (sample: CommitSample) => void;
  /** False for tools that read or sweep without processing deliveries (PostgreSQL: take none over). */
  takeDeliveries?: boolean;
}

export function createStoreFromConfig(state: Config['state'], extras: StoreExtras = {}): StateStore {
  const shared: StateOptions = {
    dedupTtlMs: state.dedup_ttl_ms,
    decisionItems: extras.decisionItems ?? state.decisions,
    decisionHistory: state.decision_history,
    decisionBytes: state.decision_bytes,
    maxPending: state.max_pending,
    maxPendingBytes: state.max_pending_bytes,
    ...(extras.recentDecisions === undefined ? {} : { recentDecisions: extras.recentDecisions }),
    ...(extras.log ? { log: extras.log } : {}),
  };
  if (state.database_url)
    return createPostgresStore({
      ...shared,
      url: state.database_url,
      schema: state.database_schema,
      leaseMs: state.lease_ms,
      connectTimeoutMs: state.database_connect_timeout_ms,
      statementTimeoutMs: state.database_statement_timeout_ms,
      queryTimeoutMs: state.database_query_timeout_ms,
      idleInTransactionTimeoutMs: state.database_idle_in_transaction_timeout_ms,
      keepAliveMs: state.database_keepalive_ms,
      acceptTimeoutMs: state.database_accept_timeout_ms,
      ...(state.replica_id ? { replicaId: state.replica_id } : {}),
      ...(extras.takeDeliveries === undefined ? {} : { takeDeliveries: extras.takeDeliveries }),
    });
  return createFileStore({
    ...shared,
    path: state.path,
    ...(extras.onCommit ? { onCommit: extras.onCommit } : {}),
  });
}
