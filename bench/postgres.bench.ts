/**
 * The PostgreSQL store beside the state file, in the same run (issue 18):
 *
 * - Ack throughput and latency of POST /hooks at 64 connections (autocannon, distinct ~4 KB merge
 *   request payloads, each delivery marked processed once accepted), the real hook handler on the
 *   file store and on the PostgreSQL store, each server in its own process on the server core
 *   (pinning.ts), interleaved rounds. The PostgreSQL server runs on the same machine, unpinned: it
 *   shares the cores with both. Target: the PostgreSQL store reaches at least half the file
 *   store's requests/s (`ratio` >= 0.5).
 * - Hook to action with two replicas: two `hookbot serve` processes on one database and the
 *   sandbox, deliveries one at a time alternating between them, each for a new issue; from the
 *   POST to the label write at the sandbox (as bench/hook-to-action.bench.ts measures one instance).
 *
 * `BENCH_DATABASE_URL` (default postgres://postgres@127.0.0.1:5432/test); each server uses a schema
 * of its own, dropped at the end.
 */
import autocannon from './autocannon.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createWorld, startBot, viaBot } from './hook-to-action.bench.ts';
import { onLoadCore } from './pinning.ts';
import { loadOf, measureRound, median, payloadTemplate, percentile, type Load } from './receiver-driver.ts';

const DURATION_S = Number(process.env.BENCH_POSTGRES_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_POSTGRES_ROUNDS ?? 3);
const SAMPLES = Number(process.env.BENCH_POSTGRES_HOOK_SAMPLES ?? 150);
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const HEADERS = {
  'content-type': 'application/json',
  'x-gitlab-event': 'Merge Request Hook',
  'x-gitlab-token': 'bench-secret',
};

async function load(port: number, durationS: number): Promise<Load> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/hooks`,
    connections: 64,
    duration: durationS,
    method: 'POST',
    headers: HEADERS,
    body: payloadTemplate(),
    idReplacement: true,
  });
  return loadOf(result);
}

const round2 = (x: number) => Number(x.toFixed(2));

async function ackRounds(): Promise<Record<string, number>> {
  const file: Load[] = [];
  const database: Load[] = [];
  // Interleaved rounds, so drift on a shared machine hits both alike.
  for (let i = 0; i < ROUNDS; i++) {
    file.push((await measureRound('hookbot', load, DURATION_S)).load);
    database.push((await measureRound('hookbot-pg', load, DURATION_S)).load);
  }
  const rps = median(database.map((r) => r.rps));
  const fileRps = median(file.map((r) => r.rps));
  return {
    rps: Math.round(rps),
    file_rps: Math.round(fileRps),
    ratio: round2(rps / fileRps),
    p50_ms: median(database.map((r) => r.p50)),
    p99_ms: median(database.map((r) => r.p99)),
    file_p50_ms: median(file.map((r) => r.p50)),
    file_p99_ms: median(file.map((r) => r.p99)),
  };
}

async function twoReplicas(): Promise<Record<string, number>> {
  const schema = `bench_replicas_${process.pid}`;
  const world = await createWorld();
  const dirs = [0, 1].map((i) => mkdtempSync(path.join(tmpdir(), `hookbot-bench-replica-${i}-`)));
  const replicas = await Promise.all(
    dirs.map((dir) =>
      startBot(world, dir, {
        env: { HOOKBOT_DATABASE_URL: DATABASE_URL },
        stateLines: [`database_schema: ${schema}`],
      }),
    ),
  );
  try {
    for (let i = 0; i < 30; i++) await viaBot(world, replicas[i % 2]!.hookUrl); // warm-up
    const actions: number[] = [];
    const acks: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const sample = await viaBot(world, replicas[i % 2]!.hookUrl);
      actions.push(sample.action);
      acks.push(sample.ack);
    }
    const sorted = [...actions].sort((a, b) => a - b);
    return {
      replicas_hook_to_action_p50_ms: round2(percentile(sorted, 0.5)),
      replicas_hook_to_action_p99_ms: round2(percentile(sorted, 0.99)),
      replicas_ack_p50_ms: round2(
        percentile(
          [...acks].sort((a, b) => a - b),
          0.5,
        ),
      ),
      replicas_samples: SAMPLES,
    };
  } finally {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await world.sandbox.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const acks = await onLoadCore(ackRounds);
  const replicas = await twoReplicas();
  return { ...acks, ...replicas, rounds: ROUNDS, seconds_per_round: DURATION_S };
}
