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
import {
  accessLevel,
  type AccessProject,
  ApiError,
  type Client,
  type Issue,
  latestByName,
  type Note,
  type MergeRequest,
} from '../../api/index.ts';
import { changeAfter, RETARGETED } from './pushed-since-note.ts';
import { itemKeyOf } from '../executor/ids.ts';

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
  'projects' | 'issues' | 'mergeRequests' | 'branches' | 'statuses' | 'notes' | 'members'
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
   * no such note on this item (a forged or stale delivery): that event did not happen. When the
   * rules need it (`actor_access`, the gate of merge-like actions on a merge request), the note
   * author's access level to the project too, read now (`actorAccess`). Other triggers are
   * returned as they are.
   */
  confirm(item: ItemAddress, trigger: Trigger, needs?: Partial<SnapshotNeeds>): Promise<Trigger | undefined>;
  /** A project's `path_with_namespace` by id (cached: paths rarely change, and rules are keyed by them). */
  projectOf(projectId: number): Promise<ProjectRef>;
  /**
   * Caches a project the server itself described (a project listing): its items then need no read
   * of the project. Only for the server's own answers: a path as a user wrote it may differ in case.
   * Its namespace and owner, when given, are kept with it (where its members are: access levels).
   */
  rememberProject(project: ProjectRef & Partial<Pick<AccessProject, 'namespace' | 'owner'>>): void;
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
  /** Whether the merge watch holds a merge request (its item key): the snapshot's `botMerge`. */
  watching?: (itemKey: string) => boolean;
}

export function createSnapshotReader(
  client: SnapshotClient,
  options: SnapshotReaderOptions = {},
): SnapshotReader {
  const bot = options.bot;
  const ttl = options.projectTtlMs ?? 5 * 60_000;
  const now = options.now ?? Date.now;
  /**
   * Projects as the server described them, for `ttl`: the path (rules are keyed by it) and where
   * the project's members are (its namespace, its owner in a user namespace), read in the same
   * answer. Access levels themselves are never cached: they are read with each evaluation.
   */
  const projects = new Map<number, { ref: ProjectRef; place?: AccessProject; until: number }>();

  function remember(project: ProjectRef & Partial<Pick<AccessProject, 'namespace' | 'owner'>>) {
    const ref = { id: project.id, path_with_namespace: project.path_with_namespace };
    const place = project.namespace
      ? { id: project.id, namespace: { id: project.namespace.id }, owner: project.owner ?? null }
      : undefined;
    const entry = { ref, ...(place ? { place } : {}), until: now() + ttl };
    projects.set(project.id, entry);
    return entry;
  }

  async function projectOf(projectId: number): Promise<ProjectRef> {
    const cached = projects.get(projectId);
    if (cached && cached.until > now()) return cached.ref;
    return remember(await client.projects.get(projectId)).ref;
  }

  async function placeOf(projectId: number): Promise<AccessProject> {
    const cached = projects.get(projectId);
    if (cached?.place && cached.until > now()) return cached.place;
    const { place } = remember(await client.projects.get(projectId));
    if (!place) throw new Error(`project ${projectId} was read without its namespace`);
    return place;
  }

  function rememberProject(project: ProjectRef & Partial<Pick<AccessProject, 'namespace' | 'owner'>>): void {
    remember(project);
  }

  /** A user's access level to the project, read now (api/access.ts). */
  async function accessTo(projectId: number, user: { id: number; state?: string }): Promise<number> {
    return accessLevel(client, await placeOf(projectId), user);
  }

  /**
   * One listing of the item's notes for what the rules need of them: the markers of the bot's
   * comments, and what changed the merge request after note `after` (pushed-since-note.ts), the
   * first such change in words; false when none did.
   */
  async function readNotes(
    type: ItemKind,
    projectId: number,
    id: number,
    after: number | undefined,
  ): Promise<{ markers: string[]; changed: string | false; retargeted: boolean }> {
    const notes =
      type === 'issue'
        ? client.notes.listIssueNotes(projectId, id)
        : client.notes.listMergeRequestNotes(projectId, id);
    const markers: string[] = [];
    let changed: string | false = false;
    let retargeted = false;
    for await (const note of notes) {
      if (!bot || isBotUser(bot, note.author)) markers.push(...extractMarkers(note.body));
      if (after === undefined) continue;
      const change = changeAfter(note, after, bot);
      if (change && changed === false) changed = change;
      if (change === RETARGETED) retargeted = true;
    }
    return { markers, changed, retargeted };
  }

  async function confirm(
    item: ItemAddress,
    given: Trigger,
    needs: Partial<SnapshotNeeds> = {},
  ): Promise<Trigger | undefined> {
    if (given.kind !== 'note') return given;
    const noteId = given.noteId;
    if (noteId === undefined) return undefined;
    // Facts of an earlier read never carry over: they are read again below, or stay unknown.
    const { actorAccess: _access, changedSinceNote: _changed, noteAt: _at, ...trigger } = given;
    let note: Note;
    try {
      note =
        item.type === 'issue'
          ? await client.notes.getIssueNote(item.projectId, item.id, noteId)
          : await client.notes.getMergeRequestNote(item.projectId, item.id, noteId);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
    const author = userRef(note.author);
    const wanted = needs.actorAccess || (needs.mergeGate && item.type === 'merge_request');
    return {
      ...trigger,
      note: note.body,
      system: note.system,
      actor: author,
      noteAt: note.created_at,
      byBot: isBotUser(bot, author),
      ...(wanted ? { actorAccess: await accessTo(item.projectId, note.author) } : {}),
    };
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
    if (needs.authorAccess) snapshot.authorAccess = await accessTo(issue.project_id, issue.author);
    if (needs.commentMarkers)
      snapshot.commentMarkers = (await readNotes('issue', issue.project_id, issue.id, undefined)).markers;
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
    if (options.watching && snapshot.kind === 'merge_request')
      snapshot.botMerge = options.watching(itemKeyOf('merge_request', projectId, mr.id));
    if (needs.authorAccess || needs.mergeGate) snapshot.authorAccess = await accessTo(projectId, mr.author);
    // The gate asks of a comment that approves a merge whether a push came after it; `dequeue` of
    // its command (a command older than the head takes nothing of it out).
    const after =
      (needs.mergeGate || needs.noteChanges) && trigger.kind === 'note' && !trigger.system
        ? trigger.noteId
        : undefined;
    if (needs.commentMarkers || after !== undefined) {
      const notes = await readNotes('merge_request', projectId, mr.id, after);
      if (needs.commentMarkers) snapshot.commentMarkers = notes.markers;
      if (after !== undefined)
        snapshot.trigger = { ...trigger, changedSinceNote: await changedSince(mr, sha, trigger, notes) };
    }
    return snapshot;
  }

  /**
   * What changed the merge request after the comment of `trigger`, in words, or false. Where the
   * server has merge request versions (8.12 on), the head the comment was written on is the one of
   * the version current at the comment's time: another head now is a change (a push, a reset, the
   * branch deleted and made again, whoever made it; the merge queue's own push from that head
   * excepted: `queueHead`), and the notes say only a change of target branch. Elsewhere the notes
   * say it all (pushed-since-note.ts).
   */
  async function changedSince(
    mr: MergeRequest,
    sha: string | null,
    trigger: Trigger,
    notes: { changed: string | false; retargeted: boolean },
  ): Promise<string | false> {
    const seen = trigger.noteAt === undefined ? undefined : await headAt(mr, trigger.noteAt);
    if (seen === undefined) return notes.changed;
    if (notes.retargeted) return 'a change of its target branch';
    const own = trigger.queueHead;
    if (seen !== null && sha === seen) return false;
    if (own && seen === own.from && sha === own.made) return false;
    // Another head than the one the comment was written on (the version current then).
    return 'a push to its source branch';
  }

  /**
   * The merge request's head when `at` (a note's time) was: the version current then, the latest
   * made at or before it (ids and times grow together; equal times: the later version). Undefined
   * when the server has no versions (before 8.12: 404) or none is that old; null for a version
   * without a head (the source branch deleted).
   */
  async function headAt(mr: MergeRequest, at: string): Promise<string | null | undefined> {
    const when = Date.parse(at);
    if (Number.isNaN(when)) return undefined;
    try {
      for await (const version of client.mergeRequests.versions(mr.project_id, mr.id))
        if (Date.parse(version.created_at) <= when) return version.head_commit_sha ?? null;
      return undefined;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
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
