/**
 * A group with the bot as a master member, projects with real git repositories, and merge
 * requests with commit statuses: the ground the executor and item processor tests stand on.
 */
import { createClient, type Client } from '../../src/api/client.ts';
import type { PostableState } from '../../src/api/statuses.ts';
import { evaluate, type Evaluation } from '../../src/rules/engine/engine.ts';
import { createSnapshotReader } from '../../src/rules/item/read-snapshot.ts';
import type { CompiledRuleSet } from '../../src/rules/engine/compile.ts';
import type { ItemKind, ItemSnapshot, Trigger } from '../../src/rules/engine/snapshot.ts';
import type { NamespaceRec, UserRec } from '../../src/sandbox/db.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import type { ExecutorLog } from '../../src/rules/executor/types.ts';

export const MANUAL: Trigger = { kind: 'manual', byBot: false };

export interface ExecWorld {
  sb: Sandbox;
  admin: Client;
  botUser: UserRec;
  botToken: string;
  group: NamespaceRec;
  /** A client for the bot; `baseUrl` points it elsewhere (a faulty proxy), `retries: 0` turns retries off. */
  botClient(options?: { baseUrl?: string; retries?: number; timeoutMs?: number }): Client;
  newProject(name: string): Promise<{ id: number; path: string }>;
}

export function makeExecWorld(sb: Sandbox, prefix: string): ExecWorld {
  const botToken = `${prefix}-bot-token-0123456789`;
  const botUser = addUser(sb.ctx.db, { username: `${prefix}-bot`, private_token: botToken });
  const group = addGroup(sb.ctx.db, {
    name: `${prefix}-group`,
    owner_id: 1,
    members: [{ user_id: botUser.id, access_level: 40 }],
  });
  return {
    sb,
    admin: createClient({ baseUrl: sb.url, token: sb.adminToken }),
    botUser,
    botToken,
    group,
    botClient(options = {}) {
      return createClient({
        baseUrl: options.baseUrl ?? sb.url,
        token: botToken,
        retry: { limit: options.retries ?? 3, baseDelayMs: 5, maxDelayMs: 20 },
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      });
    },
    async newProject(name) {
      const project = await addProject(sb.ctx, {
        name,
        namespace_id: group.id,
        creator_id: 1,
        initialFiles: { 'README.md': `# ${name}\n` },
      });
      return { id: project.id, path: `${group.path}/${project.path}` };
    },
  };
}

/** A branch with one commit, a merge request from it, and statuses on its head. */
export async function openMergeRequest(
  admin: Client,
  projectId: number,
  branch: string,
  options: { labels?: string[]; statuses?: Record<string, PostableState> } = {},
): Promise<{ id: number; sha: string }> {
  await admin.branches.create(projectId, { branch_name: branch, ref: 'master' });
  await admin.files.create(projectId, {
    file_path: `${branch}.txt`,
    branch_name: branch,
    content: `${branch}\n`,
    commit_message: `Add ${branch}`,
  });
  const mr = await admin.mergeRequests.create(projectId, {
    source_branch: branch,
    target_branch: 'master',
    title: `Merge ${branch}`,
    labels: options.labels ?? [],
  });
  const sha = (await admin.branches.get(projectId, branch)).commit.id;
  await postStatuses(admin, projectId, sha, branch, options.statuses ?? {});
  return { id: mr.id, sha };
}

export async function postStatuses(
  admin: Client,
  projectId: number,
  sha: string,
  branch: string,
  statuses: Record<string, PostableState>,
): Promise<void> {
  for (const [name, state] of Object.entries(statuses))
    await admin.statuses.create(projectId, sha, { state, name, ref: branch });
}

/** A new commit on the branch (through the files API, as a push would); its sha. */
export async function pushCommit(
  admin: Client,
  projectId: number,
  branch: string,
  file: string,
): Promise<string> {
  await admin.files.create(projectId, {
    file_path: file,
    branch_name: branch,
    content: `${file}\n`,
    commit_message: `Add ${file}`,
  });
  return (await admin.branches.get(projectId, branch)).commit.id;
}

/** Reads the item fresh and evaluates the rules on it, as the item processor does. */
export async function evaluateItem(
  client: Client,
  rules: CompiledRuleSet,
  type: ItemKind,
  projectId: number,
  id: number,
  trigger: Trigger = MANUAL,
): Promise<{ snapshot: ItemSnapshot; evaluation: Evaluation }> {
  const snapshot = await createSnapshotReader(client).read({ type, projectId, id }, trigger, rules.needs);
  if (!snapshot) throw new Error(`${type} ${id} not found`);
  return { snapshot, evaluation: evaluate(rules, snapshot, { now: Date.now() }) };
}

/** A logger that keeps what it was given, to check what reaches the logs. */
export function recordingLog(): ExecutorLog & { lines: { level: string; obj: object; msg: string }[] } {
  const lines: { level: string; obj: object; msg: string }[] = [];
  return {
    lines,
    info: (obj, msg) => void lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => void lines.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => void lines.push({ level: 'error', obj, msg }),
  };
}
