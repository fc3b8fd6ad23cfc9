/**
 * A PostgreSQL connection that dies silently (issue 28, item 7): a firewall or a network partition
 * drops the packets, so neither end hears an error, a reset or anything else. The store talks to the
 * real server through a TCP proxy (test/helpers/fault-proxy.ts, `startTcpFaultProxy`) that can stop
 * forwarding in both directions without closing a socket, and heal.
 *
 * Each test sets short bounds (hundreds of ms to 2 s instead of the defaults' 5-15 s) so that a run
 * takes seconds; what is asserted is never a duration but that an answer comes at all, before the
 * limit a real server gives a delivery (10 s), where without the bounds none ever comes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresStore, StateError, type Delivery } from '../../../src/state/index.ts';
import type { PostgresStoreOptions } from '../../../src/state/options.ts';
import { startTcpFaultProxy, type TcpFaultProxy } from '../../helpers/fault-proxy.ts';
import { adminQuery, postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../../helpers/postgres.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const schema = useTestSchemas();
type Store = ReturnType<typeof createPostgresStore>;
let proxies: TcpFaultProxy[] = [];
let stores: Store[] = [];

afterEach(async () => {
  for (const proxy of proxies) proxy.heal();
  for (const store of stores) await store.close({ timeoutMs: 2_000 });
  for (const proxy of proxies) await proxy.close();
  proxies = [];
  stores = [];
});

/** What a real server waits for a hook's answer. */
const SERVER_WAITS_MS = 10_000;

async function throughProxy(options: Partial<PostgresStoreOptions> = {}): Promise<{
  store: Store;
  proxy: TcpFaultProxy;
  schema: string;
}> {
  const target = new URL(TEST_DATABASE_URL);
  const proxy = await startTcpFaultProxy({ host: target.hostname, port: Number(target.port || 5432) });
  proxies.push(proxy);
  const name = schema();
  const store = createPostgresStore({
    url: proxy.through(TEST_DATABASE_URL),
    schema: name,
    replicaId: 'wedged',
    connectTimeoutMs: 1_000,
    statementTimeoutMs: 1_500,
    queryTimeoutMs: 2_000,
    acceptTimeoutMs: 1_000,
    ...options,
  });
  await store.open();
  stores.push(store);
  return { store, proxy, schema: name };
}

function delivery(key: string): Delivery {
  return { key, kind: 'Issue Hook', receivedAt: 1, headers: {}, body: { object_kind: 'issue', key } };
}

/** The outcome of `work`, or a failure saying nothing came within `ms` (the wedge this file is about). */
async function outcomeWithin<T>(work: Promise<T>, ms: number, what: string): Promise<T | Error> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no outcome within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, limit]);
  } catch (error) {
    if (error instanceof Error && error.message.endsWith(`no outcome within ${ms} ms`)) throw error;
    return error as Error;
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(!postgresAvailable)('PostgreSQL store, a connection that dies silently', () => {
  it('a partition while accepts are in flight: they fail with `unavailable` in time, readiness fails, and the store recovers once healed', async () => {
    const { store, proxy } = await throughProxy();
    expect((await store.accept(delivery('before'))).duplicate).toBe(false);

    proxy.blackHole();
    // Two batches in flight (the store's maximum) and more waiting behind them.
    const accepts = ['a', 'b', 'c', 'd'].map((key) =>
      outcomeWithin(store.accept(delivery(key)), SERVER_WAITS_MS, `accept ${key}`),
    );
    for (const outcome of await Promise.all(accepts)) {
      expect(outcome).toBeInstanceOf(StateError);
      expect(outcome).toMatchObject({ code: 'unavailable' });
    }
    const ping = await outcomeWithin(store.ping(), SERVER_WAITS_MS, 'ping');
    expect(ping).toBeInstanceOf(StateError);
    expect(ping).toMatchObject({ code: 'unavailable' });

    proxy.heal();
    // No reopen: the wedged connections were destroyed, new ones work.
    await waitFor(
      async () =>
        await store.ping().then(
          () => true,
          () => undefined,
        ),
      20_000,
      'the store to answer again',
    );
    expect((await store.accept(delivery('after'))).duplicate).toBe(false);
    expect(store.pending().map((entry) => entry.key)).toEqual(expect.arrayContaining(['before', 'after']));
  });

  it('only the open connections die (a firewall forgot them): readiness fails while a statement is stuck, though a fresh connection answers', async () => {
    // The query bound long (60 s): the stuck statement must outlast the readiness check below (the
    // next test lets the query bound end it).
    const { store, proxy } = await throughProxy({ acceptTimeoutMs: 300, queryTimeoutMs: 60_000 });
    proxy.blackHole({ newConnections: 'pass' });
    const stuck = await outcomeWithin(store.accept(delivery('stuck')), SERVER_WAITS_MS, 'accept');
    expect(stuck).toMatchObject({
      code: 'unavailable',
      message: expect.stringContaining('not committed within'),
    });
    // A fresh connection would answer `SELECT 1`; the replica is not ready all the same, because its
    // own statement (the accept batch) has waited past the bound. Before the fix /readyz said 200.
    const notReady = await waitFor(
      async () => {
        const outcome = await outcomeWithin(store.ping(), SERVER_WAITS_MS, 'ping');
        return outcome instanceof StateError && /has waited/.test(outcome.message) ? outcome : undefined;
      },
      20_000,
      'ping to report the stuck statement',
    );
    expect(notReady.code).toBe('unavailable');
  });

  it('recovers by itself once the connections that died silently are given up (query timeout)', async () => {
    const { store, proxy } = await throughProxy({ acceptTimeoutMs: 500, queryTimeoutMs: 1_000 });
    proxy.blackHole({ newConnections: 'pass' });
    // Every connection the pool held is dead; each statement sent on one is given up after the query
    // bound and its connection destroyed, so accepts succeed again on new connections.
    const accepted = await waitFor(
      async () => {
        const outcome = await outcomeWithin(store.accept(delivery('again')), SERVER_WAITS_MS, 'accept');
        return outcome instanceof Error ? undefined : outcome;
      },
      30_000,
      'an accept to succeed again',
    );
    expect(accepted.duplicate).toBe(false);
    await waitFor(
      async () =>
        await store.ping().then(
          () => true,
          () => undefined,
        ),
      30_000,
      'readiness to come back',
    );
  });

  it('a close with a bound ends in time during a partition, and what was accepted stays in the database', async () => {
    const { store, proxy, schema: name } = await throughProxy();
    const accepted = await store.accept(delivery('kept'));
    proxy.blackHole();
    const wedged = outcomeWithin(store.accept(delivery('lost-in-flight')), SERVER_WAITS_MS, 'accept');
    const closed = await outcomeWithin(store.close({ timeoutMs: 300 }), SERVER_WAITS_MS, 'close');
    expect(closed).toBeUndefined();
    expect(await wedged).toMatchObject({ code: 'unavailable' });
    proxy.heal();
    // Read past the proxy: the accepted delivery is still in the inbox, for the next start.
    const rows = await adminQuery(`SELECT id FROM "${name}".hookbot_inbox`);
    expect(rows.rows.map((row: { id: string }) => row.id)).toContain(accepted.id);
  });
});
