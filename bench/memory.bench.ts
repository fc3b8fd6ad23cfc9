/**
 * Memory and state size after 100,000 deliveries, against after 10,000 (issue 8: RSS under 150 MB,
 * state file bounded by its pruning settings, not by the number of deliveries).
 *
 * What is measured: `hookbot serve` as a process, as the Docker image runs it (the compiled build
 * with the image's V8 heap limits; `BENCH_MEMORY_ENTRY=source` runs it from the sources through
 * tsx), fed over HTTP with autocannon (64 connections), every delivery a distinct `Issue Hook`
 * body, all accepted (202, persisted) and processed (the inbox drained) before each figure is read. The rules match nothing: 19 deliveries in 20 are for a project
 * with no rules (parsed, resolved to their item, dropped without an API call), 1 in 20 for a project
 * whose one rule reads the issue from the sandbox and does not match (a decision is recorded), so the
 * inbox, de-dup keys, journal, compaction and the decisions all take part; the decisions kept reach
 * their bound (500 items) before the first 10,000 deliveries are in.
 *
 * Each setting runs twice over the same state: deliveries 1-10,000 in one process, which is then
 * stopped (SIGTERM folds the journal into the document), and deliveries 10,001-100,000 in a second
 * one, stopped the same way. RSS is the process's own (`process_resident_memory_bytes` from /metrics)
 * once its inbox is empty; the state size is every file of the state folder after the stop.
 *
 * The de-dup window is set short (1 s): the load outlives it before the first 10,000 are in, so from
 * there the size must stay flat, whatever the count. Both stops come after the window has passed
 * since the last delivery (windowPassed). `ratio` is the 100k/10k size ratio (1 is flat).
 * With the default window (24 h, at most 100,000 keys) 100,000 deliveries in a minute all stay inside
 * it and the keys grow to their bound; `BENCH_MEMORY_DEFAULT_WINDOW=1` measures that setting too
 * (`default_window_*`), which doubles the time (about 2 minutes here), so it is off in `npm run bench`.
 */
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { startServeProcess, type ServeProcess } from './serve-process.ts';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { addGroup, addIssueRecord, addProject, addUser } from '../src/sandbox/factories.ts';
import type { IssueRec } from '../src/sandbox/db.ts';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';

const TOTAL = Number(process.env.BENCH_MEMORY_DELIVERIES ?? 100_000);
/** One delivery in this many is for the project with a rule. */
const RULED_EVERY = 20;
const FIRST = TOTAL / 10;
const SECRET = 'bench-memory-secret';
const CHUNK = 5_000;
const SHORT_WINDOW_MS = 1_000;
const TOKEN = 'bench-memory-token';

/**
 * How the bot runs: as the Docker image runs it (the compiled build, `node dist/cli/run.js`, with
 * the image's NODE_OPTIONS, read from the Dockerfile so the two cannot drift), or
 * `BENCH_MEMORY_ENTRY=source` from the sources through tsx, as `npm start` does.
 */
const SOURCE = process.env.BENCH_MEMORY_ENTRY === 'source';
const IMAGE_NODE_OPTIONS =
  /^ENV NODE_OPTIONS="([^"]*)"/m.exec(readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8'))?.[1] ??
  '';
const ENTRY = SOURCE
  ? ['bin/hookbot.js']
  : [...IMAGE_NODE_OPTIONS.split(' ').filter(Boolean), 'dist/cli/run.js'];

const FIXTURE = readFileSync(new URL('../test/fixtures/hooks/issue.json', import.meta.url), 'utf8');

interface World {
  sandbox: Sandbox;
  quietProject: number;
  ruledProject: number;
  ruledIssues: IssueRec[];
}

async function createWorld(): Promise<World> {
  const sandbox = await startSandbox({ seed: 'empty' });
  const { db } = sandbox.ctx;
  const bot = addUser(db, { username: 'hookbot', private_token: TOKEN });
  const group = addGroup(db, { name: 'acme', owner_id: 1, members: [{ user_id: bot.id, access_level: 40 }] });
  const quiet = await addProject(sandbox.ctx, { name: 'quiet', namespace_id: group.id, creator_id: 1 });
  const ruled = await addProject(sandbox.ctx, { name: 'web', namespace_id: group.id, creator_id: 1 });
  const ruledIssues: IssueRec[] = [];
  for (let n = 1; n <= TOTAL / RULED_EVERY; n++)
    ruledIssues.push(addIssueRecord(db, { project_id: ruled.id, title: `Issue ${n}` }));
  return { sandbox, quietProject: quiet.id, ruledProject: ruled.id, ruledIssues };
}

/** Delivery `n` (1-based): distinct bytes; every RULED_EVERY-th for the project with the rule. */
function delivery(world: World, n: number): string {
  const body = JSON.parse(FIXTURE) as { object_attributes: Record<string, unknown> };
  const ruled = n % RULED_EVERY === 0 ? world.ruledIssues[n / RULED_EVERY - 1] : undefined;
  body.object_attributes = {
    ...body.object_attributes,
    id: ruled ? ruled.id : 1_000_000 + n,
    iid: ruled ? ruled.iid : n,
    project_id: ruled ? world.ruledProject : world.quietProject,
    action: 'open',
  };
  return JSON.stringify(body);
}

async function startBot(world: World, dir: string, dedupTtlMs: number | undefined): Promise<ServeProcess> {
  const rules = path.join(dir, 'rules');
  mkdirSync(path.join(rules, 'acme'), { recursive: true });
  writeFileSync(
    path.join(rules, 'acme', 'web.yml'),
    "rules:\n  - name: never\n    on: [issue.open]\n    if: [ { title: { equals: 'no issue is called this' } } ]\n    do: [close]\n",
  );
  return startServeProcess({
    entry: ENTRY,
    dir,
    rulesDir: rules,
    apiUrl: world.sandbox.url,
    token: TOKEN,
    secret: SECRET,
    ...(dedupTtlMs === undefined ? {} : { stateLines: [`dedup_ttl_ms: ${dedupTtlMs}`] }),
  });
}

/**
 * Feeds `count` deliveries after delivery `from`, in chunks, letting the inbox drain between them:
 * the inbox is bounded (10,000 pending; past it the bot answers 503), and accepting is faster than
 * processing here, so an unthrottled feed would measure refusals, not deliveries.
 */
async function feed(world: World, base: string, from: number, count: number): Promise<number> {
  let n = from;
  let failed = 0;
  while (n < from + count) {
    const amount = Math.min(CHUNK, from + count - n);
    const result = await autocannon({
      url: `${base}/hooks`,
      connections: 64,
      amount,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gitlab-event': 'Issue Hook',
        'x-gitlab-token': SECRET,
      },
      requests: [{ setupRequest: (req) => ({ ...req, body: delivery(world, ++n) }) }],
    });
    failed += result.non2xx + result.errors;
    await pendingBelow(base, CHUNK / 5);
  }
  return failed;
}

interface Status {
  pending: number;
  dedupKeys: number;
}

async function status(base: string): Promise<Status> {
  const data = (await (await fetch(`${base}/status.json`)).json()) as {
    deliveries: { pending: number };
    stats: { dedupKeys: number };
  };
  return { pending: data.deliveries.pending, dedupKeys: data.stats.dedupKeys };
}

async function pendingBelow(base: string, limit: number): Promise<Status> {
  for (;;) {
    const now = await status(base);
    if (now.pending <= limit) return now;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The process's resident set and its V8 heap in use, in MB, from its own /metrics. */
async function memory(base: string): Promise<{ rss: number; heap: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const mb = (name: string) =>
    Math.round(Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 102.4) / 10;
  return { rss: mb('process_resident_memory_bytes'), heap: mb('nodejs_heap_size_used_bytes') };
}

const SETTLE_S = Number(process.env.BENCH_MEMORY_SETTLE_SECONDS ?? 30);

/**
 * The same figures after the bot has been idle for SETTLE_S seconds: V8 collects the old generation
 * and gives memory back once the allocation rate drops (its memory reducer), so this is what the
 * sidecar holds between bursts, where the reading right after the last delivery is near its peak.
 */
async function settle(base: string): Promise<{ rss: number; heap: number; trace: string }> {
  const trace: number[] = [];
  for (let s = 0; s < SETTLE_S; s += 5) {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    trace.push((await memory(base)).rss);
  }
  return { ...(await memory(base)), trace: trace.join('/') };
}

/** The state folder's files: the backup (a copy of the previous document) apart from the rest. */
function folderBytes(dir: string): { state: number; backup: number } {
  let state = 0;
  let backup = 0;
  for (const name of readdirSync(dir)) {
    const size = statSync(path.join(dir, name)).size;
    if (name.endsWith('.bak')) backup += size;
    else state += size;
  }
  return { state, backup };
}

/**
 * Both stops come once the de-dup window has passed since the last delivery (the second after its
 * settling, which is longer), so both sizes are the state the pruning settings leave, not one of
 * them with a window of keys still inside it: a stop folds the keys that expired (file-store.ts).
 */
async function windowPassed(dedupTtlMs: number | undefined): Promise<void> {
  if (dedupTtlMs !== undefined && dedupTtlMs < SETTLE_S * 1_000)
    await new Promise((resolve) => setTimeout(resolve, dedupTtlMs + 500));
}

async function measure(world: World, dedupTtlMs: number | undefined) {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-bench-memory-'));
  try {
    const first = await startBot(world, dir, dedupTtlMs);
    const idle = await memory(first.base);
    let failed = await feed(world, first.base, 0, FIRST);
    const keys10 = (await pendingBelow(first.base, 0)).dedupKeys;
    const at10 = await memory(first.base);
    await windowPassed(dedupTtlMs);
    await first.stop();
    const files10 = folderBytes(path.join(dir, 'state'));

    const second = await startBot(world, dir, dedupTtlMs);
    failed += await feed(world, second.base, FIRST, TOTAL - FIRST);
    const keys100 = (await pendingBelow(second.base, 0)).dedupKeys;
    const at100 = await memory(second.base);
    const settled = await settle(second.base);
    await second.stop();
    const files100 = folderBytes(path.join(dir, 'state'));
    return { idle, at10, at100, settled, files10, files100, keys10, keys100, failed };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, number | string>> {
  // The compiled build, fresh from the sources (tsc, about 15 s).
  if (!SOURCE)
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json']);
  const world = await createWorld();
  try {
    const short = await measure(world, SHORT_WINDOW_MS);
    const ratio = (a: number, b: number) => Number((a / b).toFixed(2));
    const figures: Record<string, number | string> = {
      rss_mb_idle: short.idle.rss,
      rss_mb_10k: short.at10.rss,
      rss_mb_100k: short.at100.rss,
      heap_mb_10k: short.at10.heap,
      heap_mb_100k: short.at100.heap,
      rss_mb_100k_settled: short.settled.rss,
      heap_mb_100k_settled: short.settled.heap,
      rss_mb_settling_every_5s: short.settled.trace,
      settle_seconds: SETTLE_S,
      state_bytes_10k: short.files10.state,
      state_bytes_100k: short.files100.state,
      ratio: ratio(short.files100.state, short.files10.state),
      backup_bytes_100k: short.files100.backup,
      dedup_keys_10k: short.keys10,
      dedup_keys_100k: short.keys100,
      not_accepted: short.failed,
      deliveries: TOTAL,
      runtime: `node ${ENTRY.join(' ')}`,
      dedup_window_ms: SHORT_WINDOW_MS,
    };
    if (process.env.BENCH_MEMORY_DEFAULT_WINDOW === '1') {
      const standard = await measure(world, undefined);
      Object.assign(figures, {
        default_window_rss_mb_10k: standard.at10.rss,
        default_window_rss_mb_100k: standard.at100.rss,
        default_window_heap_mb_100k: standard.at100.heap,
        default_window_state_bytes_10k: standard.files10.state,
        default_window_state_bytes_100k: standard.files100.state,
        default_window_ratio: ratio(standard.files100.state, standard.files10.state),
        default_window_dedup_keys_100k: standard.keys100,
        default_window_not_accepted: standard.failed,
      });
    }
    return figures;
  } finally {
    await world.sandbox.close();
  }
}
