/**
 * The engine's input: the fresh state of one issue or merge request, read through the API after an
 * event, plus the event that woke it. The engine never reads hook payloads: payloads of the v3 era
 * carry no labels (docs/server-behaviour.md#hook-payloads), so whoever builds a snapshot re-reads the item first.
 *
 * These are the engine's own types on purpose: the API client's resource types may grow or change
 * without touching the rules, and tests, `simulate` and sweeps build snapshots without a server.
 */

export type ItemKind = 'issue' | 'merge_request';

export interface UserRef {
  id: number;
  username: string;
}

export interface ProjectRef {
  id: number;
  path_with_namespace: string;
}

/** One commit status of the head commit: the latest per name (what `GET .../statuses` answers). */
export interface CommitStatusSnapshot {
  name: string;
  /** `pending`, `running`, `success`, `failed`, `canceled` (docs/api-v3.md#commit-status); other values are kept as read. */
  status: string;
  allow_failure: boolean;
  /** When read: lets the engine see that a status it would post is already there, word for word. */
  description?: string | null;
}

export type TriggerKind = 'issue' | 'merge_request' | 'note' | 'push' | 'status' | 'schedule' | 'manual';
export type TriggerAction = 'open' | 'update' | 'close' | 'reopen' | 'merge';

/** One event of a burst: its name as `on:` writes it, and whether the bot's own user caused it. */
export interface TriggerEvent {
  name: string;
  byBot: boolean;
}

/** The bot's own user on the server: its notes carry the comment markers, its events are `byBot`. */
export interface BotIdentity {
  id?: number;
  username?: string;
}

/** Whether `user` is the bot (by id when both are known, else by username). */
export function isBotUser(bot: BotIdentity | undefined, user: { id?: number; username?: string }): boolean {
  if (!bot) return false;
  if (bot.id !== undefined && user.id !== undefined) return bot.id === user.id;
  return bot.username !== undefined && user.username === bot.username;
}

/**
 * The event (or burst of events) that caused this evaluation. `kind` and `action` name the latest
 * event; `events` lists every event of the burst (docs/rules.md, "When a rule runs"): a rule runs
 * when any of them is in its `on:`. Absent `events` means the one event `kind`/`action` name.
 */
export interface Trigger {
  kind: TriggerKind;
  /** For `issue` and `merge_request` triggers; a hook without one counts as `update`. */
  action?: TriggerAction;
  /** Every event of a coalesced burst, each once (see above). */
  events?: readonly TriggerEvent[];
  /**
   * For `note` triggers: the note's id, from the delivery. The note itself (text, author, system
   * flag) is read through the API by that id; a delivery's text and user are never believed.
   */
  noteId?: number;
  /** The comment's text as the API returned it (set by the snapshot reader), for `note` triggers. */
  note?: string;
  /** A note written by the server itself ("changed the title", "mentioned in"...). */
  system?: boolean;
  /** For `schedule` triggers: the schedule that fired (`daily`, a cron line...); absent: any. */
  schedule?: string;
  /**
   * Who caused the event, when the server confirms it: a note's author as the API returns it.
   * Absent for every other event (the v3 API cannot confirm who made an edit; a payload's `user`
   * is not believed) and for sweeps and manual runs.
   */
  actor?: UserRef;
  /**
   * For `note` triggers whose author the server confirmed, when the rules need it (`actor_access`,
   * the gate of merge-like actions): the note author's access level to the item's project as the
   * members API shows it (0: none; docs/rules.md#members-commands). Read afresh with each
   * evaluation, never kept with a stored trigger.
   */
  actorAccess?: number;
  /**
   * For `note` triggers on a merge request, when the gate of merge-like actions needs it: what changed
   * the merge request after the note, in words (a push to its source branch, a close or reopen, a
   * change of its target branch: system notes with a greater id, rules/item/pushed-since-note.ts), or
   * false when nothing did. Changed, the comment approves nothing of it now. Absent: not read.
   */
  changedSinceNote?: string | false;
  /** For `note` triggers: when the server says the note was written (set by the snapshot reader). */
  noteAt?: string;
  /**
   * Set by the merge queue on the comment it replays before its merge: the head it pushed itself
   * (`made`, the source branch brought up to the target) from the head the comment approved
   * (`from`). The bot's own work on the approved head, not a change of the author's.
   */
  queueHead?: { made: string; from: string };
  /**
   * Every event of the burst was caused by the bot's own user (its comments fire `Note Hook` too).
   * From the payload for loop prevention only (a forged claim can only make the bot skip work
   * that the sweeps redo); for notes, corrected from the note's author as the API returns it.
   */
  byBot: boolean;
}

interface ItemSnapshotBase {
  kind: ItemKind;
  /** Global id, the one API paths use. */
  id: number;
  /** Per-project number shown to people (`#3`, `!7`). */
  iid: number;
  project: ProjectRef;
  title: string;
  description: string | null;
  /** `opened`, `closed`; merge requests also `merged` and `reopened`. */
  state: string;
  labels: readonly string[];
  author: UserRef;
  assignee: UserRef | null;
  /** The milestone's title, or null. */
  milestone: string | null;
  /** ISO 8601 timestamps as the API sends them. */
  created_at: string;
  updated_at: string;
  /**
   * The author's access level to the item's project as the members API shows it (project member,
   * group member, owner of a user namespace; 0: none), when the rules need it (`author_access`,
   * the gate of merge-like actions). Absent: not read, and a condition on it is unknown.
   */
  authorAccess?: number;
  /** Whether the bot's user is subscribed; absent when not read. */
  subscribed?: boolean;
  /**
   * The `hookbot:rule=...:key=...` markers of comments already on the item, when its notes were
   * read (see comment-marker.ts). Lets the plan skip a comment posted before; the executor checks
   * again before posting in any case.
   */
  commentMarkers?: readonly string[];
  trigger: Trigger;
}

export interface IssueSnapshot extends ItemSnapshotBase {
  kind: 'issue';
  /** Readable by the project's reporters and up, its author and its assignee only. */
  confidential?: boolean;
}

export interface MergeRequestSnapshot extends ItemSnapshotBase {
  kind: 'merge_request';
  /**
   * The project the source branch lives in: a fork's, for a merge request from a fork. Its head
   * commit, and so the commit statuses read and posted, belong there. Absent: the item's project.
   */
  source_project_id?: number;
  source_branch: string;
  target_branch: string;
  work_in_progress: boolean;
  /** `can_be_merged`, `cannot_be_merged`, `unchecked`. */
  merge_status: string;
  merge_when_build_succeeds: boolean;
  /**
   * The bot watches it to merge it itself when its build succeeds (the `merge_when_build_succeeds`
   * action, which arms no server merge by default): known where the reader can see the merge watch.
   */
  botMerge?: boolean;
  upvotes: number;
  downvotes: number;
  /** The head commit of the source branch, or null when it was not read. */
  sha: string | null;
  /** Statuses of the head commit `sha` (latest per name), or null when they were not read. */
  statuses: readonly CommitStatusSnapshot[] | null;
  /** Paths changed by the merge request (old and new paths), or null when not read. */
  changedFiles: readonly string[] | null;
}

export type ItemSnapshot = IssueSnapshot | MergeRequestSnapshot;
