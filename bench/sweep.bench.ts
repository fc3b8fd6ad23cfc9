/**
 * The scheduler's API economy, in the sandbox over HTTP:
 * - a rule sweep over 10,000 open merge requests in 50 projects (200 each), whose rule reads no
 *   statuses: API calls made against the minimum, the listing pages (sum over projects of
 *   ceil(n / 100) = 100), and its time against the time of those pages alone;
 * - the merge watch on 1,000 watched merge requests among those 10,000: calls per sweep against
 *   the watched count times the 2 calls per watched merge request documented in
 *   src/scheduler/sweeps/merge-watch.ts (its state, then its pinned head's statuses).
 *
 * The sandbox's database is seeded directly with records (projects, merge requests, statuses) for
 * speed; each project has a real repository with a `feature` branch, the merge requests' source.
 * The sandbox reads git by spawning processes on every request, and nothing changes during the
 * measurements, so its git reads are memoized here: what is measured is the bot's calls and time,
 * not the simulator's process spawning. Each sweep repetition uses a fresh sweep set (a cold
 * project cache, as an hourly sweep has).
 * Run alone with `node --import tsx bench/sweep.bench.ts`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createClient } from '../src/api/client.ts';
import { createExecutor } from '../src/rules/executor/executor.ts';
import { loadRules } from '../src/rules/grammar/load.ts';
import { createSweepSet, type SweepSettings } from '../src/scheduler/sweep-set.ts';
import type { MergeWatchReport } from '../src/scheduler/sweeps/merge-watch.ts';
import type { RuleSweepReport } from '../src/scheduler/sweeps/rule-sweep.ts';
import type { GitCommit } from '../src/sandbox/context.ts';
import type { MergeRequestRec } from '../src/sandbox/db.ts';
import { addGroup, addProject } from '../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';
import { createMemoryStore } from '../src/state/memory-store.ts';
import type { StateStore } from '../src/state/store.ts';

const PROJECTS = 50;
const MRS_PER_PROJECT = 200;
const WATCHED_PER_PROJECT = 20;
const CALLS_PER_WATCHED = 2;
const REPETITIONS = 3;
const TOKEN = 'bench-sweep-root-token';

const RULES = `
rules:
  - name: label old merge requests
    schedule: daily
    for: merge_requests
    if: [ { updated: { older_than: 30d } }, { labels: { none: [stale] } } ]
    do: [ { label: { add: [stale] } } ]
`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Memoizes the sandbox's git reads (see the header). */
function memoizeGit(sb: Sandbox): void {
  const git = sb.ctx.git;
  const branch = git.branch.bind(git);
  const commit = git.commit.bind(git);
  const branches = new Map<string, Promise<GitCommit | undefined>>();
  const commits = new Map<string, Promise<GitCommit | undefined>>();
  const memo = (
    map: Map<string, Promise<GitCommit | undefined>>,
    key: string,
    read: () => Promise<GitCommit | undefined>,
  ) => {
    let found = map.get(key);
    if (!found) map.set(key, (found = read()));
    return found;
  };
  git.branch = (projectId, name) => memo(branches, `${projectId}:${name}`, () => branch(projectId, name));
  git.commit = (projectId, ref) => memo(commits, `${projectId}:${ref}`, () => commit(projectId, ref));
}

interface Seeded {
  paths: string[];
  /** Watch entries: one per watched merge request. */
  watched: { itemKey: string; project: string; mrId: number; headSha: string }[];
}

async function seed(sb: Sandbox): Promise<Seeded> {
  const db = sb.ctx.db;
  const group = addGroup(db, { name: 'bench', owner_id: 1 });
  const paths: string[] = [];
  const watched: Seeded['watched'] = [];
  const now = new Date().toISOString();
  for (let p = 0; p < PROJECTS; p++) {
    const project = await addProject(sb.ctx, {
      name: `project-${p}`,
      namespace_id: group.id,
      creator_id: 1,
      initialFiles: { 'README.md': `# project ${p}\n` },
    });
    const head = await sb.ctx.git.createBranch(project.id, 'feature', 'master');
    if (!head) throw new Error('no feature branch');
    const path = `${group.path}/${project.path}`;
    paths.push(path);
    for (let i = 1; i <= MRS_PER_PROJECT; i++) {
      const mr: MergeRequestRec = {
        id: db.nextId('mergeRequests'),
        iid: i,
        project_id: project.id,
        title: `Change ${i}`,
        description: null,
        state: 'opened',
        source_branch: 'feature',
        target_branch: 'master',
        source_project_id: project.id,
        target_project_id: project.id,
        author_id: 1,
        assignee_id: null,
        milestone_id: null,
        labels: [],
        upvotes: 0,
        downvotes: 0,
        merge_status: 'can_be_merged',
        merge_when_build_succeeds: false,
        merge_user_id: null,
        merge_params: {},
        last_head_sha: head.id,
        merge_commit_sha: null,
        deleted: false,
        created_at: now,
        updated_at: now,
      };
      db.data.mergeRequests.push(mr);
      if (i <= WATCHED_PER_PROJECT)
        watched.push({
          itemKey: `merge_request:${project.id}:${mr.id}`,
          project: path,
          mrId: mr.id,
          headSha: head.id,
        });
    }
    // Their build is running: the watch waits, reading statuses each sweep.
    db.data.statuses.push({
      id: db.nextId('statuses'),
      project_id: project.id,
      sha: head.id,
      ref: 'feature',
      name: 'ci/build',
      status: 'running',
      target_url: null,
      description: null,
      allow_failure: false,
      author_id: 1,
      created_at: now,
      started_at: now,
      finished_at: null,
    });
  }
  return { paths, watched };
}

export async function run(): Promise<Record<string, number | string>> {
  const sb = await startSandbox({ adminToken: TOKEN, hookTimeoutMs: 1_000 });
  const rulesDir = await mkdtemp(join(tmpdir(), 'hookbot-bench-sweep-'));
  try {
    const { paths, watched } = await seed(sb);
    memoizeGit(sb);
    await writeFile(join(rulesDir, 'default.yml'), RULES);
    const rules = await loadRules(rulesDir);
    if (rules.problems.length > 0) throw new Error(JSON.stringify(rules.problems));
    const settings: SweepSettings = {
      projects: paths,
      budget: 30,
      breaker: { maxItems: 50, maxShare: 0.5 },
      reconcileLookbackMs: 15 * 60_000,
      hooks: { url: undefined, manage: false, token: undefined },
    };
    const client = createClient({ baseUrl: sb.url, token: TOKEN });

    const freshSet = async (store?: StateStore) => {
      const state = store ?? createMemoryStore();
      await state.open();
      const executor = createExecutor({ client, store: state });
      return createSweepSet(
        { client, store: state, rules: { forProject: (p) => rules.byProject(p) }, executor },
        settings,
      );
    };
    const measure = async (work: () => Promise<unknown>) => {
      const calls = client.http.stats.calls;
      const started = performance.now();
      const result = await work();
      return { ms: performance.now() - started, calls: client.http.stats.calls - calls, result };
    };

    // Baseline: reading the listing pages and nothing else.
    const listAll = async () => {
      let items = 0;
      for (const path of paths)
        for await (const _mr of client.mergeRequests.list(path, { state: 'opened' })) items++;
      return items;
    };
    const minCalls = paths.length * Math.ceil(MRS_PER_PROJECT / 100);

    const sweepOnce = async () => (await freshSet()).run('rules', { force: true });
    await measure(listAll);
    await measure(sweepOnce);
    const listTimes: number[] = [];
    const sweepTimes: number[] = [];
    const sweepCalls: number[] = [];
    let lookedAt = 0;
    for (let r = 0; r < REPETITIONS; r++) {
      listTimes.push((await measure(listAll)).ms);
      const sweep = await measure(sweepOnce);
      sweepTimes.push(sweep.ms);
      sweepCalls.push(sweep.calls);
      const report = sweep.result as RuleSweepReport;
      lookedAt = report.projects.reduce((sum, project) => sum + (project.rules[0]?.lookedAt ?? 0), 0);
    }

    // The merge watch.
    const store = createMemoryStore();
    await store.open();
    for (const entry of watched)
      await store.watch({ ...entry, rule: 'automerge', required: ['ci/build'], since: Date.now() });
    const watchSet = await freshSet(store);
    const watchOnce = () => watchSet.run('merge_watch');
    await measure(watchOnce);
    const watchTimes: number[] = [];
    const watchCalls: number[] = [];
    let waiting = 0;
    for (let r = 0; r < REPETITIONS; r++) {
      const watch = await measure(watchOnce);
      watchTimes.push(watch.ms);
      watchCalls.push(watch.calls);
      waiting = (watch.result as MergeWatchReport).counts.waiting;
    }

    const calls = median(sweepCalls);
    const watchMin = watched.length * CALLS_PER_WATCHED;
    return {
      open_mrs: paths.length * MRS_PER_PROJECT,
      evaluated: lookedAt,
      calls,
      min_calls: minCalls,
      ratio: Number((calls / minCalls).toFixed(2)),
      project_reads: calls - minCalls,
      sweep_ms: Math.round(median(sweepTimes)),
      pages_only_ms: Math.round(median(listTimes)),
      time_ratio: Number((median(sweepTimes) / median(listTimes)).toFixed(2)),
      watched: watched.length,
      watch_waiting: waiting,
      watch_calls: median(watchCalls),
      watch_min_calls: watchMin,
      watch_ratio: Number((median(watchCalls) / watchMin).toFixed(2)),
      watch_ms: Math.round(median(watchTimes)),
    };
  } finally {
    await rm(rulesDir, { recursive: true, force: true });
    await sb.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(await run());
}
