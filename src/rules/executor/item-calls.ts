/**
 * How calls on issues and merge requests other than merges are performed (calls/ names one handler
 * per kind of call; the kinds on both items share these): each re-reads
 * what it is about to change right before changing it, and makes no call when the effect already
 * holds. Handlers throw ApiErrors they cannot resolve; executor.ts turns them into outcomes.
 */
import { extractMarkers } from '../engine/comment-marker.ts';
import { isBotUser } from '../engine/snapshot.ts';
import type {
  CallArgs,
  IssueTarget,
  ItemEdit,
  LabelDelta,
  MergeRequestTarget,
} from '../engine/planned-call.ts';
import { done, failed, skipped, type CallContext, type CallResult } from './types.ts';
import {
  ApiError,
  type Issue,
  isOpenState,
  latestByName,
  markRepositoryStatus,
  type MergeRequest,
} from '../../api/index.ts';

type Target = IssueTarget | MergeRequestTarget;

const isIssue = (target: Target): target is IssueTarget => 'issue_id' in target;

function readItem(ctx: CallContext, target: Target): Promise<Issue | MergeRequest> {
  return isIssue(target)
    ? ctx.client.issues.get(target.project, target.issue_id)
    : ctx.client.mergeRequests.get(target.project, target.merge_request_id);
}

/** What the executor writes on an item: every field of an `ItemEdit`, and the assignee. */
interface Edit extends ItemEdit {
  assignee_id?: number;
}

async function writeItem(ctx: CallContext, target: Target, edit: Edit): Promise<void> {
  if (isIssue(target)) await ctx.client.issues.update(target.project, target.issue_id, edit);
  else await ctx.client.mergeRequests.update(target.project, target.merge_request_id, edit);
}

/** A delta applied to the set as it is NOW: a label a human added meanwhile stays. */
export function applyLabelDelta(current: readonly string[], delta: LabelDelta): string[] {
  const removed = new Set(delta.remove);
  const next = current.filter((name) => !removed.has(name));
  for (const name of delta.add) if (!next.includes(name)) next.push(name);
  return next;
}

const sameSet = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((name) => b.includes(name));

/** A timeout or 5xx on a call that is never repeated blindly, or a success whose body was unreadable. */
export function isUncertain(error: unknown): error is ApiError {
  return (
    error instanceof ApiError &&
    (error.ambiguous ||
      (error.kind === 'invalid_response' && error.status !== undefined && error.status < 300))
  );
}

/** One field of an edit re-checked on the item as it is now: what to write, or undefined when it holds. */
type FieldCheck<F extends keyof ItemEdit> = (
  item: Issue | MergeRequest,
  wanted: NonNullable<ItemEdit[F]>,
  delta: LabelDelta | undefined,
) => { value: NonNullable<Edit[F]>; said: string } | undefined;

/**
 * How every field of an `ItemEdit` is re-checked and written. Typed over all of its fields: a new
 * field does not compile until it is given here, so it can never be silently dropped.
 */
const EDIT_FIELDS: { [F in keyof Required<ItemEdit>]: FieldCheck<F> } = {
  labels: (item, wanted, delta) => {
    // Without a delta (not produced by the engine today) only add: never remove what nobody asked to.
    const next = applyLabelDelta(item.labels, delta ?? { add: wanted, remove: [] });
    if (sameSet(next, item.labels)) return undefined;
    return { value: next, said: `labels [${item.labels.join(', ')}] -> [${next.join(', ')}]` };
  },
  state_event: (item, wanted) => {
    if (wanted === 'close' && isOpenState(item.state)) return { value: 'close', said: 'closed' };
    if (wanted === 'reopen' && item.state === 'closed') return { value: 'reopen', said: 'reopened' };
    return undefined;
  },
};

function checkField<F extends keyof ItemEdit>(
  field: F,
  item: Issue | MergeRequest,
  wanted: ItemEdit[F],
  delta: LabelDelta | undefined,
  edit: Edit,
  said: string[],
): void {
  if (wanted === undefined) return;
  const change = EDIT_FIELDS[field](item, wanted as NonNullable<ItemEdit[F]>, delta);
  if (!change) return;
  edit[field] = change.value;
  said.push(change.said);
}

/**
 * `issues.update` / `mergeRequests.update`: labels (as a delta on the current set: the v3 API
 * replaces the whole set, so writing the planned set would undo a human's concurrent edit), and
 * close or reopen (only when the state still needs it).
 */
export async function updateItem(
  ctx: CallContext,
  args: CallArgs['issues.update'] | CallArgs['mergeRequests.update'],
  delta: LabelDelta | undefined,
): Promise<CallResult> {
  const item = await readItem(ctx, args);
  const edit: Edit = {};
  const said: string[] = [];
  for (const field of Object.keys(EDIT_FIELDS) as (keyof ItemEdit)[])
    checkField(field, item, args.edit[field], delta, edit, said);
  if (Object.keys(edit).length === 0) {
    const why = args.edit.state_event ? `it is ${item.state}` : `labels already [${item.labels.join(', ')}]`;
    return skipped(`nothing to change on re-read: ${why}`);
  }
  await writeItem(ctx, args, edit);
  return done(said.join('; '));
}

async function findUserId(ctx: CallContext, username: string): Promise<number | undefined> {
  const wanted = username.toLowerCase();
  for await (const user of ctx.client.users.list({ username }))
    if (user.username.toLowerCase() === wanted) return user.id;
  return undefined;
}

/** Composite: the username is resolved to an id (`GET /users?username=`), then `assignee_id` is written. */
export async function assignItem(
  ctx: CallContext,
  args: CallArgs['issues.assign'] | CallArgs['mergeRequests.assign'],
): Promise<CallResult> {
  const item = await readItem(ctx, args);
  if (args.username === null) {
    if (!item.assignee) return skipped('nobody is assigned');
    // docs/api-v3.md#issues does not say how to unassign; real 8.x servers clear the assignee for an id of no
    // user, and `0` is what their clients send.
    await writeItem(ctx, args, { assignee_id: 0 });
    return done(`unassigned @${item.assignee.username}`);
  }
  const userId = await findUserId(ctx, args.username);
  if (userId === undefined)
    return failed('cannot assign', `no user named @${args.username} on the server`, false);
  if (item.assignee?.id === userId) return skipped(`already assigned to @${item.assignee.username}`);
  await writeItem(ctx, args, { assignee_id: userId });
  return done(`assigned to @${args.username}`);
}

/** Composite: the target path is resolved to a project id (`GET /projects/:path`), then the issue moves. */
export async function moveIssue(ctx: CallContext, args: CallArgs['issues.move']): Promise<CallResult> {
  const target = await ctx.client.projects.get(args.to_project);
  const issue = await ctx.client.issues.get(args.project, args.issue_id);
  if (issue.project_id === target.id) return skipped(`already in ${args.to_project}`);
  try {
    const moved = await ctx.client.issues.move(args.project, args.issue_id, target.id);
    return done(`moved to ${args.to_project} as issue ${moved.id}`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 400 && /originates from/i.test(error.serverText ?? ''))
      return skipped(`already in ${args.to_project}`);
    if (!isUncertain(error)) throw error;
    // A move closes the original (docs/server-behaviour.md#issue-move): closed on re-read means the move landed.
    const after = await ctx.client.issues.get(args.project, args.issue_id);
    if (after.state === 'closed')
      return done(`moved to ${args.to_project} (the answer was lost; re-read shows the original closed)`);
    return failed('the move did not happen (re-read shows the original still open)', error.message, true);
  }
}

export async function subscription(ctx: CallContext, args: Target, subscribe: boolean): Promise<CallResult> {
  const { issues, mergeRequests } = ctx.client;
  const change = isIssue(args)
    ? subscribe
      ? await issues.subscribe(args.project, args.issue_id)
      : await issues.unsubscribe(args.project, args.issue_id)
    : subscribe
      ? await mergeRequests.subscribe(args.project, args.merge_request_id)
      : await mergeRequests.unsubscribe(args.project, args.merge_request_id);
  // 304: the server says it already holds.
  if (!change.changed) return skipped(subscribe ? 'already subscribed' : 'not subscribed');
  return done(subscribe ? 'subscribed' : 'unsubscribed');
}

/**
 * Comments: never twice. Before posting, the item's notes are listed and the post is skipped when
 * one carries the planned marker; a lost answer is resolved the same way (a POST is never repeated
 * blindly: a second note would show and fire the note hook again).
 */
export async function comment(
  ctx: CallContext,
  args: CallArgs['notes.createIssueNote'] | CallArgs['notes.createMergeRequestNote'],
  marker: string | undefined,
): Promise<CallResult> {
  const { client } = ctx;
  const wanted = marker ?? extractMarkers(args.body)[0];
  const landed = async (): Promise<boolean> => {
    const notes =
      'issue_id' in args
        ? client.notes.listIssueNotes(args.project, args.issue_id)
        : client.notes.listMergeRequestNotes(args.project, args.merge_request_id);
    for await (const note of notes) {
      // A marker counts only in the bot's own notes: anyone can paste one into a comment.
      if (ctx.bot && !isBotUser(ctx.bot, note.author)) continue;
      if (wanted ? extractMarkers(note.body).includes(wanted) : note.body === args.body) return true;
    }
    return false;
  };
  if (await landed()) return skipped('this comment is already posted');
  try {
    if ('issue_id' in args) await client.notes.createIssueNote(args.project, args.issue_id, args.body);
    else await client.notes.createMergeRequestNote(args.project, args.merge_request_id, args.body);
    return done('commented');
  } catch (error) {
    if (!isUncertain(error)) throw error;
    if (await landed()) return done('commented (the answer was lost; the re-read found the comment)');
    return failed('the comment did not land (re-read)', error.message, true);
  }
}

/** A commit status: skipped when the head already carries it (same state; same text once finished). */
/** Pending and running statuses are updated in place by later posts; finished ones never change. */
const isUnfinished = (state: string): boolean => state === 'pending' || state === 'running';

/**
 * Whether real servers take `to` over an unfinished status of the same name as an in-place update.
 * 8.x's state machine enqueues (to pending) only a new status and runs (to running) only a pending
 * one, so pending over pending or running, and running over running, are refused with 400.
 */
const updatesInPlace = (from: string, to: string): boolean =>
  to === 'running' ? from === 'pending' : to !== 'pending';

export async function postStatus(ctx: CallContext, args: CallArgs['statuses.create']): Promise<CallResult> {
  const { client } = ctx;
  // A repository rule's status is marked here, whatever its text (statuses.ts): the rule cannot
  // leave the mark out, and with a trust the status never counts.
  const { project, sha, repository, ...rest } = args;
  const description = repository ? markRepositoryStatus(args.description) : args.description;
  const posted = { ...rest, ...(description !== undefined ? { description } : {}) };
  const current = async () => {
    const all = [];
    // The bot's own statuses too, marked or not: one already standing is not posted again.
    for await (const status of client.statuses.listWithOwn(project, sha)) all.push(status);
    return latestByName(all.filter((status) => args.ref === undefined || status.ref === args.ref)).find(
      (status) => status.name === args.name,
    );
  };
  const holds = (status: Awaited<ReturnType<typeof current>>): boolean =>
    status?.status === args.state && (status.description ?? null) === (description ?? null);

  const before = await current();
  if (holds(before)) return skipped(`${args.name} is already ${args.state} on ${args.sha.slice(0, 8)}`);
  // A new text for an unfinished status the server will not update in place (a summary status
  // blocked for another reason: pending over pending): the old one is finished first, as canceled
  // (its row keeps the old text in the history), so the new one starts a new row. Without this the
  // old reason stayed on the merge request after it no longer held.
  if (before && isUnfinished(before.status) && !updatesInPlace(before.status, args.state)) {
    try {
      await client.statuses.create(project, sha, {
        state: 'canceled',
        name: args.name,
        ...(args.ref !== undefined ? { ref: args.ref } : {}),
        ...(repository ? { description: markRepositoryStatus(undefined) } : {}),
      });
    } catch (error) {
      if (!isUncertain(error)) throw error;
      const after = await current();
      if (after && isUnfinished(after.status))
        return failed('the superseded status was not finished (re-read)', error.message, true);
    }
  }
  try {
    await client.statuses.create(project, sha, posted);
    return done(`${args.name}: ${args.state} on ${sha.slice(0, 8)}`);
  } catch (error) {
    if (!isUncertain(error)) throw error;
    if (holds(await current()))
      return done(`${args.name}: ${args.state} (the answer was lost; the re-read found it)`);
    return failed('the status did not land (re-read)', error.message, true);
  }
}
