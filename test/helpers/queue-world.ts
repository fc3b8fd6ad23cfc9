/**
 * A project in the sandbox served by the bot's parts wired as in production, for the merge queue's
 * end-to-end tests and benchmark: API client over HTTP, memory store, rules from a folder, executor
 * with its fresh check, item processor, the sweeps with a branch updater pushing over git HTTP (or
 * over SSH with the bot's key, `ssh`), and the simulated CI (simulated-ci.ts) building every new head.
 */
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { createClient, type Client } from '../../src/api/client.ts';
import { statusTrust } from '../../src/api/statuses.ts';
import { createBranchUpdater, type UpdateRequest } from '../../src/git/branch-updater.ts';
import type { TrainGit } from '../../src/git/train-git.ts';
import { createExecutor } from '../../src/rules/executor/executor.ts';
import type { Executor } from '../../src/rules/executor/executor.ts';
import { createFreshCheck } from '../../src/rules/item/fresh-check.ts';
import { createItemProcessor } from '../../src/rules/item/process-item.ts';
import { createSnapshotReader } from '../../src/rules/item/read-snapshot.ts';
import { loadRules } from '../../src/rules/grammar/load.ts';
import { formatProblem } from '../../src/rules/grammar/problem.ts';
import { createSweepSet, type SweepSet } from '../../src/scheduler/sweep-set.ts';
import type { SweepLog } from '../../src/scheduler/types.ts';
import type { MergeQueueReport } from '../../src/scheduler/sweeps/merge-queue.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import type { ProjectRec } from '../../src/sandbox/db.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import type { StateStore } from '../../src/state/store.ts';
import { startSimulatedCi, type CiMode, type SimulatedCi } from './simulated-ci.ts';
import { waitFor } from './wait-for.ts';
import { writeFile } from 'node:fs/promises';

export interface QueueWorld {
  sb: Sandbox;
  project: ProjectRec;
  /** The project's group: its members' access is the project's. */
  groupId: number;
  /** The bot's user (a master of the group). */
  bot: { id: number; username: string };
  path: string;
  /** The bot's client (`client.http.stats.calls` counts its API calls). */
  client: Client;
  admin: Client;
  store: StateStore;
  sweeps: SweepSet;
  /** The bot's executor (its item runs are the queue driver's locks). */
  executor: Executor;
  /** The bot's clock (with `clock.offset`). */
  now: () => number;
  /** Evaluates a merge request as a hook delivery would have it evaluated. */
  processItem: (mrId: number) => Promise<void>;
  /** Evaluates a merge request on a comment, as its Note Hook's delivery would have it evaluated. */
  processNote: (mrId: number, noteId: number) => Promise<void>;
  /** Added to the bot's clock (the status timeout's). */
  clock: { offset: number };
  ci: SimulatedCi;
  /** Merge requests in a queue (not those only remembered as taken out). */
  active(): number;
  /** Pushes made by the bot's branch updater. */
  pushes: () => number;
  /** The clone URLs the branch updater was given, one per update. */
  gitUrls: string[];
  /**
   * Another replica of the bot on `store` (another view of the same database): its own executor, item
   * processor, sweeps and git cache, on the same project, rules, clock and CI. The caller closes `store`.
   */
  replica(store: StateStore): QueueReplica;
  /** Runs the queue until `done` holds, letting the simulated CI build in between. */
  drive(done: () => boolean, what: string, timeoutMs?: number): Promise<MergeQueueReport[]>;
  close(): Promise<void>;
}

export interface QueueReplica {
  store: StateStore;
  sweeps: SweepSet;
  processItem: (mrId: number) => Promise<void>;
}

export interface QueueWorldOptions {
  /** Unique per world. */
  prefix: string;
  rules: string;
  /** A folder of the caller's for rules and git caches. */
  workDir: string;
  /** Per branch (and commit, asked once each): how the CI's builds behave (simulated-ci.ts). */
  modeOf?: (branch: string, sha: string) => CiMode;
  buildMs?: number;
  /** A flaky CI: the share of passing builds that fail anyway, and the draws' seed (simulated-ci.ts). */
  flakes?: { rate: number; seed: number };
  /** Git over SSH (the sandbox must serve it): the bot's key pair, registered for it here, and known_hosts. */
  ssh?: { keyFile: string; publicKey: string; knownHostsFile: string };
  /** No branch updater (no git credentials configured): the queue cannot update branches. */
  withoutGit?: boolean;
  /**
   * Wraps the merge trains' git (to fail a push once, as a crash would); `another()` makes the train
   * git of another replica: the same credentials, a git cache of its own.
   */
  trainGit?: (base: TrainGit, another: () => TrainGit) => TrainGit;
  /** Runs when the queue calls the branch updater, before the updater starts (to change the world in between). */
  beforeUpdate?: (request: UpdateRequest) => Promise<void>;
  /** `git.train_branch_prefix` (the default, `hookbot/train/`, unless a test needs another). */
  trainPrefix?: string;
  /** The sweeps' log (warnings a test reads); quiet otherwise. */
  log?: SweepLog;
  /** The bot's store (a PostgreSQL replica's, say); a memory store otherwise. The world closes it. */
  store?: StateStore;
  /**
   * `rules.status_authors`: the usernames whose statuses count (the bot's own too, as in
   * production); absent, every status counts. `ci` stands for the world's CI account.
   */
  statusAuthors?: readonly string[];
}

/** Files every project starts with: a definition the CI's check knows, and a file to conflict on. */
export const INITIAL_FILES = {
  'README.md': '# web\n',
  'lib.txt': 'def foo\n',
  'shared.txt': 'one\ntwo\nthree\n',
};

export async function makeQueueWorld(sb: Sandbox, options: QueueWorldOptions): Promise<QueueWorld> {
  const { prefix } = options;
  const db = sb.ctx.db;
  const password = `${prefix}-bot-password`;
  const bot = addUser(db, {
    username: `${prefix}-bot`,
    private_token: `${prefix}-bot-token-0123456789`,
    password,
  });
  const ciUser = addUser(db, {
    username: `${prefix}-ci`,
    private_token: `${prefix}-ci-token-0123456789`,
    password: `${prefix}-ci-password`,
  });
  const group = addGroup(db, {
    name: prefix,
    owner_id: 1,
    members: [
      { user_id: bot.id, access_level: 40 },
      { user_id: ciUser.id, access_level: 30 },
    ],
  });
  const project = await addProject(sb.ctx, {
    name: 'web',
    namespace_id: group.id,
    creator_id: 1,
    initialFiles: INITIAL_FILES,
  });
  const projectPath = `${group.path}/${project.path}`;
  const trust = options.statusAuthors
    ? statusTrust(
        options.statusAuthors.map((name) => (name === 'ci' ? ciUser.username : name)),
        () => bot.username,
      )
    : undefined;
  const client = createClient({
    baseUrl: sb.url,
    token: bot.private_token,
    retry: { limit: 0 },
    ...(trust ? { statusTrust: trust } : {}),
  });
  const admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
  const store = options.store ?? createMemoryStore();
  if (!options.store) await store.open();
  const rulesDir = await mkdtemp(path.join(options.workDir, `${prefix}-rules-`));
  await writeFile(path.join(rulesDir, 'default.yml'), options.rules);
  const rules = await loadRules(rulesDir);
  if (rules.problems.length > 0) throw new Error(rules.problems.map(formatProblem).join('\n'));
  const projectRules = { forProject: (p: string) => rules.byProject(p) };
  const clock = { offset: 0 };
  const now = () => Date.now() + clock.offset;
  const me = { id: bot.id, username: bot.username };
  let pushes = 0;
  const gitUrls: string[] = [];
  if (options.ssh) {
    const added = await fetch(`${sb.apiUrl}/user/keys`, {
      method: 'POST',
      headers: { 'private-token': bot.private_token, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'hookbot', key: options.ssh.publicKey }),
    });
    if (added.status !== 201) throw new Error(`could not register the bot's key: ${added.status}`);
  }
  let replicas = 0;
  const updaterIn = (cacheDir: string) =>
    createBranchUpdater({
      cacheDir,
      credentials: options.ssh
        ? { kind: 'ssh', keyFile: options.ssh.keyFile, knownHostsFile: options.ssh.knownHostsFile }
        : { kind: 'https', username: bot.username, password },
      identity: { name: 'hookbot', email: 'hookbot@example.com' },
      ...(options.trainPrefix ? { trainPrefix: options.trainPrefix } : {}),
    });
  const base = updaterIn(path.join(options.workDir, `${prefix}-git`));
  const another = () => updaterIn(path.join(options.workDir, `${prefix}-git-replica-${++replicas}`)).train;
  const updater = {
    idle: () => base.idle(),
    train: options.trainGit ? options.trainGit(base.train, another) : base.train,
    async update(request: UpdateRequest) {
      gitUrls.push(request.targetUrl);
      await options.beforeUpdate?.(request);
      const outcome = await base.update(request);
      if (outcome.kind === 'updated') pushes++;
      return outcome;
    },
  };
  /** One replica of the bot on `on`: reader, executor, item processor and sweeps. */
  const wire = (on: StateStore, git: Parameters<typeof createSweepSet>[0]['updater']) => {
    const reader = createSnapshotReader(client, {
      bot: me,
      now,
      watching: (itemKey) => on.watched().some((entry) => entry.itemKey === itemKey),
    });
    const executor = createExecutor({
      client,
      store: on,
      bot: me,
      now,
      freshCheck: createFreshCheck({ reader, rules: projectRules, now }),
    });
    const processor = createItemProcessor({ client, store: on, rules: projectRules, executor, reader, now });
    const sweeps = createSweepSet(
      {
        client,
        store: on,
        rules: projectRules,
        executor,
        reader,
        bot: me,
        now,
        ...(options.withoutGit || !git ? {} : { updater: git }),
        processItem: processor,
        gitSsh: options.ssh !== undefined,
        ...(options.log ? { log: options.log } : {}),
      },
      {
        projects: [projectPath],
        budget: 30,
        breaker: { maxItems: 50, maxShare: 0.5 },
        reconcileLookbackMs: 60_000,
        hooks: { url: undefined, manage: false, token: undefined },
      },
    );
    return { executor, processor, sweeps };
  };
  const { executor, processor, sweeps } = wire(store, updater);
  const ci = startSimulatedCi(sb, {
    token: ciUser.private_token,
    git: { username: ciUser.username, password: `${prefix}-ci-password` },
    ...(options.modeOf ? { modeOf: options.modeOf } : {}),
    ...(options.buildMs !== undefined ? { buildMs: options.buildMs } : {}),
    ...(options.flakes ? { flakeRate: options.flakes.rate, seed: options.flakes.seed } : {}),
  });
  const trigger = { kind: 'merge_request' as const, action: 'update' as const, byBot: false };
  return {
    sb,
    project,
    groupId: group.id,
    bot: { id: bot.id, username: bot.username },
    path: projectPath,
    client,
    admin,
    store,
    sweeps,
    executor,
    now,
    clock,
    ci,
    pushes: () => pushes,
    gitUrls,
    active: () => store.queued().filter((entry) => !entry.left).length,
    processItem: (mrId) => processor({ type: 'merge_request', projectId: project.id, id: mrId }, [trigger]),
    replica(on) {
      const other = wire(on, updaterIn(path.join(options.workDir, `${prefix}-git-replica-${++replicas}`)));
      return {
        store: on,
        sweeps: other.sweeps,
        processItem: (mrId) =>
          other.processor({ type: 'merge_request', projectId: project.id, id: mrId }, [trigger]),
      };
    },
    processNote: (mrId, noteId) =>
      processor({ type: 'merge_request', projectId: project.id, id: mrId }, [
        { kind: 'note', noteId, byBot: false },
      ]),
    async drive(done, what, timeoutMs = 60_000) {
      const reports: MergeQueueReport[] = [];
      await waitFor(
        async () => {
          await ci.idle();
          reports.push((await sweeps.run('merge_queue')) as MergeQueueReport);
          await ci.idle();
          return done() ? true : undefined;
        },
        timeoutMs,
        what,
      );
      return reports;
    },
    async close() {
      await ci.stop();
      await store.close();
    },
  };
}

/**
 * A commit of `content` to `file` on `branch` through the files API, as the admin (someone other
 * than the bot): PUT when `update` (the file is there already), POST otherwise. The answer is the
 * caller's to check.
 */
export function commitFile(
  w: Pick<QueueWorld, 'sb' | 'project'>,
  branch: string,
  file: string,
  content: string,
  options: { message: string; update?: boolean },
): Promise<Response> {
  return fetch(`${w.sb.apiUrl}/projects/${w.project.id}/repository/files`, {
    method: options.update ? 'PUT' : 'POST',
    headers: { 'private-token': w.sb.adminToken, 'content-type': 'application/json' },
    body: JSON.stringify({ file_path: file, branch_name: branch, content, commit_message: options.message }),
  });
}

/** A merge request from a new branch off master with `files` committed on it (through the files API). */
export async function openMergeRequest(
  w: QueueWorld,
  branch: string,
  files: Record<string, string>,
  labels = ['automerge'],
) {
  await w.admin.branches.create(w.project.id, { branch_name: branch, ref: 'master' });
  for (const [file, content] of Object.entries(files)) {
    const response = await commitFile(w, branch, file, content, {
      message: `${branch}: ${file}`,
      update: Object.hasOwn(INITIAL_FILES, file),
    });
    if (!response.ok) throw new Error(`could not commit ${file} on ${branch}: ${response.status}`);
  }
  return w.admin.mergeRequests.create(w.project.id, {
    source_branch: branch,
    target_branch: 'master',
    title: `Change ${branch}`,
    labels,
  });
}

/** Every commit of master's first-parent line, oldest first, with whether it passes the CI's check. */
export async function masterLine(w: QueueWorld): Promise<{ sha: string; passes: boolean }[]> {
  const commits = await w.sb.ctx.git.log(w.project.id, 'master', { limit: 1000 });
  const byId = new Map(commits.map((c) => [c.id, c]));
  const line: string[] = [];
  for (let sha: string | undefined = commits[0]?.id; sha; sha = byId.get(sha)?.parent_ids[0]) line.push(sha);
  const out = [];
  for (const sha of line.reverse()) out.push({ sha, passes: await w.ci.passes(w.project.id, sha) });
  return out;
}

/**
 * A train git whose landings are recorded in `lands` (the commit the target was pushed to), whichever
 * way the driver lands: alone (`land`) or with the next cars in one push (`landWithCars`). Only
 * landings that went are recorded. `after` runs after each landing that went (a crash right after).
 * `via`: the train git that makes the pushes (another replica's), default `base`.
 */
export function recordingLandings(
  base: TrainGit,
  lands: string[],
  options: { after?: () => void; via?: () => TrainGit } = {},
): TrainGit {
  const via = options.via ?? (() => base);
  return {
    ...base,
    identity: base.identity,
    async land(request) {
      const pushed = await via().land(request);
      if (pushed.kind === 'pushed') {
        lands.push(request.sha);
        options.after?.();
      }
      return pushed;
    },
    async landWithCars(request) {
      const went = await via().landWithCars(request);
      if (went) {
        lands.push(request.sha);
        options.after?.();
      }
      return went;
    },
  };
}
