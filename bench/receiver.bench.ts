/**
 * Ack throughput and latency of POST /hooks with a ~4 KB merge request payload at 64 connections,
 * side by side with a bare node:http server doing the same token check, JSON parse and durable
 * persist (issue 4). Each server runs in its own process; autocannon runs here. Every request body
 * is distinct (a counter in the payload), so every delivery is persisted, none is a duplicate.
 * A third server that does nothing but answer (`noop`) runs in the same rounds: the ceiling the
 * load generator and node:http reach on this machine, so the p99 target can be read against it.
 */
import autocannon from 'autocannon';
import { loadOf, measureRound, median, payloadTemplate, type Load } from './receiver-driver.ts';

const DURATION_S = Number(process.env.BENCH_RECEIVER_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_RECEIVER_ROUNDS ?? 3);

async function load(port: number, durationS: number): Promise<Load> {
  const template = payloadTemplate();
  let n = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/hooks`,
    connections: 64,
    duration: durationS,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gitlab-event': 'Merge Request Hook',
      'x-gitlab-token': 'bench-secret',
    },
    requests: [{ setupRequest: (req) => ({ ...req, body: template.replace('"iid":1', `"iid":${++n}`) }) }],
  });
  return loadOf(result);
}

type Mode = 'hookbot' | 'bare' | 'noop';

async function measure(mode: Mode) {
  const { load: result, output } = await measureRound(mode, load, DURATION_S);
  const commits = /COMMIT_MS (\S+) (\S+)/.exec(output);
  return { ...result, commitP50: Number(commits?.[1] ?? NaN), commitP99: Number(commits?.[2] ?? NaN) };
}

export async function run(): Promise<Record<string, number | string>> {
  type Round = Awaited<ReturnType<typeof measure>>;
  const ours: Round[] = [];
  const bare: Round[] = [];
  const noop: Round[] = [];
  // Interleaved rounds, so drift on a shared machine hits all alike.
  for (let i = 0; i < ROUNDS; i++) {
    bare.push(await measure('bare'));
    ours.push(await measure('hookbot'));
    noop.push(await measure('noop'));
  }
  const rps = median(ours.map((r) => r.rps));
  const baselineRps = median(bare.map((r) => r.rps));
  return {
    rps: Math.round(rps),
    baseline_rps: Math.round(baselineRps),
    ratio: Number((rps / baselineRps).toFixed(2)),
    p50_ms: median(ours.map((r) => r.p50)),
    p99_ms: median(ours.map((r) => r.p99)),
    baseline_p99_ms: median(bare.map((r) => r.p99)),
    // The ceiling: a server that only reads the body and answers, under the same load. Its p99 is
    // the latency floor of 64 connections on this machine (load generator and server share 2 cores).
    noop_rps: Math.round(median(noop.map((r) => r.rps))),
    noop_p99_ms: median(noop.map((r) => r.p99)),
    ratio_to_noop: Number((rps / median(noop.map((r) => r.rps))).toFixed(2)),
    // The state store's group commits during hookbot's rounds, from the write until the event loop
    // sees the fdatasync done: every ack waits for one (and, under load, for the one before it).
    commit_p50_ms: median(ours.map((r) => r.commitP50)),
    commit_p99_ms: median(ours.map((r) => r.commitP99)),
    non_2xx: ours.reduce((sum, r) => sum + r.non2xx, 0) + bare.reduce((sum, r) => sum + r.non2xx, 0),
    connections: 64,
    payload_bytes: payloadTemplate().length,
    seconds_per_round: DURATION_S,
    rounds: ROUNDS,
  };
}
