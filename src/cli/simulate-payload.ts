/**
 * The offline half of `hookbot simulate`: an item's snapshot from the delivery alone, and the list
 * of what the delivery does not say. The bot never does this (a hook is a hint: it re-reads the
 * item), so everything taken from the payload is named, and everything missing is named with what
 * was assumed in its place. Payloads of that era carry no labels, no votes and no head statuses
 * (docs/server-behaviour.md#hook-payloads); notes carry the item's columns but no assignee or labels.
 */
import type { ItemRef } from '../events/index.ts';
import type { HookEvent } from '../events/index.ts';
import { parseTimestamp } from '../events/index.ts';
import type { ItemSnapshot, SnapshotNeeds, Trigger, UserRef } from '../rules/index.ts';

/** A fact the payload does not hold, and what the simulation took instead. */
export interface UnknownField {
  field: string;
  assumed: string;
}

export interface PayloadSnapshot {
  snapshot: ItemSnapshot;
  /** `namespace/project`, when the payload names it: it picks the project's rules. */
  projectPath: string | undefined;
  unknown: UnknownField[];
}

type Loose = Record<string, unknown>;

/** Shown where a username or title is not in the payload (never a real name: it has parentheses). */
export const UNKNOWN = '(unknown)';

const isObject = (value: unknown): value is Loose =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const intOf = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isInteger(value) ? value : undefined;
const objectOf = (value: unknown): Loose | undefined => (isObject(value) ? value : undefined);
/** An id, as a number or (some 8.x payloads, e.g. `source_project_id`) as a string of digits. */
const idOf = (value: unknown): number | undefined =>
  intOf(value) ?? (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : undefined);

interface PayloadParts {
  /** The item's own attributes. */
  attrs: Loose;
  /** The project's hook attributes (for its path). */
  project: Loose | undefined;
  /** Who caused the event. */
  user: Loose | undefined;
  /** The whole payload (some servers put `labels` or `assignee` at the top). */
  top: Loose;
}

function partsOf(event: HookEvent, item: ItemRef): PayloadParts {
  switch (event.kind) {
    case 'issue': {
      const p = event.payload;
      return { attrs: p.object_attributes, project: p.project, user: p.user, top: p };
    }
    case 'merge_request': {
      const p = event.payload;
      const attrs = p.object_attributes;
      return { attrs, project: objectOf(attrs.target) ?? p.project, user: p.user, top: p };
    }
    case 'note': {
      // A note carries the columns of the issue or merge request it is on.
      const p = event.payload;
      const attrs = (item.type === 'issue' ? objectOf(p.issue) : objectOf(p.merge_request)) ?? {};
      return { attrs, project: p.project ?? objectOf(attrs.target), user: p.user, top: p };
    }
    default:
      return { attrs: {}, project: undefined, user: undefined, top: event.payload };
  }
}

/** The project's `namespace/project` as the payload names it (it picks the project's rules). */
export function projectPathOf(event: HookEvent, item: ItemRef): string | undefined {
  return textOf(partsOf(event, item).project?.path_with_namespace);
}

/** Later servers send labels as objects with a title; 8.x sends none. */
function labelsOf(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const names = value
    .map((label) => (isObject(label) ? textOf(label.title) : textOf(label)))
    .filter((name) => name !== undefined);
  return names.length === value.length ? names : undefined;
}

/** 8.x `MergeRequest#work_in_progress?`, for payloads without `work_in_progress`. */
const WIP_PATTERN = /^\s*(\[WIP\]\s*|WIP:\s*|WIP\s+)+\s*/i;

/**
 * The snapshot of `item` from the payload. `trigger` is the event's; `needs` says which optional
 * facts the project's rules read (only those are worth listing as unknown).
 */
export function snapshotFromPayload(
  event: HookEvent,
  item: ItemRef,
  trigger: Trigger,
  needs: SnapshotNeeds,
  now: number,
): PayloadSnapshot {
  const { attrs, project, user, top } = partsOf(event, item);
  const unknown: UnknownField[] = [];
  const missing = (field: string, assumed: string) => unknown.push({ field, assumed });
  const has = (key: string) => key in attrs;

  const projectPath = textOf(project?.path_with_namespace);
  if (projectPath === undefined) missing('project path', 'unknown: the default rules apply');

  const iid = intOf(attrs.iid);
  if (iid === undefined) missing('iid', '0');
  const title = textOf(attrs.title);
  if (title === undefined) missing('title', 'empty');
  const description = textOf(attrs.description) ?? null;
  if (!has('description')) missing('description', 'none');
  const state = textOf(attrs.state);
  if (state === undefined) missing('state', 'opened');

  const labels = labelsOf(attrs.labels) ?? labelsOf(top.labels);
  if (labels === undefined) missing('labels', 'none (payloads of that era carry no labels)');

  // The payload names the author by id; the user who opened the item is its author.
  const authorId = intOf(attrs.author_id) ?? 0;
  const opener = trigger.action === 'open' ? textOf(user?.username) : undefined;
  const author: UserRef = { id: authorId, username: opener ?? UNKNOWN };
  if (opener === undefined) missing('author', `@${UNKNOWN} (the payload names the author by id only)`);

  const assigneeId = attrs.assignee_id;
  const assigneeAttrs = objectOf(attrs.assignee) ?? objectOf(top.assignee);
  let assignee: UserRef | null = null;
  if (assigneeId !== null && assigneeId !== undefined) {
    const username = textOf(assigneeAttrs?.username);
    assignee = { id: intOf(assigneeId) ?? 0, username: username ?? UNKNOWN };
    if (username === undefined) missing('assignee', `@${UNKNOWN}`);
  } else if (!has('assignee_id')) missing('assignee', 'nobody');

  const milestoneId = intOf(attrs.milestone_id);
  // The payload names the milestone by id: its title needs the API.
  const milestone = milestoneId === undefined ? null : `${UNKNOWN} milestone id ${milestoneId}`;
  if (milestoneId !== undefined) missing('milestone', `${UNKNOWN} (the payload names it by id only)`);
  else if (!has('milestone_id')) missing('milestone', 'none');

  const at = (key: string): string => {
    const ms = parseTimestamp(attrs[key]);
    if (ms === undefined) missing(key, 'now');
    return new Date(ms ?? now).toISOString();
  };
  const base = {
    id: item.id,
    iid: iid ?? 0,
    project: { id: item.projectId, path_with_namespace: projectPath ?? UNKNOWN },
    title: title ?? '',
    description,
    state: state ?? 'opened',
    labels: labels ?? [],
    author,
    assignee,
    milestone,
    created_at: at('created_at'),
    updated_at: at('updated_at'),
    trigger,
  };
  if (needs.commentMarkers)
    missing(
      'earlier comments',
      'none: a comment posted before would be planned again (the bot checks first)',
    );

  // Access levels are the members API's to say (docs/rules.md#members-commands).
  const gate = needs.mergeGate && item.type === 'merge_request';
  if (needs.authorAccess || gate)
    missing(
      "the author's access level",
      "unknown: author_access never holds, merges need a member's comment",
    );
  if (trigger.kind === 'note' && (needs.actorAccess || gate))
    missing(
      "the comment author's access level",
      'unknown: actor_access never holds, the comment approves nothing',
    );

  if (item.type === 'issue') return { snapshot: { kind: 'issue', ...base }, projectPath, unknown };

  const sourceBranch = textOf(attrs.source_branch);
  if (sourceBranch === undefined) missing('source branch', 'empty');
  const targetBranch = textOf(attrs.target_branch);
  if (targetBranch === undefined) missing('target branch', 'empty');
  const wip = typeof attrs.work_in_progress === 'boolean' ? attrs.work_in_progress : undefined;
  if (wip === undefined) missing('work in progress', 'read from the title');
  const mergeStatus = textOf(attrs.merge_status);
  if (mergeStatus === undefined) missing('merge status', 'unchecked');
  const mwbs =
    typeof attrs.merge_when_build_succeeds === 'boolean' ? attrs.merge_when_build_succeeds : undefined;
  if (mwbs === undefined) missing('merge when build succeeds', 'false');
  missing('votes', '0 up, 0 down');
  const sha = textOf(objectOf(attrs.last_commit)?.id) ?? null;
  if (sha === null) missing('head commit', 'unknown');
  missing('statuses of the head commit', 'unknown: conditions on them never hold');
  if (needs.changedFiles) missing('changed files', 'unknown: conditions on them never hold');
  return {
    snapshot: {
      kind: 'merge_request',
      ...base,
      ...(idOf(attrs.source_project_id) !== undefined
        ? { source_project_id: idOf(attrs.source_project_id) }
        : {}),
      source_branch: sourceBranch ?? '',
      target_branch: targetBranch ?? '',
      work_in_progress: wip ?? WIP_PATTERN.test(title ?? ''),
      merge_status: mergeStatus ?? 'unchecked',
      merge_when_build_succeeds: mwbs ?? false,
      upvotes: 0,
      downvotes: 0,
      sha,
      statuses: null,
      changedFiles: null,
    },
    projectPath,
    unknown,
  };
}
