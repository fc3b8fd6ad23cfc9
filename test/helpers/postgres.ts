/**
 * Real PostgreSQL for tests (never a mock): `HOOKBOT_TEST_DATABASE_URL`, by default the server every
 * development machine and CI runs at 127.0.0.1:5432 (database `test`). Each test gets a schema of
 * its own, dropped afterwards.
 *
 * When the server cannot be reached: in CI (`CI=true`) that is a failure (the suite must run
 * there); elsewhere the PostgreSQL suites are skipped with one loud line saying how to run them.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach } from 'vitest';

export const TEST_DATABASE_URL =
  process.env['HOOKBOT_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

async function probe(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

const problem = await probe();
if (problem !== undefined) {
  if (process.env['CI'] === 'true')
    throw new Error(
      `PostgreSQL tests cannot run: ${TEST_DATABASE_URL} answers "${problem}" (CI must run them; set HOOKBOT_TEST_DATABASE_URL)`,
    );
  console.warn(
    `\n!!! PostgreSQL tests SKIPPED: ${TEST_DATABASE_URL} answers "${problem}". Start PostgreSQL 15 there (trust auth, database "test") or set HOOKBOT_TEST_DATABASE_URL=postgres://user@host:port/db to run them.\n`,
  );
}

/** False only outside CI when the server is unreachable (the suites skip, loudly, see above). */
export const postgresAvailable = problem === undefined;

/** Runs SQL on the test database (outside any store). */
export async function adminQuery(text: string, values?: unknown[]): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

export function newSchemaName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

/**
 * A fresh schema name per call, every one dropped after the test that asked for it. The store
 * creates the schema itself on open.
 */
export function useTestSchemas(): () => string {
  let made: string[] = [];
  afterEach(async () => {
    const names = made;
    made = [];
    for (const name of names) await adminQuery(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  });
  return () => {
    const name = newSchemaName();
    made.push(name);
    return name;
  };
}
