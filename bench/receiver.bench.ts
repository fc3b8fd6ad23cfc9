/**
 * Ack throughput and latency of POST /hooks with a ~4 KB merge request payload at 64 connections,
 * side by side with a bare node:http server doing the same token check, JSON parse and durable
 * persist (issue 4). Each server runs in its own process on one core, the load generator (wrk, or
 * autocannon without it: loads.ts) on the other (pinning.ts). Every request body is distinct, so every
 * delivery is persisted, none is a duplicate. The least any durable intake does (`durable-floor`)
 * runs in the same rounds: the rate and p99 that durability alone leaves on this machine. A server that does nothing but read and answer (`noop`) runs in the
 * same rounds: the ceiling the load generator and node:http reach on this machine, so the p99 target
 * can be read against it; and one that answers without reading (`floor`): node:http's own CPU per
 * request, beside hookbot's.
 *
 * At 64 connections that never wait, the load is closed-loop: each connection sends its next request
 * as soon as its answer arrives, so every server runs saturated and its mean latency is 64 divided by
 * its rate (Little's law); p99 there measures the rate more than the route. A second set of rounds
 * sends a fixed, evenly spaced rate (`RATE` per second over at most 64 connections: paced-load.ts)
 * that all three servers keep up with: the ack latency of a receiver that is busy but not overrun,
 * which is where a real server's deliveries arrive.
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { distinctBodiesLoad, LOAD_GENERATOR } from './loads.ts';
import { pacedLoad } from './paced-load.ts';
import { onLoadCore, canPin } from './pinning.ts';
import {
  measureRound,
  median,
  payloadFor,
  payloadTemplate,
  percentile,
  type Load,
} from './receiver-driver.ts';

const DURATION_S = Number(process.env.BENCH_RECEIVER_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_RECEIVER_ROUNDS ?? 3);
// A busy server's peak (real ones send a hook per event, tens per second), a fifth to a quarter of
// what the persisting servers reach saturated here (4,000-6,500 requests/s).
const RATE = Number(process.env.BENCH_RECEIVER_RATE ?? 1000);

const HEADERS = {
  'content-type': 'application/json',
  'x-gitlab-event': 'Merge Request Hook',
  'x-gitlab-token': 'bench-secret',
};

/** The load at `rate` requests per second, evenly spaced; undefined: as fast as answers come. */
const loadAt = (rate?: number) => (port: number, durationS: number) => {
  if (rate === undefined) return load(port, durationS);
  const template = payloadTemplate();
  return pacedLoad({
    port,
    path: '/hooks',
    rate,
    seconds: durationS,
    connections: 64,
    headers: HEADERS,
    // Distinct from the warm-up's bodies too, so none is a duplicate.
    body: (n) => payloadFor(template, durationS * 1_000_000 + n),
  });
};

function load(port: number, durationS: number): Promise<Load> {
  return distinctBodiesLoad(port, durationS, HEADERS);
}

type Mode = 'hookbot' | 'bare' | 'durable-floor' | 'noop' | 'floor';

async function measure(mode: Mode, rate?: number) {
  const { load: result, output } = await measureRound(mode, loadAt(rate), DURATION_S);
  const commits = /COMMIT_MS (\S+) (\S+)/.exec(output);
  const cpuUs = Number(/CPU_US (\d+)/.exec(output)?.[1] ?? NaN);
  return {
    ...result,
    commitP50: Number(commits?.[1] ?? NaN),
    commitP99: Number(commits?.[2] ?? NaN),
    cpuUsPerRequest: cpuUs / result.answered,
  };
}

export function run(): Promise<Record<string, number | string>> {
  return onLoadCore(measureAll);
}

async function measureAll(): Promise<Record<string, number | string>> {
  type Round = Awaited<ReturnType<typeof measure>>;
  const ours: Round[] = [];
  const bare: Round[] = [];
  const noop: Round[] = [];
  const floor: Round[] = [];
  const durable: Round[] = [];
  const atRate: Record<'hookbot' | 'bare' | 'noop', Round[]> = { hookbot: [], bare: [], noop: [] };
  // Interleaved rounds, so drift on a shared machine hits all alike.
  for (let i = 0; i < ROUNDS; i++) {
    bare.push(await measure('bare'));
    ours.push(await measure('hookbot'));
    durable.push(await measure('durable-floor'));
    noop.push(await measure('noop'));
    floor.push(await measure('floor'));
    for (const mode of ['bare', 'hookbot', 'noop'] as const) atRate[mode].push(await measure(mode, RATE));
  }
  const p = (rounds: Round[], q: 'p50' | 'p99') => median(rounds.map((r) => r[q]));
  const cpu = (rounds: Round[]) => Math.round(median(rounds.map((r) => r.cpuUsPerRequest)));
  const disk = diskFloor();
  const rps = median(ours.map((r) => r.rps));
  const baselineRps = median(bare.map((r) => r.rps));
  return {
    rps: Math.round(rps),
    baseline_rps: Math.round(baselineRps),
    ratio: Number((rps / baselineRps).toFixed(2)),
    p50_ms: median(ours.map((r) => r.p50)),
    p99_ms: median(ours.map((r) => r.p99)),
    baseline_p99_ms: median(bare.map((r) => r.p99)),
    // The least any durable intake does (durable-floor.ts) under the same load: the p99 and the rate
    // that making each delivery durable before its 202 leaves on this machine, whatever else is done.
    durable_floor_rps: Math.round(median(durable.map((r) => r.rps))),
    durable_floor_p99_ms: median(durable.map((r) => r.p99)),
    durable_floor_cpu_us_per_request: cpu(durable),
    // The ceiling: a server that only reads the body and answers, under the same load. Its p99 is
    // the latency floor of 64 connections on this machine (load generator and server share 2 cores).
    noop_rps: Math.round(median(noop.map((r) => r.rps))),
    noop_p99_ms: median(noop.map((r) => r.p99)),
    ratio_to_noop: Number((rps / median(noop.map((r) => r.rps))).toFixed(2)),
    // Server CPU per answered request (user + system, the server process alone), hookbot's beside
    // node:http answering without reading (the floor) and the others'.
    cpu_us_per_request: cpu(ours),
    baseline_cpu_us_per_request: cpu(bare),
    noop_cpu_us_per_request: cpu(noop),
    floor_cpu_us_per_request: cpu(floor),
    floor_rps: Math.round(median(floor.map((r) => r.rps))),
    // The state store's group commits during hookbot's rounds, from the write until the event loop
    // sees the fdatasync done: every ack waits for one (and, under load, for the one before it).
    commit_p50_ms: median(ours.map((r) => r.commitP50)),
    commit_p99_ms: median(ours.map((r) => r.commitP99)),
    // At a fixed rate none of them is overrun: ack latency of a busy, not saturated, receiver.
    rate_per_s: RATE,
    rate_reached_per_s: Math.round(median(atRate.hookbot.map((r) => r.rps))),
    p50_ms_at_rate: p(atRate.hookbot, 'p50'),
    p99_ms_at_rate: p(atRate.hookbot, 'p99'),
    baseline_p99_ms_at_rate: p(atRate.bare, 'p99'),
    noop_p99_ms_at_rate: p(atRate.noop, 'p99'),
    commit_p99_ms_at_rate: median(atRate.hookbot.map((r) => r.commitP99)),
    // The disk's own floor: a 4 KB write and fdatasync, one after another, nothing else running.
    // Every durable ack waits for one, so no persisting server's p99 goes below this one's.
    fdatasync_p50_ms: disk.p50,
    fdatasync_p99_ms: disk.p99,
    non_2xx: [...ours, ...bare, ...durable, ...Object.values(atRate).flat()].reduce(
      (sum, r) => sum + r.non2xx,
      0,
    ),
    load_generator: LOAD_GENERATOR,
    connections: 64,
    payload_bytes: payloadTemplate().length,
    seconds_per_round: DURATION_S,
    rounds: ROUNDS,
    pinned: canPin ? 'yes' : 'no',
  };
}

/** 2,000 appends of 4 KB, each followed by fdatasync, timed one by one. */
function diskFloor(): { p50: number; p99: number } {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-bench-disk-'));
  const fd = openSync(path.join(dir, 'journal'), 'a');
  const line = Buffer.alloc(4096, 'x');
  const times: number[] = [];
  try {
    for (let i = 0; i < 2000; i++) {
      const started = performance.now();
      writeSync(fd, line);
      fdatasyncSync(fd);
      times.push(performance.now() - started);
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => Number(percentile(times, q).toFixed(2));
  return { p50: at(0.5), p99: at(0.99) };
}
