/**
 * What issues and merge requests ("issuables" in the real servers' source) share: who may read and
 * edit them, participants and subscriptions, the order and filters of their lists, and how their
 * parameters are read.
 */
import type { SandboxContext } from './context.ts';
import type { IssueRec, MergeRequestRec, ProjectRec, UserRec } from './db.ts';
import { badRequest, int, notFound, str } from './http.ts';
import { accessLevel, canRead, DEVELOPER, REPORTER } from './permissions.ts';

export type IssuableType = 'Issue' | 'MergeRequest';
export type Issuable = IssueRec | MergeRequestRec;

/** `opened` lists also hold `reopened` ones, `closed` ones also `locked` (real scopes `opened` and `closed`). */
export function inStateScope(state: string, scope: string | undefined): boolean {
  if (scope === 'opened') return state === 'opened' || state === 'reopened';
  if (scope === 'closed') return state === 'closed' || state === 'locked';
  if (scope === 'merged') return state === 'merged';
  return true;
}

/**
 * `order_by` (`created_at` or `updated_at`, anything else counts as `created_at`) and `sort` (`asc`,
 * anything else `desc`), as real 8.x servers read them. Ties (same millisecond) fall back to the id.
 */
export function orderIssuables<T extends { id: number; created_at: string; updated_at: string }>(
  items: T[],
  orderBy: string | undefined,
  sort: string | undefined,
): T[] {
  const key = orderBy === 'updated_at' ? 'updated_at' : 'created_at';
  const sign = sort === 'asc' ? 1 : -1;
  return [...items].sort((a, b) => sign * (a[key].localeCompare(b[key]) || a.id - b.id));
}

/** A `labels` filter keeps the issuables that carry every one of the given labels. */
export function hasAllLabels(item: { labels: string[] }, wanted: string[] | undefined): boolean {
  return (wanted ?? []).every((name) => item.labels.includes(name));
}

/**
 * Real 8.x `read_issue` on a confidential issue: members at reporter level and above (admins
 * included), its author and its assignee; everyone who can read the project otherwise.
 */
export function canReadIssue(
  ctx: SandboxContext,
  project: ProjectRec,
  issue: IssueRec,
  user: UserRec,
): boolean {
  if (!canRead(ctx.db, project, user)) return false;
  if (!issue.confidential) return true;
  return (
    accessLevel(ctx.db, project, user) >= REPORTER ||
    issue.author_id === user.id ||
    issue.assignee_id === user.id
  );
}

/**
 * An issue of the project by its global `id` (paths never take the `iid`): 404 `404 Not found` when
 * absent, deleted, in another project or confidential to the caller.
 */
export function findIssue(ctx: SandboxContext, project: ProjectRec, ref: string, user: UserRec): IssueRec {
  const id = /^\d+$/.test(ref) ? Number(ref) : NaN;
  const issue = ctx.db.data.issues.find((i) => i.id === id && i.project_id === project.id && !i.deleted);
  if (!issue || !canReadIssue(ctx, project, issue, user)) throw notFound();
  return issue;
}

/** A merge request of the project (its target project) by its global `id`; 404 `404 Not found` otherwise. */
export function findMergeRequest(ctx: SandboxContext, project: ProjectRec, ref: string): MergeRequestRec {
  const id = /^\d+$/.test(ref) ? Number(ref) : NaN;
  const mr = ctx.db.data.mergeRequests.find((m) => m.id === id && m.project_id === project.id && !m.deleted);
  if (!mr) throw notFound();
  return mr;
}

/**
 * 8.x `update_issue`: reporters and up, and the issue's author and assignee whatever their level
 * (on a confidential issue only they and reporters see it at all: findIssue answers 404 first).
 */
export function canUpdateIssue(
  ctx: SandboxContext,
  project: ProjectRec,
  issue: IssueRec,
  user: UserRec,
): boolean {
  return accessLevel(ctx.db, project, user) >= REPORTER || isAuthorOrAssignee(issue, user);
}

/**
 * 8.x `update_merge_request`: developers and up on a project that is not archived (8.x takes it from
 * every role of an archived project), and the merge request's author and assignee whatever their level.
 */
export function canUpdateMergeRequest(
  ctx: SandboxContext,
  project: ProjectRec,
  mr: MergeRequestRec,
  user: UserRec,
): boolean {
  return (
    (accessLevel(ctx.db, project, user) >= DEVELOPER && !project.archived) || isAuthorOrAssignee(mr, user)
  );
}

/**
 * 8.x (from 8.13) `read_merge_request`: whoever sees a public or internal project; on a private one
 * reporters and up, and the merge request's author and assignee (a guest of a private project reads
 * its issues, not its merge requests).
 */
export function canReadMergeRequests(ctx: SandboxContext, project: ProjectRec, user: UserRec): boolean {
  return (
    canRead(ctx.db, project, user) &&
    (project.visibility_level > 0 || accessLevel(ctx.db, project, user) >= REPORTER)
  );
}

export function canReadMergeRequest(
  ctx: SandboxContext,
  project: ProjectRec,
  mr: MergeRequestRec,
  user: UserRec,
): boolean {
  return (
    canReadMergeRequests(ctx, project, user) ||
    (canRead(ctx.db, project, user) && isAuthorOrAssignee(mr, user))
  );
}

const isAuthorOrAssignee = (item: Issuable, user: UserRec) =>
  item.author_id === user.id || item.assignee_id === user.id;

/**
 * The participants of an issuable as real servers count them for subscriptions: its author, its
 * assignee, the authors of its (non-system) comments and the users `@mentioned` in its description or
 * comments.
 */
export function participantIds(ctx: SandboxContext, type: IssuableType, item: Issuable): Set<number> {
  const ids = new Set<number>([item.author_id]);
  if (item.assignee_id !== null) ids.add(item.assignee_id);
  const texts = [item.description ?? ''];
  for (const note of ctx.db.data.notes) {
    if (note.noteable_type !== type || note.noteable_id !== item.id || note.system) continue;
    ids.add(note.author_id);
    texts.push(note.body);
  }
  for (const text of texts)
    for (const match of text.matchAll(/(?:^|[^\w`])@([\w.-]+)/g)) {
      const user = ctx.db.data.users.find((u) => u.username === match[1]);
      if (user) ids.add(user.id);
    }
  return ids;
}

/** An explicit subscribe or unsubscribe wins; without one, participants count as subscribed (real 8.x). */
export function isSubscribed(
  ctx: SandboxContext,
  type: IssuableType,
  item: Issuable,
  user: UserRec,
): boolean {
  const explicit = ctx.db.data.subscriptions.find(
    (s) => s.type === type && s.id === item.id && s.user_id === user.id,
  );
  if (explicit) return explicit.subscribed;
  return participantIds(ctx, type, item).has(user.id);
}

/** Subscribes or unsubscribes; false when it already was so (the routes answer 304 then). */
export function setSubscribed(
  ctx: SandboxContext,
  type: IssuableType,
  item: Issuable,
  user: UserRec,
  subscribed: boolean,
): boolean {
  if (isSubscribed(ctx, type, item, user) === subscribed) return false;
  const explicit = ctx.db.data.subscriptions.find(
    (s) => s.type === type && s.id === item.id && s.user_id === user.id,
  );
  if (explicit) explicit.subscribed = subscribed;
  else ctx.db.data.subscriptions.push({ type, id: item.id, user_id: user.id, subscribed });
  ctx.db.changed();
  return true;
}

/**
 * A timestamp parameter (`created_at`, `updated_at`) in the API's own form. One that does not parse is
 * ignored, as the real servers' models drop it (the record keeps its own time).
 */
export function timestampParam(p: Record<string, unknown>, name: string): string | undefined {
  const value = str(p, name);
  if (!value) return undefined;
  const time = Date.parse(value);
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

/**
 * A parameter as real 8.x `attributes_for_keys` reads it: blank values (empty or whitespace-only
 * strings, null) count as not given, so they never clear a field.
 */
export function given(p: Record<string, unknown>, name: string): string | undefined {
  const value = p[name] === false ? 'false' : str(p, name);
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** docs/api-v3.md leaves maximum lengths unshown; real 8.x titles are strings of at most 255 characters. */
export function checkTitle(title: string | undefined): void {
  if (title !== undefined && title.length > 255)
    throw badRequest({ title: ['is too long (maximum is 255 characters)'] });
}

/**
 * `assignee_id`: undefined when not given; `0` unassigns (real `IssuableFinder::NONE`); an unknown user
 * leaves it unassigned.
 */
export function assigneeParam(ctx: SandboxContext, p: Record<string, unknown>): number | null | undefined {
  if (given(p, 'assignee_id') === undefined) return undefined;
  const id = int(p, 'assignee_id');
  return ctx.db.data.users.some((u) => u.id === id) ? (id ?? null) : null;
}

/** `milestone_id`: undefined when not given; `0` or a milestone of another project clears it (real `filter_milestone`). */
export function milestoneParam(
  ctx: SandboxContext,
  project: ProjectRec,
  p: Record<string, unknown>,
): number | null | undefined {
  if (given(p, 'milestone_id') === undefined) return undefined;
  const id = int(p, 'milestone_id');
  return ctx.db.data.milestones.some((m) => m.id === id && m.project_id === project.id) ? (id ?? null) : null;
}
