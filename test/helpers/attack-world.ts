/**
 * The world of the red team's second pass (test/adversarial/authority-attacks-second*.test.ts): the
 * bot's parts wired as in production over one project of the sandbox (queue-world.ts: its API client
 * over HTTP, executor with its fresh check, item processor, the sweeps, git over HTTP, a simulated CI
 * posting as its own account), with `rules.status_authors` naming the CI's account, and the people of
 * the first pass (authority-attacks.test.ts, authority-attacks-developer.test.ts) acting with their
 * own accounts only: a master, a developer (mallory), a reporter, a signed-in stranger, and the fork
 * owner (a non-member who forked the public project; the CI builds her fork, posting there).
 *
 * No hook reaches the bot by itself: a test says when the bot hears what (`w.processItem`,
 * `w.processNote`, the sweeps), which is how the tests place the bot's runs between the attacker's
 * acts (a delivery's latency, a debounce, a lost or a forged delivery).
 */
import { createClient, type Client } from '../../src/api/client.ts';
import { addUser } from '../../src/sandbox/factories.ts';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import type { TrainGit } from '../../src/git/train-git.ts';
import type { SweepLog } from '../../src/scheduler/types.ts';
import { makeQueueWorld, type QueueWorld } from './queue-world.ts';
import { waitFor } from './wait-for.ts';

export interface AttackPerson {
  id: number;
  username: string;
  token: string;
  client: Client;
}

export interface AttackWorld {
  w: QueueWorld;
  sb: Sandbox;
  master: AttackPerson;
  /** A developer of the project's group. */
  mallory: AttackPerson;
  reporter: AttackPerson;
  /** A signed-in user with no membership (the project is public). */
  stranger: AttackPerson;
  /** The fork owner: no membership; her fork exists when the world was made with `fork: true`. */
  outsider: AttackPerson;
  /** The CI's account (trusted by `rules.status_authors`). */
  ci: Client;
  /** Her fork's id (0 without `fork: true`). */
  forkId: number;
  /** Branches whose builds post `pending` and never finish (`name*` for a prefix, `*` for all). */
  held: Set<string>;
  /** A commit by `who` on `branch` of `project` (created off master when new): its sha, the server's work done. */
  commit(who: AttackPerson, branch: string, file: string, content: string, project?: number): Promise<string>;
  /** `who` opens a merge request from a new branch of the project with one file. */
  open(
    who: AttackPerson,
    branch: string,
    content: string,
    options?: { target?: string; labels?: string[]; title?: string },
  ): Promise<{ id: number; iid: number; head: string }>;
  /** The fork owner opens a merge request from a new branch of her fork. */
  fromFork(
    branch: string,
    content: string,
    target?: string,
  ): Promise<{ id: number; iid: number; head: string }>;
  comment(who: AttackPerson, mrId: number, body: string): Promise<number>;
  /** `who` deletes a branch through the API (a push removing it, as the server tells its listeners). */
  deleteBranch(who: AttackPerson, project: number, branch: string): Promise<void>;
  /** `who` creates a branch at `ref` through the API (a push creating it). */
  createBranch(who: AttackPerson, project: number, branch: string, ref: string): Promise<void>;
  /** Whether the branch's history in the target project holds the commit. */
  on(branch: string, sha: string): Promise<boolean>;
  mr(mrId: number): Promise<{
    state: string;
    merge_when_build_succeeds: boolean;
    target_branch: string;
    sha?: string | null;
    title: string;
  }>;
  /** Waits for the CI's `ci/test` on a commit of `project` (the target's by default) to be `state`. */
  ciStatus(sha: string, state: string, project?: number): Promise<void>;
  /** The train's branches of the target project and their heads. */
  trainBranches(): Promise<Map<string, string>>;
  /** The bot's latest explain text for a merge request. */
  explain(mrId: number): string;
}

export async function makeAttackWorld(
  sb: Sandbox,
  options: {
    prefix: string;
    rules: string;
    workDir: string;
    fork?: boolean;
    log?: SweepLog;
    /** Wraps the merge trains' git (to act between a car's build and its push). */
    trainGit?: (base: TrainGit) => TrainGit;
  },
): Promise<AttackWorld> {
  const { prefix } = options;
  const held = new Set<string>();
  const w = await makeQueueWorld(sb, {
    prefix,
    rules: options.rules,
    workDir: options.workDir,
    statusAuthors: ['ci'],
    modeOf: (branch) =>
      [...held].some(
        (one) => one === '*' || branch === one || (one.endsWith('*') && branch.startsWith(one.slice(0, -1))),
      )
        ? 'pending-forever'
        : 'normal',
    ...(options.log ? { log: options.log } : {}),
    ...(options.trainGit ? { trainGit: options.trainGit } : {}),
  });
  const db = sb.ctx.db;
  w.project.visibility_level = 20;
  const person = (name: string, level?: number): AttackPerson => {
    const username = `${prefix}-${name}`;
    const token = `${username}-token-0123456789`;
    const user = addUser(db, { username, private_token: token, password: `${username}-password` });
    if (level !== undefined)
      db.data.groupMembers.push({ group_id: w.groupId, user_id: user.id, access_level: level });
    return {
      id: user.id,
      username,
      token,
      client: createClient({ baseUrl: sb.url, token, retry: { limit: 0 } }),
    };
  };
  const master = person('master', 40);
  const mallory = person('mallory', 30);
  const reporter = person('reporter', 20);
  const stranger = person('stranger');
  const outsider = person('outsider');
  db.changed();
  await w.admin.branches.protect(w.project.id, 'master');
  const ciUser = db.data.users.find((u) => u.username === `${prefix}-ci`)!;
  const ci = createClient({ baseUrl: sb.url, token: ciUser.private_token, retry: { limit: 0 } });
  const projectId = w.project.id;
  let forkId = 0;
  if (options.fork) {
    const fork = await fetch(`${sb.apiUrl}/projects/fork/${projectId}`, {
      method: 'POST',
      headers: { 'private-token': outsider.token },
    });
    if (fork.status !== 201) throw new Error(`fork: ${fork.status}`);
    forkId = ((await fork.json()) as { id: number }).id;
    // The CI builds the fork's commits too (as 8.x's shared runners do), posting in the fork.
    db.data.members.push({ project_id: forkId, user_id: ciUser.id, access_level: 30, created_at: db.now() });
    db.changed();
  }
  const exists = (project: number, branch: string, file?: string) =>
    (file ? w.admin.files.get(project, file, branch) : w.admin.branches.get(project, branch)).then(
      () => true,
      () => false,
    );
  async function commit(
    who: AttackPerson,
    branch: string,
    file: string,
    content: string,
    project = projectId,
  ): Promise<string> {
    if (!(await exists(project, branch)))
      await who.client.branches.create(project, { branch_name: branch, ref: 'master' });
    const change = { file_path: file, branch_name: branch, content, commit_message: `${branch}: ${file}` };
    if (await exists(project, branch, file)) await who.client.files.update(project, change);
    else await who.client.files.create(project, change);
    await pushWorkIdle(sb.ctx);
    return (await w.admin.branches.get(project, branch)).commit.id;
  }
  return {
    w,
    sb,
    master,
    mallory,
    reporter,
    stranger,
    outsider,
    ci,
    forkId,
    held,
    commit,
    async open(who, branch, content, opts = {}) {
      const head = await commit(who, branch, `${branch}.txt`, content);
      const mr = await who.client.mergeRequests.create(projectId, {
        source_branch: branch,
        target_branch: opts.target ?? 'master',
        title: opts.title ?? `Change ${branch}`,
        ...(opts.labels ? { labels: opts.labels } : {}),
      });
      await w.ci.idle();
      return { id: mr.id, iid: mr.iid, head };
    },
    async fromFork(branch, content, target = 'master') {
      if (!forkId) throw new Error('the world has no fork: make it with fork: true');
      const head = await commit(outsider, branch, `${branch}.txt`, content, forkId);
      const mr = await outsider.client.mergeRequests.create(forkId, {
        source_branch: branch,
        target_branch: target,
        target_project_id: projectId,
        title: `From the fork: ${branch}`,
      });
      await w.ci.idle();
      return { id: mr.id, iid: mr.iid, head };
    },
    async comment(who, mrId, body) {
      return (await who.client.notes.createMergeRequestNote(projectId, mrId, body)).id;
    },
    async deleteBranch(who, project, branch) {
      const removed = await fetch(
        `${sb.apiUrl}/projects/${project}/repository/branches/${encodeURIComponent(branch)}`,
        { method: 'DELETE', headers: { 'private-token': who.token } },
      );
      if (!removed.ok) throw new Error(`delete ${branch}: ${removed.status} ${await removed.text()}`);
      await pushWorkIdle(sb.ctx);
    },
    async createBranch(who, project, branch, ref) {
      await who.client.branches.create(project, { branch_name: branch, ref });
      await pushWorkIdle(sb.ctx);
    },
    async on(branch, sha) {
      const commits = await sb.ctx.git.log(projectId, branch, { limit: 1000 });
      return commits.some((one) => one.id === sha);
    },
    mr: (mrId) => w.admin.mergeRequests.get(projectId, mrId),
    async ciStatus(sha, state, project = projectId) {
      await waitFor(
        async () => {
          for await (const s of w.admin.statuses.list(project, sha))
            if (s.name === 'ci/test' && s.status === state) return true;
          return undefined;
        },
        30_000,
        `ci/test ${state} on ${sha.slice(0, 8)}`,
      );
    },
    async trainBranches() {
      const found = new Map<string, string>();
      for await (const b of w.admin.branches.list(projectId))
        if (b.name.startsWith('hookbot/train/')) found.set(b.name, b.commit.id);
      return found;
    },
    explain(mrId) {
      const record = w.store.latestDecision(`merge_request:${projectId}:${mrId}`);
      return (record?.decision as { text?: string } | undefined)?.text ?? '';
    },
  };
}
