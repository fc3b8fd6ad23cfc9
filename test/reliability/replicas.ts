/**
 * Replicas: three `hookbot serve` processes share one PostgreSQL database (a schema of its own) and
 * the sandbox. A burst of distinct issue deliveries goes round-robin over the replicas (a delivery
 * a dead replica could not take goes to the next one, as a load balancer would); meanwhile random
 * replicas are killed with SIGKILL and restarted, and once, in the middle of the burst, the database
 * server crashes and restarts for real (`pg_ctl stop -m immediate`, a second down, start: WAL
 * recovery). The server is one of the scenario's own (test/helpers/private-postgres.ts), since the
 * shared one at 127.0.0.1:5432 serves other work on this machine. Where no PostgreSQL binaries are
 * installed (never in CI, where that is a failure) the shared server is used and every connection of
 * the bots is terminated instead (`pg_terminate_backend`), which is what a restart does to them.
 *
 * At the end every delivery answered 202 has been processed exactly once, counted in the sandbox:
 * one comment per issue, none missing, none doubled.
 */
import path from 'node:path';
import pg from 'pg';
import { startBotProcess, waitFor, sleep, type BotProcess } from './bot-process.ts';
import { goodHeaders, issuePayload } from './deliveries.ts';
import { startSender } from './delivery-sender.ts';
import { botEnv, DELIVERY_ONLY_CONFIG, freePort, makeSecret, writeConfig } from './harness.ts';
import { Expectations, notableLines, type ScenarioResult } from './report.ts';
import type { Sizes } from './sizes.ts';
import { COMMENT_RULE, countComments, createWorld, writeRules } from './world.ts';
import { postgresBinaries, startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.ts';

const SHARED_DATABASE_URL =
  process.env.HOOKBOT_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
let DATABASE_URL = SHARED_DATABASE_URL;

async function admin<R extends pg.QueryResultRow>(
  text: string,
  values?: unknown[],
): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await client.query<R>(text, values);
  } finally {
    await client.end();
  }
}

interface FleetStatus {
  fleetPending: number;
  outbox: number;
  parked: number;
}

async function readFleet(baseUrl: string): Promise<FleetStatus | undefined> {
  try {
    const res = await fetch(`${baseUrl}/status.json`);
    if (res.status !== 200) return undefined;
    const data = (await res.json()) as {
      stats: { outbox: number; parked: number };
      fleet?: { pending?: number };
    };
    if (data.fleet?.pending === undefined) return undefined;
    return { fleetPending: data.fleet.pending, outbox: data.stats.outbox, parked: data.stats.parked };
  } catch {
    return undefined;
  }
}

export async function replicasScenario(sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const n = sizes.replicaDeliveries;
  const schema = `reliability_${process.pid}_${Date.now().toString(36)}`;
  let server: PrivatePostgres | undefined;
  try {
    if (postgresBinaries() !== undefined) {
      server = await startPrivatePostgres();
      DATABASE_URL = server.url;
    } else if (process.env.CI === 'true') {
      throw new Error('no PostgreSQL binaries in /usr/lib/postgresql/*/bin for a server of its own');
    }
    await admin('SELECT 1');
  } catch (error) {
    await server?.stop();
    DATABASE_URL = SHARED_DATABASE_URL;
    return {
      name: 'replicas',
      seconds: 0,
      figures: {},
      failures: [
        `PostgreSQL at ${DATABASE_URL} cannot be reached (${error instanceof Error ? error.message : String(error)}): start it, or set HOOKBOT_TEST_DATABASE_URL`,
      ],
      totals: {},
    };
  }
  const secret = makeSecret('hook-secret');
  const world = await createWorld({ botToken: makeSecret('api-token'), label: 'replicas' });
  const replicas: (BotProcess | undefined)[] = [undefined, undefined, undefined];
  try {
    const ids = world.addIssues(n);
    const rulesDir = writeRules(world.dir, { 'default.yml': COMMENT_RULE });
    // Short leases: a killed replica's deliveries go to the others after 3 s rather than 30.
    const configFile = writeConfig(
      world.dir,
      'config.yml',
      `${DELIVERY_ONLY_CONFIG}state:\n  lease_ms: 3000\n  database_schema: ${schema}\n`,
    );
    const ports = await Promise.all(replicas.map(() => freePort()));
    const envOf = (i: number) => ({
      ...botEnv({
        world,
        secret,
        rulesDir,
        statePath: path.join(world.dir, `unused-state-${i}`, 'hookbot.json'),
        port: ports[i]!,
        configFile,
        logLevel: 'info',
      }),
      HOOKBOT_DATABASE_URL: DATABASE_URL,
    });
    const generations = [1, 1, 1];
    const restartMs: number[] = [];
    const start = async (i: number) => {
      const t0 = performance.now();
      replicas[i] = await startBotProcess({ env: envOf(i) }, `replicas: replica ${i} #${generations[i]}`);
      restartMs.push(performance.now() - t0);
    };
    for (let i = 0; i < replicas.length; i++) await start(i);

    const deliveries = ids.map((id, i) => ({
      body: issuePayload({ id, iid: i + 1, projectId: world.projectId }),
      headers: goodHeaders(secret),
    }));
    let turn = 0;
    const sender = startSender({
      // Round-robin; a replica being restarted refuses the connection and the sender tries again
      // (on the next replica, since the turn moved on).
      url: () => `http://127.0.0.1:${ports[turn++ % ports.length]}/hooks`,
      deliveries,
      concurrency: sizes.concurrency,
      timeoutMs: sizes.settleTimeoutMs,
    });
    const processed = () => world.botComments().size;
    let crashes = 0;
    const unexpected: string[] = [];
    const checkAlive = async () => {
      for (let i = 0; i < replicas.length; i++) {
        if (replicas[i]!.alive()) continue;
        crashes++;
        unexpected.push(
          `replica ${i} #${generations[i]} exited on its own:`,
          ...notableLines(replicas[i]!.output()),
        );
        generations[i]!++;
        await start(i);
      }
    };

    // Kill moments spread over the work (answers plus comments, 0 .. 2n); the database cut falls
    // in the middle of the burst.
    const from = 0.05 * 2 * n;
    const slice = (0.9 * 2 * n) / sizes.replicaKills;
    const events: { at: number; what: 'kill' | 'cut' }[] = Array.from(
      { length: sizes.replicaKills },
      (_, k) => ({
        at: Math.floor(from + (k + Math.random()) * slice),
        what: 'kill' as const,
      }),
    );
    events.push({ at: Math.floor(0.5 * n), what: 'cut' });
    events.sort((a, b) => a.at - b.at);
    const log: string[] = [];
    let cutConnections = 0;
    let databaseRestarted = false;
    for (const event of events) {
      await waitFor(
        `work ${event.at} of ${2 * n} before a ${event.what}`,
        () => (sender.answered() + processed() >= event.at ? true : undefined),
        sizes.settleTimeoutMs,
        10,
      );
      await checkAlive();
      if (event.what === 'kill') {
        const i = Math.floor(Math.random() * replicas.length);
        log.push(`kill replica ${i} at ${sender.answered()} answered / ${processed()} processed`);
        await replicas[i]!.kill9();
        generations[i]!++;
        await start(i);
      } else if (server !== undefined) {
        const startedAt = async () =>
          (await admin<{ t: string }>('SELECT pg_postmaster_start_time()::text AS t')).rows[0]?.t;
        const before = await startedAt();
        const at = `${sender.answered()} answered / ${processed()} processed`;
        await server.crashRestart(1_000);
        databaseRestarted = (await startedAt()) !== before;
        log.push(`database server crashed (immediate stop), down 1 s and restarted at ${at}`);
      } else {
        const cut = await admin<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1`,
          [`hookbot/${schema}`],
        );
        cutConnections += cut.rows[0]?.n ?? 0;
        log.push(
          `database connections cut (${cut.rows[0]?.n ?? 0}) at ${sender.answered()} answered / ${processed()} processed`,
        );
      }
    }

    await sender.done;
    const sent = sender.figures();
    await waitFor(
      'every issue processed and the fleet idle',
      async () => {
        await checkAlive();
        if (processed() < n) return undefined;
        const fleet = await Promise.all(replicas.map((r) => readFleet(r!.baseUrl)));
        return fleet.every((f) => f !== undefined && f.fleetPending === 0 && f.outbox === 0)
          ? true
          : undefined;
      },
      sizes.settleTimeoutMs,
      200,
    ).catch((error: unknown) => expect.true('the fleet finished its work', false, String(error)));
    // A late duplicate would come now, if ever: give it a moment before counting.
    await sleep(1_000);
    const count = countComments(world, ids);
    const parked = (await Promise.all(replicas.map((r) => readFleet(r!.baseUrl)))).reduce(
      (sum, f) => sum + (f?.parked ?? 0),
      0,
    );
    for (let i = 0; i < replicas.length; i++) {
      const code = await replicas[i]!.stop();
      if (code !== 0) {
        crashes++;
        unexpected.push(
          `replica ${i} exited with ${code} on SIGTERM`,
          ...notableLines(replicas[i]!.output()),
        );
      }
      replicas[i] = undefined;
    }

    const answered = sent.accepted + sent.acceptedAsDuplicate;
    expect.equal('deliveries answered 202', answered, n);
    expect.zero(
      'accepted deliveries with no comment (lost)',
      count.lost,
      `issues ${count.lostIds.join(', ')}`,
    );
    expect.zero(
      'comments beyond the first (duplicated)',
      count.duplicated,
      `issues ${count.duplicatedIds.join(', ')}`,
    );
    expect.zero('bot comments on issues no delivery named', count.stray);
    expect.zero('unexpected replica exits', crashes, unexpected.join('\n'));
    expect.zero('parked actions', parked);
    if (server !== undefined)
      expect.true('the database server restarted during the burst', databaseRestarted, log.join('; '));
    else
      expect.true(
        'the database cut reached the bots',
        cutConnections > 0,
        `${cutConnections} connections cut`,
      );

    return {
      name: 'replicas',
      seconds: (performance.now() - started) / 1000,
      figures: {
        replicas: replicas.length,
        deliveries: n,
        database:
          server !== undefined ? 'a server of its own, crashed and restarted' : 'shared, connections cut',
        events: log.join('; '),
        restart_ms_max: Math.round(Math.max(0, ...restartMs)),
        attempts: sent.attempts,
        refused: sent.refused,
        resets: sent.resets,
        accepted: sent.accepted,
        accepted_as_duplicate: sent.acceptedAsDuplicate,
        other_answers:
          Object.entries(sent.otherAnswers)
            .map(([k, v]) => `${v}x ${k}`)
            .join('; ') || 'none',
        processed: count.processed,
        lost: count.lost,
        duplicated: count.duplicated,
        stray: count.stray,
      },
      failures: expect.failures,
      totals: {
        sent: n,
        accepted: answered,
        processed: count.processed,
        lost: count.lost,
        duplicated: count.duplicated,
        kills: sizes.replicaKills,
        crashes,
      },
    };
  } finally {
    for (const replica of replicas) await replica?.kill9();
    await world.close();
    await admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await server?.stop();
    DATABASE_URL = SHARED_DATABASE_URL;
  }
}
