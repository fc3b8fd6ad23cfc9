/**
 * Hook to action (issue 8): from `POST /hooks` to the API call it causes arriving at the server,
 * against the sandbox, with the debounce set to 0. The bot runs as `hookbot serve` in its own process
 * with one rule (`issue.open` -> add the label `seen`); the sandbox runs here, and the moment its data
 * changes with the label on the issue is the end of the measurement (a wrapper around `db.changed`,
 * which the route calls right after it writes). Deliveries go one at a time, each for a new issue, so
 * each sample is one delivery's whole path: ack (persisted with fsync), re-read of the issue, rule
 * evaluation, outbox entry (fsync), re-check, PUT.
 *
 * Baseline, same run, same sandbox: the least any bot must do for that effect, done directly from
 * this process (GET the issue, PUT the labels). `ratio` is hookbot's p50 over the baseline's p50: the
 * factor the bot's durability and checks cost on the way (lower is better).
 */
import { startServeProcess, type ServeProcess } from './serve-process.ts';
import { readFileSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IssueRec } from '../src/sandbox/db.ts';
import { addGroup, addIssueRecord, addProject, addUser } from '../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';

const SAMPLES = Number(process.env.BENCH_HOOK_SAMPLES ?? 150);
const WARMUP = 30;
const ROUNDS = Number(process.env.BENCH_HOOK_ROUNDS ?? 3);
const SECRET = 'bench-hook-secret';
const TOKEN = 'bench-bot-token';

const FIXTURE = JSON.parse(
  readFileSync(new URL('../test/fixtures/hooks/issue.json', import.meta.url), 'utf8'),
) as Record<string, unknown> & { object_attributes: Record<string, unknown> };

function issueHook(issue: IssueRec): string {
  return JSON.stringify({
    ...FIXTURE,
    object_attributes: {
      ...FIXTURE.object_attributes,
      id: issue.id,
      iid: issue.iid,
      project_id: issue.project_id,
      action: 'open',
    },
  });
}

export interface World {
  sandbox: Sandbox;
  projectId: number;
  newIssue(): IssueRec;
  /** Resolves (with the time) when the issue carries the label. */
  labelled(issue: IssueRec): Promise<number>;
}

export async function createWorld(): Promise<World> {
  const sandbox = await startSandbox({ seed: 'empty' });
  const { db } = sandbox.ctx;
  const bot = addUser(db, { username: 'hookbot', private_token: TOKEN });
  const group = addGroup(db, { name: 'acme', owner_id: 1, members: [{ user_id: bot.id, access_level: 40 }] });
  const project = await addProject(sandbox.ctx, { name: 'web', namespace_id: group.id, creator_id: 1 });
  const waiting = new Map<IssueRec, (at: number) => void>();
  const changed = db.changed.bind(db);
  db.changed = () => {
    const at = performance.now();
    for (const [issue, resolve] of waiting)
      if (issue.labels.includes('seen')) {
        waiting.delete(issue);
        resolve(at);
      }
    changed();
  };
  return {
    sandbox,
    projectId: project.id,
    newIssue: () =>
      addIssueRecord(db, { project_id: project.id, title: `Issue ${db.data.issues.length + 1}` }),
    labelled: (issue) => new Promise((resolve) => waiting.set(issue, resolve)),
  };
}

export async function startBot(
  world: World,
  dir: string,
  extra: Pick<Parameters<typeof startServeProcess>[0], 'env' | 'stateLines'> = {},
): Promise<ServeProcess> {
  mkdirSync(path.join(dir, 'rules'), { recursive: true });
  writeFileSync(
    path.join(dir, 'rules', 'default.yml'),
    'rules:\n  - name: mark\n    on: [issue.open]\n    do: [ { label: { add: [seen] } } ]\n',
  );
  return startServeProcess({
    entry: ['bin/hookbot.js'],
    dir,
    rulesDir: path.join(dir, 'rules'),
    apiUrl: world.sandbox.url,
    token: TOKEN,
    secret: SECRET,
    ...extra,
  });
}

/** One delivery's path, in ms: to the ack, and to the label write at the server. */
export async function viaBot(world: World, hookUrl: string): Promise<{ ack: number; action: number }> {
  const issue = world.newIssue();
  const done = world.labelled(issue);
  const t0 = performance.now();
  const res = await fetch(hookUrl, {
    method: 'POST',
    body: issueHook(issue),
    headers: { 'content-type': 'application/json', 'x-gitlab-event': 'Issue Hook', 'x-gitlab-token': SECRET },
  });
  const ack = performance.now() - t0;
  await res.arrayBuffer();
  if (res.status !== 202) throw new Error(`delivery answered ${res.status}`);
  return { ack, action: (await done) - t0 };
}

/** The bare minimum for the same effect: read the issue, write its labels. */
async function direct(world: World): Promise<number> {
  const issue = world.newIssue();
  const done = world.labelled(issue);
  const url = `${world.sandbox.apiUrl}/projects/${world.projectId}/issues/${issue.id}`;
  const headers = { 'private-token': TOKEN, 'content-type': 'application/json' };
  const t0 = performance.now();
  const current = (await (await fetch(url, { headers })).json()) as { labels: string[] };
  const put = await fetch(url, {
    method: 'PUT',
    headers,
    body: JSON.stringify({ labels: [...current.labels, 'seen'].join(',') }),
  });
  await put.arrayBuffer();
  return (await done) - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const round2 = (x: number) => Number(x.toFixed(2));

export async function run(): Promise<Record<string, number | string>> {
  const world = await createWorld();
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-bench-hook-to-action-'));
  const bot = await startBot(world, dir);
  try {
    for (let i = 0; i < WARMUP; i++) {
      await viaBot(world, bot.hookUrl);
      await direct(world);
    }
    const rounds: { p50: number; p99: number; ack50: number; direct50: number; direct99: number }[] = [];
    // Interleaved rounds: drift on a shared machine hits both alike.
    for (let r = 0; r < ROUNDS; r++) {
      const base: number[] = [];
      for (let i = 0; i < SAMPLES; i++) base.push(await direct(world));
      const acks: number[] = [];
      const actions: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const sample = await viaBot(world, bot.hookUrl);
        acks.push(sample.ack);
        actions.push(sample.action);
      }
      rounds.push({
        p50: median(actions),
        p99: percentile(actions, 0.99),
        ack50: median(acks),
        direct50: median(base),
        direct99: percentile(base, 0.99),
      });
    }
    const p50 = median(rounds.map((r) => r.p50));
    const direct50 = median(rounds.map((r) => r.direct50));
    return {
      p50_ms: round2(p50),
      p99_ms: round2(median(rounds.map((r) => r.p99))),
      ack_p50_ms: round2(median(rounds.map((r) => r.ack50))),
      direct_p50_ms: round2(direct50),
      direct_p99_ms: round2(median(rounds.map((r) => r.direct99))),
      ratio: round2(p50 / direct50),
      debounce_ms: 0,
      samples_per_round: SAMPLES,
      rounds: ROUNDS,
    };
  } finally {
    await bot.stop();
    await world.sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
