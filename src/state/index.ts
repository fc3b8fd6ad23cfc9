export * from './store.ts';
export * from './errors.ts';
export * from './options.ts';
export { createFileStore } from './file/file-store.ts';
export { createMemoryStore } from './memory-store.ts';
export { SCHEMA_VERSION } from './file/document.ts';
export { createPostgresStore, describeDatabase, type PostgresStateStore } from './postgres/postgres-store.ts';
export { readLatestDecisions } from './postgres/read-decisions.ts';
export { PG_SCHEMA_VERSION } from './postgres/schema-migrations.ts';
