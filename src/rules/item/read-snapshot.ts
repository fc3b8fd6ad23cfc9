/**
 * Reads the fresh state of one issue or merge request through the API and turns it into the
 * engine's snapshot. A hook is a hint, never the truth: payloads of that era carry no labels and no
 * head statuses, so every evaluation starts here (hooks, sweeps, simulate and demo alike).
 */
import { extractMarkers } from '../engine/comment-marker.ts';
import type { SnapshotNeeds } from '../engine/compile.ts';
import {
  isBotUser,
  type BotIdentity,
  type ItemKind,
  type ItemSnapshot,
  type ProjectRef,
  type Trigger,
  type UserRef,
} from '../engine/snapshot.ts';
import { ApiError, type Client, type Issue, latestByName, type MergeRequest } from '../../api/index.ts';

export interface ItemAddress {
  type: ItemKind;
  projectId: number;
  /** The global id (API paths use it, never the iid). */
  id: number;
}

/**
 * What to read besides the item itself; the rule set knows what its conditions and actions use
 * (`CompiledRuleSet.needs`). Defined with the rule set, re-exported for the readers' callers; a
 * field left out here reads nothing extra.
 */
export type { SnapshotNeeds };

export type SnapshotClient = Pick<
  Client,
  'projects' | 'issues' | 'mergeRequests' | 'branches' | 'statuses' | 'notes'
>;

export interface SnapshotReader {
  /** The item's snapshot, or undefined when it is gone (deleted, moved out of sight: 404). */
  read(
    item: ItemAddress,
    trigger: Trigger,
    needs?: Partial<SnapshotNeeds>,
  ): Promise<ItemSnapshot | undefined>;
  /** Snapshot from an item already read (sweeps list items page by page and need not read each again). */
  fromIssue(issue: Issue, trigger: Trigger, needs?: Partial<SnapshotNeeds>): Promise<ItemSnapshot>;
  fromMergeRequest(mr: MergeRequest, trigger: Trigger, needs?: Partial<SnapshotNeeds>): Promise<ItemSnapshot>;
  /**
   * The trigger with what only the server can say: for a note, its text, author and system flag,
   * read by the note's id (the delivery's copy is never believed). Undefined when the server has
   * no such note on this item (a forged or stale delivery): that event did not happen.
   * Other triggers are returned as they are.
   */
  confirm(item: ItemAddress, trigger: Trigger): Promise<Trigger | undefined>;
  /** A project's `path_with_namespace` by id (cached: paths rarely change, and rules are keyed by them). */
  projectOf(projectId: number): Promise<ProjectRef>;
  /**
   * Caches a project the server itself described (a project listing): its items then need no read
   * of the project. Only for the server's own answers: a path as a user wrote it may differ in case.
   */
  rememberProject(project: ProjectRef): void;
}

export interface SnapshotReaderOptions {
  projectTtlMs?: number;
  now?: () => number;
  /**
   * The bot's own user: comment markers count only in its notes (anyone can paste a marker into a
   * comment of their own), and its notes are `byBot`. Without it (offline tools), every note's
   * markers count.
   */
  bot?: BotIdentity;
}

export function createSnapshotReader(
  client: SnapshotClient,
  options: SnapshotReaderOptions = {},
): SnapshotReader {
  const bot = options.bot;
  const ttl = options.projectTtlMs ?? 5 * 60_000;
  const now = options.now ?? Date.now;
  const projects = new Map<number, { ref: ProjectRef; until: number }>();

  async function projectOf(projectId: number): Promise<ProjectRef> {
    const cached = projects.get(projectId);
    if (cached && cached.until > now()) return cached.ref;
    const project = await client.projects.get(projectId);
    const ref = { id: project.id, path_with_namespace: project.path_with_namespace };
    projects.set(projectId, { ref, until: now() + ttl });
    return ref;
  }

  function rememberProject(project: ProjectRef): void {
    const ref = { id: project.id, path_with_namespace: project.path_with_namespace };
    projects.set(project.id, { ref, until: now() + ttl });
  }

  async function markers(type: ItemKind, projectId: number, id: number): Promise<string[]> {
    const notes =
      type === 'issue'
        ? client.notes.listIssueNotes(projectId, id)
        : client.notes.listMergeRequestNotes(projectId, id);
    const found: string[] = [];
    for await (const note of notes)
      if (!bot || isBotUser(bot, note.author)) found.push(...extractMarkers(note.body));
    return found;
  }

  async function confirm(item: ItemAddress, trigger: Trigger): Promise<Trigger | undefined> {
    if (trigger.kind !== 'note') return trigger;
    if (trigger.noteId === undefined) return undefined;
    try {
      const note =
        item.type === 'issue'
          ? await client.notes.getIssueNote(item.projectId, item.id, trigger.noteId)
          : await client.notes.getMergeRequestNote(item.projectId, item.id, trigger.noteId);
      const author = userRef(note.author);
      return {
        ...trigger,
        note: note.body,
        system: note.system,
        actor: author,
        byBot: isBotUser(bot, author),
      };
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  async function fromIssue(
    issue: Issue,
    trigger: Trigger,
    needs: Partial<SnapshotNeeds> = {},
  ): Promise<ItemSnapshot> {
    const snapshot: ItemSnapshot = {
      kind: 'issue',
      id: issue.id,
      iid: issue.iid,
      ...(issue.confidential ? { confidential: true } : {}),
      project: await projectOf(issue.project_id),
      title: issue.title,
      description: issue.description,
      state: issue.state,
      labels: issue.labels,
      author: userRef(issue.author),
      assignee: issue.assignee ? userRef(issue.assignee) : null,
      milestone: issue.milestone?.title ?? null,
      created_at: issue.created_at,
      updated_at: issue.updated_at,
      trigger,
    };
    if (issue.subscribed !== undefined) snapshot.subscribed = issue.subscribed;
    if (needs.commentMarkers) snapshot.commentMarkers = await markers('issue', issue.project_id, issue.id);
    return snapshot;
  }

  async function fromMergeRequest(
    mr: MergeRequest,
    trigger: Trigger,
    needs: Partial<SnapshotNeeds> = {},
  ): Promise<ItemSnapshot> {
    const projectId = mr.project_id;
    const sha = mr.sha ?? (await headOf(mr));
    // The statuses of the CURRENT head only: an older commit's green build says nothing about this one.
    const statuses = sha === null ? null : await headStatuses(mr.source_project_id, sha);
    const snapshot: ItemSnapshot = {
      kind: 'merge_request',
      id: mr.id,
      iid: mr.iid,
      project: await projectOf(projectId),
      title: mr.title,
      description: mr.description,
      state: mr.state,
      labels: mr.labels,
      author: userRef(mr.author),
      assignee: mr.assignee ? userRef(mr.assignee) : null,
      milestone: mr.milestone?.title ?? null,
      created_at: mr.created_at,
      updated_at: mr.updated_at,
      source_project_id: mr.source_project_id,
      source_branch: mr.source_branch,
      target_branch: mr.target_branch,
      work_in_progress: mr.work_in_progress,
      merge_status: mr.merge_status,
      merge_when_build_succeeds: mr.merge_when_build_succeeds,
      upvotes: mr.upvotes,
      downvotes: mr.downvotes,
      sha,
      statuses,
      changedFiles: needs.changedFiles ? await changedFiles(projectId, mr.id) : null,
      trigger,
    };
    if (mr.subscribed !== undefined) snapshot.subscribed = mr.subscribed;
    if (needs.commentMarkers) snapshot.commentMarkers = await markers('merge_request', projectId, mr.id);
    return snapshot;
  }

  /** Servers of that era do not put the head sha in the MR: the source branch's head is it. */
  async function headOf(mr: MergeRequest): Promise<string | null> {
    try {
      return (await client.branches.get(mr.source_project_id, mr.source_branch)).commit.id;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null; // branch removed after merge
      throw error;
    }
  }

  async function headStatuses(projectId: number, sha: string) {
    const all = [];
    for await (const status of client.statuses.list(projectId, sha)) all.push(status);
    return latestByName(all).map((s) => ({
      name: s.name,
      status: s.status,
      allow_failure: s.allow_failure ?? false,
      description: s.description ?? null,
    }));
  }

  async function changedFiles(projectId: number, mrId: number): Promise<string[]> {
    const changes = await client.mergeRequests.changes(projectId, mrId);
    const paths = new Set<string>();
    for (const change of changes.changes) {
      paths.add(change.old_path);
      paths.add(change.new_path);
    }
    return [...paths];
  }

  return {
    projectOf,
    rememberProject,
    confirm,
    fromIssue,
    fromMergeRequest,
    async read(item, trigger, needs = {}) {
      try {
        if (item.type === 'issue')
          return await fromIssue(await client.issues.get(item.projectId, item.id), trigger, needs);
        return await fromMergeRequest(
          await client.mergeRequests.get(item.projectId, item.id),
          trigger,
          needs,
        );
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return undefined;
        throw error;
      }
    },
  };
}

function userRef(user: { id: number; username: string }): UserRef {
  return { id: user.id, username: user.username };
}
