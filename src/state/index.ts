export * from './store.ts';
export * from './errors.ts';
export * from './options.ts';
export { createFileStore } from './file/file-store.ts';
export { createMemoryStore } from './memory-store.ts';
export { SCHEMA_VERSION } from './file/document.ts';
export { createPostgresStore, describeDatabase, type PostgresStateStore } from './postgres/postgres-store.ts';
export { readDecisions, readQueueEntries } from './postgres/read-decisions.ts';
export { PG_SCHEMA_VERSION } from './postgres/schema-migrations.ts';
export { holdsAnything, transferClock, transferState } from './transfer.ts';
export {
  pauseText,
  queueKeyOf,
  queuePosition,
  queueShape,
  queuesOf,
  trainEstimates,
  type QueueShape,
} from './queue-order.ts';
