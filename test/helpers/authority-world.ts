/**
 * The world of the authority table's suite (test/authority/, docs/security.md "The table"): one
 * sandbox, and the bot running as `hookbot serve` composes it (`startRuntime`: receiver, pipeline,
 * item processor, executor, the sweeps, the branch updater and the merge train over git HTTP with
 * the bot user's password, its API client over HTTP with its own token, a master of the group),
 * the sandbox delivering project hooks to it over HTTP, and a simulated CI with short builds
 * (simulated-ci.ts). The scheduler's timers are off: a test runs the merge queue's sweep itself
 * (`driveQueue`), and waits for everything else with `settle` (conditions, never time).
 *
 * The people: one user per role of the table, acting with their own tokens over HTTP and their own
 * passwords over git: `master`, `developer`, `reporter`, `guest` (members of the group at 40, 30,
 * 20, 10), a `non-member`, a `fork owner` (a non-member who forks the projects), and `admin` (an
 * administrator who is a member of nothing). Besides them: `lead` (a developer, the assignee of the
 * assign rule) and the CI's user (a developer of the group; each fork owner lets it build her fork).
 *
 * Projects are public, in the group, with a protected `master` (masters push and merge) unless
 * asked otherwise; each has the bot's hook and the rules the caller gave for it
 * (`rules/<group>/<project>.yml`), `rules: []` for every other project.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser, projectPathFromName } from '../../src/sandbox/factories.ts';
import { protectBranch } from '../../src/sandbox/protected-branches.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { gitUser, type GitUser } from './git-user.ts';
import { caller, type Caller, type CallResult } from './sandbox.ts';
import { startSimulatedCi, type SimulatedCi } from './simulated-ci.ts';
import { waitFor } from './wait-for.ts';

const exec = promisify(execFile);

/** The table's columns, in its order. */
export const ROLES = [
  'admin',
  'master',
  'developer',
  'reporter',
  'guest',
  'non-member',
  'fork owner',
] as const;
export type Role = (typeof ROLES)[number];

/** Group levels of the members among the roles. */
const LEVELS: Partial<Record<Role, number>> = { master: 40, developer: 30, reporter: 20, guest: 10 };

/** Files every project starts with (the CI's check passes them). */
const FILES = { 'README.md': '# web\n', 'lib.txt': 'def foo\n' };

export interface Person {
  role: Role | 'lead' | 'ci';
  id: number;
  username: string;
  password: string;
  token: string;
  /** The API as this person (her private token). */
  as: Caller;
}

export interface Project {
  id: number;
  /** `group/name`. */
  path: string;
  /** Git over HTTP. */
  url: string;
}

export interface Push {
  ok: boolean;
  /** The pushed commit (when ok). */
  sha: string;
  /** git's words when refused. */
  error: string;
}

export interface WorldOptions {
  /** Unique per file: users, the group and the bot are named after it. */
  prefix: string;
  /** The operator's rules of each project, by project name. */
  rules: Record<string, string>;
  /** `rules.repository.enabled` (the allow-list left at its defaults). */
  repositoryRules?: boolean;
  /** Branches whose builds post `pending` and never report (the test posts their result). */
  held?: (branch: string) => boolean;
}

export interface AuthorityWorld {
  sb: Sandbox;
  runtime: Runtime;
  ci: SimulatedCi;
  /** The API as the sandbox's root. */
  root: Caller;
  people: Record<Role | 'lead' | 'ci', Person>;
  bot: { id: number; username: string };
  /** A project of the group with the rules given for `name`; made once. */
  project(name: string, options?: { protect?: boolean; namespace?: number }): Promise<Project>;
  /** A group of its own, where only the bot is a member (for moves). */
  otherGroup(name: string): number;
  /** The fork owner's fork of the project (made once), the CI a developer of it. */
  forkOf(project: Project): Promise<Project>;
  /**
   * `role` pushes a new branch off `from` (default master) with `files` to `project` (for the fork
   * owner: to her fork of it), over git with her password.
   */
  pushBranch(
    role: Role | 'lead',
    project: Project,
    branch: string,
    files: Record<string, string>,
    options?: { from?: string },
  ): Promise<Push>;
  /** `role` pushes a commit onto an existing branch of the project (her fork's for the fork owner). */
  pushOnto(
    role: Role | 'lead',
    project: Project,
    branch: string,
    files: Record<string, string>,
  ): Promise<Push>;
  /** `role` opens a merge request into the project's master (from her fork for the fork owner). */
  openMergeRequest(
    role: Role | 'lead',
    project: Project,
    branch: string,
    options?: { files?: Record<string, string>; title?: string; labels?: string[] },
  ): Promise<{ push: Push; mr?: MergeRequestView; refusal?: string }>;
  /** Waits until the sandbox's deliveries, its pushes' work, the CI and the bot's pipeline are all idle. */
  settle(): Promise<void>;
  /**
   * Runs the merge_queue sweep (which drives the trains too), with `settle` around each run, until
   * the queues stand still: what lands lands, and what may not has had every chance to.
   */
  quiesceQueue(): Promise<void>;
  /**
   * A run of the merge watch that starts after this call (runs one at a time, as the scheduler's:
   * a run in progress may have read the statuses before the news), then everything settled.
   */
  sweepWatch(): Promise<void>;
  mr(project: Project, id: number): Promise<MergeRequestView>;
  /** The bot's notes on an item. */
  botNotes(project: Project, kind: 'issues' | 'merge_requests', id: number): Promise<string[]>;
  /** What the bot's explain says of a merge request (for the message of a cell that went wrong). */
  explain(project: Project, iid: number): Promise<string>;
  /** Latest statuses of a commit of a project, by name. */
  statuses(projectId: number, sha: string): Promise<{ name: string; status: string; ref: string | null }[]>;
  /** A branch's head, undefined when it does not exist. */
  branchHead(projectId: number, branch: string): Promise<string | undefined>;
  /** Commits reachable from a ref or sha of the project. */
  history(projectId: number, ref: string): Promise<{ id: string; parent_ids: string[] }[]>;
  /** Pushes to branches of the project whose name starts with `prefix` (deletions left out), oldest first: the ref, the commit, who pushed. */
  pushedTo(projectId: number, prefix: string): Promise<{ ref: string; after: string; by: number }[]>;
  close(): Promise<void>;
}

export interface MergeRequestView {
  id: number;
  iid: number;
  /** The target project. */
  project_id: number;
  state: string;
  labels: string[];
  sha: string;
  source_branch: string;
  source_project_id: number;
  merge_when_build_succeeds: boolean;
  assignee: { username: string } | null;
}

const SECRET = 'authority-hook-secret';

export async function startAuthorityWorld(options: WorldOptions): Promise<AuthorityWorld> {
  const { prefix } = options;
  const sb = await startSandbox({ adminToken: `${prefix}-root-token`, hookTimeoutMs: 10_000 });
  const db = sb.ctx.db;
  const dir = await mkdtemp(path.join(tmpdir(), `hookbot-${prefix}-`));
  const root = caller(sb, sb.adminToken);

  const makePerson = (role: Person['role'], extra: { is_admin?: boolean } = {}): Person => {
    const username = `${prefix}-${role.replace(' ', '-')}`;
    const token = `${username}-token-0123456789`;
    const password = `${username}-password`;
    const user = addUser(db, { username, private_token: token, password, ...extra });
    return { role, id: user.id, username, password, token, as: caller(sb, token) };
  };
  const people = {} as Record<Role | 'lead' | 'ci', Person>;
  for (const role of ROLES) people[role] = makePerson(role, role === 'admin' ? { is_admin: true } : {});
  people.lead = makePerson('lead');
  people.ci = makePerson('ci');
  const botPassword = `${prefix}-bot-password`;
  const botUser = addUser(db, {
    username: `${prefix}-bot`,
    private_token: `${prefix}-bot-token-0123456789`,
    password: botPassword,
  });
  const members = [
    { user_id: botUser.id, access_level: 40 },
    { user_id: people.ci.id, access_level: 30 },
    { user_id: people.lead.id, access_level: 30 },
    ...Object.entries(LEVELS).map(([role, level]) => ({
      user_id: people[role as Role].id,
      access_level: level,
    })),
  ];
  const groupRec = addGroup(db, { name: prefix, owner_id: 1, members });
  const group = groupRec.path;

  // The operator's rules: one file per project named in the options, none for the others.
  const rulesDir = path.join(dir, 'rules');
  await mkdir(path.join(rulesDir, group), { recursive: true });
  await writeFile(path.join(rulesDir, 'default.yml'), 'rules: []\n');
  for (const [name, text] of Object.entries(options.rules))
    await writeFile(path.join(rulesDir, group, `${projectPathFromName(name)}.yml`), text);
  const loaded = loadConfig({
    env: {
      HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: rulesDir,
      HOOKBOT_IN_DOCKER: '0',
      HOOKBOT_GIT_PASSWORD: botPassword,
      ...(options.repositoryRules ? { HOOKBOT_REPOSITORY_RULES: 'true' } : {}),
    },
    cwd: dir,
  });
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  const config = loaded.config;
  config.pipeline.debounce_ms = 10;
  config.rules.watch = false;
  config.git.cache_dir = path.join(dir, 'git');
  // The sandbox notes a push on its merge requests before the push's work counts as done (settle()
  // waits for it), so nothing lags for a fork's approval to settle through: 0 rather than the
  // default 10 s of real time per fork cell (the settling itself: test/e2e/merge-queue-outsiders.test.ts).
  config.api.push_note_lag_ms = 0;
  const runtime = await startRuntime(
    config,
    {
      log: createLogger({
        level: (process.env.AUTHORITY_LOG as 'info' | undefined) ?? 'silent',
        format: 'json',
      }),
      metrics: createMetrics(),
    },
    { api: { url: sb.url, token: botUser.private_token }, webhookSecret: SECRET, scheduler: false },
  );
  const ci = startSimulatedCi(sb, {
    token: people.ci.token,
    git: { username: people.ci.username, password: people.ci.password },
    buildMs: 10,
    ...(options.held
      ? { modeOf: (branch: string) => (options.held!(branch) ? 'pending-forever' : 'normal') }
      : {}),
  });

  const ok = (res: CallResult, ...statuses: number[]) => {
    if (!statuses.includes(res.status)) throw new Error(`${res.status} ${res.text}`);
    return res.body;
  };
  const hookOn = async (projectId: number) =>
    ok(
      await root('POST', `/projects/${projectId}/hooks`, {
        body: {
          url: runtime.bot.hookUrl,
          token: SECRET,
          push_events: true,
          issues_events: true,
          merge_requests_events: true,
          note_events: true,
          build_events: true,
          pipeline_events: true,
        },
      }),
      201,
    );

  const projects = new Map<string, Promise<Project>>();
  const forks = new Map<number, Promise<Project>>();
  const view = (id: number, fullPath: string): Project => ({
    id,
    path: fullPath,
    url: `${sb.url}/${fullPath}.git`,
  });

  async function makeProject(
    name: string,
    protect: boolean,
    namespace: number | undefined,
  ): Promise<Project> {
    const rec = await addProject(sb.ctx, {
      name,
      namespace_id: namespace ?? groupRec.id,
      creator_id: 1,
      visibility_level: 20,
      initialFiles: FILES,
    });
    if (protect)
      protectBranch(db, rec.id, 'master', { developers_can_push: false, developers_can_merge: false });
    await hookOn(rec.id);
    const ns = db.data.namespaces.find((n) => n.id === rec.namespace_id)!;
    return view(rec.id, `${ns.path}/${rec.path}`);
  }

  // Clones per person and repository, one git command at a time in each.
  const clones = new Map<string, Promise<GitUser>>();
  const locks = new Map<string, Promise<unknown>>();
  const gitDir = path.join(dir, 'clones');
  function cloneOf(who: Person, url: string): Promise<GitUser> {
    const key = `${who.username} ${url}`;
    let clone = clones.get(key);
    if (!clone) {
      clone = gitUser(gitDir, { username: who.username, password: who.password }, url);
      clones.set(key, clone);
    }
    return clone;
  }
  async function inClone<T>(who: Person, url: string, work: (git: GitUser) => Promise<T>): Promise<T> {
    const key = `${who.username} ${url}`;
    const before = locks.get(key) ?? Promise.resolve();
    const run = before.catch(() => undefined).then(async () => work(await cloneOf(who, url)));
    locks.set(key, run);
    return run;
  }
  /** A clone is what the person pushes from; one who may not push may still fetch a public project. */
  async function pushFrom(
    who: Person,
    url: string,
    branch: string,
    files: Record<string, string>,
    from: string | undefined,
  ): Promise<Push> {
    return inClone(who, url, async (git) => {
      await git.git('fetch', '--quiet', 'origin');
      await git.git(
        'checkout',
        '--quiet',
        '-B',
        branch,
        from === undefined ? 'origin/master' : `origin/${from}`,
      );
      let sha = '';
      for (const [file, content] of Object.entries(files))
        sha = await git.commit(file, content, `${branch}: ${file}`);
      try {
        await git.git('push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`);
        return { ok: true, sha, error: '' };
      } catch (error) {
        return { ok: false, sha, error: (error as Error).message };
      }
    });
  }

  // One run of the merge_queue sweep at a time, as the scheduler runs it (cells run side by side).
  let sweeping: Promise<unknown> = Promise.resolve();
  const sweepQueue = () => {
    const run = sweeping.catch(() => undefined).then(() => runtime.sweeps.run('merge_queue'));
    sweeping = run;
    return run;
  };

  let watching: Promise<unknown> = Promise.resolve();
  const sweepWatch = () => {
    const run = watching.catch(() => undefined).then(() => runtime.sweeps.run('merge_watch'));
    watching = run;
    return run;
  };

  const world: AuthorityWorld = {
    sb,
    runtime,
    ci,
    root,
    people,
    bot: { id: botUser.id, username: botUser.username },
    project(name, projectOptions = {}) {
      let made = projects.get(name);
      if (!made) {
        made = makeProject(name, projectOptions.protect ?? true, projectOptions.namespace);
        projects.set(name, made);
      }
      return made;
    },
    otherGroup(name) {
      return addGroup(db, {
        name: `${prefix}-${name}`,
        owner_id: 1,
        members: [{ user_id: botUser.id, access_level: 40 }],
      }).id;
    },
    forkOf(project) {
      let fork = forks.get(project.id);
      if (!fork) {
        fork = (async () => {
          const owner = people['fork owner'];
          const made = ok(await owner.as('POST', `/projects/fork/${project.id}`), 201) as {
            id: number;
            path_with_namespace: string;
          };
          // Her fork's CI: she lets the CI's user build it (it posts the statuses there).
          ok(
            await owner.as('POST', `/projects/${made.id}/members`, {
              body: { user_id: people.ci.id, access_level: 30 },
            }),
            201,
          );
          return view(made.id, made.path_with_namespace);
        })();
        forks.set(project.id, fork);
      }
      return fork;
    },
    async pushBranch(role, project, branch, files, pushOptions = {}) {
      const who = people[role];
      const target = role === 'fork owner' ? await world.forkOf(project) : project;
      return pushFrom(who, target.url, branch, files, pushOptions.from);
    },
    async pushOnto(role, project, branch, files) {
      return world.pushBranch(role, project, branch, files, { from: branch });
    },
    async openMergeRequest(role, project, branch, mrOptions = {}) {
      const who = people[role];
      const push = await world.pushBranch(
        role,
        project,
        branch,
        mrOptions.files ?? { [`${branch}.txt`]: `${branch}\n` },
      );
      if (!push.ok) return { push };
      // The head's builds first: the merge request's first evaluation reads its statuses as they
      // stay, whatever order the status hooks and the opening reach the bot in.
      await world.settle();
      const fork = role === 'fork owner' ? await world.forkOf(project) : undefined;
      const res = await who.as('POST', `/projects/${fork?.id ?? project.id}/merge_requests`, {
        body: {
          source_branch: branch,
          target_branch: 'master',
          title: mrOptions.title ?? `Change ${branch}`,
          ...(fork ? { target_project_id: project.id } : {}),
          ...(mrOptions.labels ? { labels: mrOptions.labels.join(',') } : {}),
        },
      });
      if (res.status !== 200 && res.status !== 201) return { push, refusal: `${res.status} ${res.text}` };
      return { push, mr: res.body as MergeRequestView };
    },
    async settle() {
      for (;;) {
        const before = sb.ctx.hooks.recent().at(-1);
        await sb.ctx.hooks.idle();
        await ci.idle();
        await sb.ctx.hooks.idle();
        await runtime.bot.pipeline.idle();
        await sb.ctx.hooks.idle();
        // Nothing delivered during the round: the bot's work caused nothing more.
        if (sb.ctx.hooks.recent().at(-1) === before) return;
      }
    },
    async sweepWatch() {
      await sweepWatch();
      await world.settle();
    },
    async quiesceQueue() {
      // Each run may push (an update, a car) whose builds and hooks the next run reads: three runs
      // past the last change leave nothing moving (the scheduler's timers are off).
      let quiet = 0;
      let last = '';
      await waitFor(
        async () => {
          await world.settle();
          await sweepQueue();
          await world.settle();
          const now = JSON.stringify(runtime.store.queued());
          quiet = now === last ? quiet + 1 : 0;
          last = now;
          return quiet >= 2 ? true : undefined;
        },
        60_000,
        'the merge queue to stand still',
      );
    },
    async mr(project, id) {
      return ok(await root('GET', `/projects/${project.id}/merge_requests/${id}`), 200) as MergeRequestView;
    },
    async botNotes(project, kind, id) {
      const notes = ok(
        await root('GET', `/projects/${project.id}/${kind}/${id}/notes`, { query: { per_page: 100 } }),
        200,
      ) as { body: string; author: { username: string } }[];
      return notes.filter((note) => note.author.username === botUser.username).map((note) => note.body);
    },
    async explain(project, iid) {
      const res = await fetch(`${runtime.bot.url}/explain/${encodeURIComponent(project.path)}/mr/${iid}`);
      return res.text();
    },
    async statuses(projectId, sha) {
      return ok(
        await root('GET', `/projects/${projectId}/repository/commits/${sha}/statuses`, {
          query: { per_page: 100 },
        }),
        200,
      ) as { name: string; status: string; ref: string | null }[];
    },
    async branchHead(projectId, branch) {
      const res = await root(
        'GET',
        `/projects/${projectId}/repository/branches/${encodeURIComponent(branch)}`,
      );
      if (res.status === 404) return undefined;
      return (ok(res, 200) as { commit: { id: string } }).commit.id;
    },
    async history(projectId, ref) {
      return ok(
        await root('GET', `/projects/${projectId}/repository/commits`, {
          query: { ref_name: ref, per_page: 100 },
        }),
        200,
      ) as { id: string; parent_ids: string[] }[];
    },
    async pushedTo(projectId, branchPrefix) {
      const events = ok(
        await root('GET', `/projects/${projectId}/events`, { query: { per_page: 100 } }),
        200,
      ) as { author_id: number; data: { ref?: string; after?: string } | null }[];
      return events
        .filter(
          (event) =>
            event.data?.ref?.startsWith(`refs/heads/${branchPrefix}`) &&
            !/^0+$/.test(event.data.after ?? '0'),
        )
        .map((event) => ({ ref: event.data!.ref!, after: event.data!.after!, by: event.author_id }))
        .reverse();
    },
    async close() {
      await runtime.close();
      await ci.stop();
      await sb.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return world;
}

/** A local repository with one commit, to try pushes as someone who may not push (no clone needed). */
export async function refusedPush(
  world: AuthorityWorld,
  role: Role,
  url: string,
  ref: string,
): Promise<Push> {
  const who = world.people[role];
  const dir = await mkdtemp(path.join(tmpdir(), 'hookbot-refused-'));
  const header = `Authorization: Basic ${Buffer.from(`${who.username}:${who.password}`).toString('base64')}`;
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: who.username,
    GIT_AUTHOR_EMAIL: `${who.username}@example.com`,
    GIT_COMMITTER_NAME: who.username,
    GIT_COMMITTER_EMAIL: `${who.username}@example.com`,
  };
  const git = (...args: string[]) =>
    exec('git', ['-c', `http.extraHeader=${header}`, ...args], { cwd: dir, env });
  try {
    await git('init', '--quiet');
    await writeFile(path.join(dir, 'x.txt'), `${role}\n`);
    await git('add', 'x.txt');
    await git('commit', '--quiet', '-m', 'x');
    const sha = (await git('rev-parse', 'HEAD')).stdout.trim();
    try {
      await git('push', '--quiet', '--', url, `HEAD:${ref}`);
      return { ok: true, sha, error: '' };
    } catch (error) {
      return { ok: false, sha, error: (error as Error).message };
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
