/**
 * What the engine hands to the executor: API calls with the rule and the reason behind each. The
 * op names follow the client's resource families (`issues.update`, `notes.createIssueNote`...);
 * three are composite and marked so below, because they need a lookup the engine cannot do
 * without I/O.
 */
import type { ItemSnapshot } from './snapshot.ts';

export interface IssueTarget {
  project: number;
  issue_id: number;
}

export interface MergeRequestTarget {
  project: number;
  merge_request_id: number;
}

export interface ItemEdit {
  /** The whole label set to write: the v3 API replaces it (docs/server-behaviour.md#labels). */
  labels?: string[];
  state_event?: 'close' | 'reopen';
}

/**
 * A member's confirmed comment that approved a merge request's head for a merge-like action
 * (docs/rules.md#members-commands): who (username, access level then), the note, and the head the
 * evaluation read.
 */
export interface Approval {
  by: string;
  level: number;
  noteId: number;
  sha: string;
}

export type StatusState = 'pending' | 'running' | 'success' | 'failed' | 'canceled';

/** Arguments of each op. */
export interface CallArgs {
  'issues.update': IssueTarget & { edit: ItemEdit };
  'mergeRequests.update': MergeRequestTarget & { edit: ItemEdit };
  /** Composite: resolve `username` to an id, then update `assignee_id` (null unassigns). */
  'issues.assign': IssueTarget & { username: string | null };
  /** Composite: as `issues.assign`, for a merge request. */
  'mergeRequests.assign': MergeRequestTarget & { username: string | null };
  'notes.createIssueNote': IssueTarget & { body: string };
  'notes.createMergeRequestNote': MergeRequestTarget & { body: string };
  /** Composite: resolve the `to_project` path to its id, then move. */
  'issues.move': IssueTarget & { to_project: string };
  'issues.subscribe': IssueTarget;
  'issues.unsubscribe': IssueTarget;
  'mergeRequests.subscribe': MergeRequestTarget;
  'mergeRequests.unsubscribe': MergeRequestTarget;
  'statuses.create': {
    project: number;
    sha: string;
    state: StatusState;
    name: string;
    ref?: string;
    description?: string;
    target_url?: string;
    /** For a rule of a project's `.hookbot.yml`: the executor marks it, and it never counts (statuses.ts). */
    repository?: true;
  };
  /** Merge pinned to `sha`: the server answers 409 if the head moved (docs/server-behaviour.md#merging). */
  'mergeRequests.merge': MergeRequestTarget & {
    sha: string;
    should_remove_source_branch?: boolean;
    merge_commit_message?: string;
  };
  /** The merge call with `merge_when_build_succeeds=true`, pinned to `sha` as well. */
  'mergeRequests.mergeWhenBuildSucceeds': MergeRequestTarget & {
    sha: string;
    should_remove_source_branch?: boolean;
    /**
     * Arm the server's own merge-when-build-succeeds too (the action's `on_server: true`); absent,
     * the bot watches and merges itself (rules/actions/merge-when-build-succeeds.ts says why).
     */
    on_server?: boolean;
  };
  'mergeRequests.cancelMergeWhenBuildSucceeds': MergeRequestTarget;
  /** Not an API call: the merge request goes into a merge queue of the store (docs/merge-queue.md). */
  'mergeQueue.enqueue': MergeRequestTarget & {
    iid: number;
    /** The head evaluated: a merge request the queue took out at this head does not enter again. */
    sha: string;
    project_path: string;
    target_branch: string;
    queue: string;
    /** Higher goes first. */
    priority: number;
    required: string[];
    status_timeout_ms: number;
    max_updates: number;
    /** Cars tested at once (absent: 1, the serial queue). */
    depth?: number;
    /** `depth: auto`: the window's bounds (`depth` is then absent). */
    depth_auto?: { min: number; max: number };
    /** Merge requests per car (absent: 1). */
    batch?: number;
    /** Merge trains: rebuilds of a failed car of one before it is taken out (absent: the default). */
    retries?: number;
    should_remove_source_branch?: boolean;
    merge_commit_message?: string;
    /**
     * Set when a member's comment approved the head (the gate's way (b), docs/rules.md#members-commands):
     * kept on the queue entry with the note's trigger.
     */
    approval?: Approval;
  };
  /**
   * Not an API call: the merge request leaves its merge queue, remembered at `sha` (the `dequeue`
   * action, a member's `/hookbot dequeue`); `by` is the commenter, or the rule's name for another event.
   */
  /** `note`: the comment's id, on a member's command (a command older than the queue entry takes nothing out). */
  /** `noteAt`: when the server says the comment was written (a command older than the entry's stay takes nothing out). */
  'mergeQueue.dequeue': MergeRequestTarget & { sha: string; by: string; note?: number; noteAt?: string };
}

export type Op = keyof CallArgs;

/** Labels added and removed by a labels write: lets the executor re-apply them on a newer set. */
export interface LabelDelta {
  add: string[];
  remove: string[];
}

/** The call of one kind, or of several (`CallOf<'issues.update' | 'mergeRequests.update'>`). */
export type CallOf<K extends Op> = {
  [P in K]: {
    op: P;
    args: CallArgs[P];
    /** On label writes only. */
    labels?: LabelDelta;
    /** On comments only: the hidden marker the body ends with (see comment-marker.ts). */
    marker?: string;
  };
}[K];

export type ApiCall = CallOf<Op>;

/** What an action proposes; the engine stamps the action and rule names on it. */
export interface Proposal {
  call: ApiCall;
  reason: string;
}

export interface PlannedCall extends Proposal {
  /** The action that planned it (`label`, `comment`, ... or `summary_status`). */
  action: string;
  /** The rule that planned it; a merged labels write names every contributing rule. */
  rule: string;
}

/** An action that plans nothing says why (its effect already holds, or it cannot apply). */
export interface Skip {
  skipped: string;
  /** The action could not act although the rule matched (a merge held back): not "already done". */
  blocks?: boolean;
}

export function skip(why: string): Skip {
  return { skipped: why };
}

/** A skip that holds the rule back: summary statuses and `blockingReasons` report it. */
export function blocked(why: string): Skip {
  return { skipped: why, blocks: true };
}

export function isSkip(outcome: readonly Proposal[] | Skip): outcome is Skip {
  return 'skipped' in outcome;
}

/** The `project` + item id arguments every item call takes. */
export function issueTarget(item: ItemSnapshot): IssueTarget {
  return { project: item.project.id, issue_id: item.id };
}

export function mergeRequestTarget(item: ItemSnapshot): MergeRequestTarget {
  return { project: item.project.id, merge_request_id: item.id };
}
