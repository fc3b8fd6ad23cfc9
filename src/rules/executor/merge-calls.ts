/**
 * Merge safety, after marge-bot and Kodiak: re-read the merge request right before merging; merge
 * only the head that was evaluated (and pass that sha so the server refuses if it moves in the
 * last instant: 409); after a lost answer, re-read before anything else and never merge twice.
 */
import type { WatchEntry } from '../../state/index.ts';
import { commentTrigger } from './comment-trigger.ts';
import { isOpenState } from '../../api/index.ts';
import { done, failed, skipped, type CallContext, type CallResult } from './types.ts';
import type { CallArgs, MergeRequestTarget } from '../engine/planned-call.ts';
import { ApiError, type MergeOutcome, type MergeRequest } from '../../api/index.ts';

const short = (sha: string | null): string => (sha === null ? 'none' : sha.slice(0, 8));

/** The source branch's head: the MR's `sha` on later 8.x servers, else the branch (null when it is gone). */
async function headOf(ctx: CallContext, mr: MergeRequest): Promise<string | null> {
  if (mr.sha) return mr.sha;
  try {
    return (await ctx.client.branches.get(mr.source_project_id, mr.source_branch)).commit.id;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** `now`: the new head, null when the branch is gone, undefined when not known. */
function headMoved(planned: string, now: string | null | undefined): CallResult {
  const where = now === undefined ? 'a newer commit' : short(now);
  return {
    status: 'skipped',
    detail: `head moved: evaluated at ${short(planned)}, now ${where}; not merged, re-evaluate`,
    headMoved: true,
  };
}

/** What the merge calls need to know of the MR right before the call. */
interface MergeFacts {
  state: string;
  head: string | null;
  target_branch: string;
  work_in_progress: boolean;
  merge_when_build_succeeds: boolean;
}

/**
 * The MR's facts just before the call. When the fresh check has just evaluated the item, its read
 * IS the last one: reading state and head again would open a window in which a label or a status
 * changes unseen between the evaluation and the call. Without a fresh check, the MR is re-read.
 */
async function factsBeforeCall(
  ctx: CallContext,
  args: MergeRequestTarget & { sha: string },
): Promise<MergeFacts> {
  const fresh = ctx.fresh;
  if (fresh?.kind === 'merge_request' && fresh.id === args.merge_request_id && fresh.sha !== null)
    return {
      state: fresh.state,
      head: fresh.sha,
      target_branch: fresh.target_branch,
      work_in_progress: fresh.work_in_progress,
      merge_when_build_succeeds: fresh.merge_when_build_succeeds,
    };
  const mr = await ctx.client.mergeRequests.get(args.project, args.merge_request_id);
  return {
    state: mr.state,
    head: isOpenState(mr.state) ? await headOf(ctx, mr) : null,
    target_branch: mr.target_branch,
    work_in_progress: mr.work_in_progress,
    merge_when_build_succeeds: mr.merge_when_build_succeeds,
  };
}

/** An outcome when the MR must not be merged now, else its facts. */
async function recheck(
  ctx: CallContext,
  args: MergeRequestTarget & { sha: string },
): Promise<MergeFacts | CallResult> {
  const mr = await factsBeforeCall(ctx, args);
  if (mr.state === 'merged') return skipped('already merged');
  // `locked`: someone is merging it right now (real servers show it mid-merge).
  if (!isOpenState(mr.state)) return skipped(`the merge request is ${mr.state}`);
  if (mr.head !== args.sha) return headMoved(args.sha, mr.head);
  // Marked WIP since the evaluation: the plan is stale, and the server would refuse (405) anyway.
  if (mr.work_in_progress) return skipped('the merge request is work in progress now');
  return mr;
}

const isOutcome = (value: MergeFacts | CallResult): value is CallResult =>
  'status' in value && 'detail' in value;

async function ensureWatched(
  ctx: CallContext,
  args: CallArgs['mergeRequests.mergeWhenBuildSucceeds'],
  targetBranch?: string,
): Promise<string> {
  const required = ctx.stored.required;
  if (!required || required.length === 0) {
    // An empty list would let the watch merge at once: never watch without knowing what to wait for.
    ctx.log.warn(
      { itemKey: ctx.itemKey, rule: ctx.stored.planned.rule },
      'armed merge not watched: required statuses unknown',
    );
    return 'not watched: the required statuses are unknown';
  }
  const entry: WatchEntry = {
    itemKey: ctx.itemKey,
    project: ctx.stored.project,
    mrId: args.merge_request_id,
    headSha: args.sha,
    ...(targetBranch !== undefined ? { targetBranch } : {}),
    ...(args.on_server ? { onServer: true } : {}),
    rule: ctx.stored.planned.rule,
    required,
    since: ctx.now(),
  };
  // Armed on a member's comment: the watch's merge replays it (docs/rules.md#members-commands).
  const trigger = commentTrigger(ctx.stored.trigger);
  if (trigger) entry.trigger = trigger;
  await ctx.store.watch(entry);
  return `watching ${required.join(', ')}`;
}

/**
 * After an answer that says nothing sure (lost, 5xx, 200 without a merge): the re-read decides.
 * Merged: done. Armed (when arming): done and watched. Still open: it did not happen, and a retry
 * (which re-checks everything first) may try again. Unreadable or locked: ambiguous.
 */
async function resolveUncertain(
  ctx: CallContext,
  args: CallArgs['mergeRequests.merge'] | CallArgs['mergeRequests.mergeWhenBuildSucceeds'],
  arming: boolean,
  why: string,
): Promise<CallResult> {
  let mr: MergeRequest;
  try {
    mr = await ctx.client.mergeRequests.get(args.project, args.merge_request_id);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { status: 'ambiguous', detail: `${why}; the re-read failed too`, error: message, retryable: true };
  }
  if (mr.state === 'merged') {
    await ctx.store.unwatch(ctx.itemKey);
    return done(`merged (${why}; the re-read shows it merged)`);
  }
  if (arming && isOpenState(mr.state) && mr.merge_when_build_succeeds)
    return done(
      `armed (${why}; the re-read shows it armed); ${await ensureWatched(ctx, args, mr.target_branch)}`,
    );
  if (mr.state === 'locked')
    return {
      status: 'ambiguous',
      detail: `${why}; the merge is still in progress (locked)`,
      error: why,
      retryable: true,
    };
  return failed(`not merged (${why}; the re-read shows it ${mr.state})`, why, isOpenState(mr.state));
}

async function afterRefusal(
  ctx: CallContext,
  args: CallArgs['mergeRequests.merge'] | CallArgs['mergeRequests.mergeWhenBuildSucceeds'],
  outcome: Extract<MergeOutcome, { outcome: 'conflict' | 'not_mergeable' | 'sha_mismatch' }>,
): Promise<CallResult> {
  // 409 `SHA does not match HEAD of source branch: <sha>`: the head moved after our re-read.
  if (outcome.outcome === 'sha_mismatch')
    return headMoved(args.sha, /\b[0-9a-f]{40}\b/.exec(outcome.message)?.[0]);
  if (outcome.outcome === 'conflict')
    // A push that resolves it changes the head: a new evaluation plans a new merge.
    return failed('the branch does not merge cleanly', outcome.message, false);
  // 405: closed, merged meanwhile, or work in progress. Merged by someone else is the effect holding.
  const mr = await ctx.client.mergeRequests.get(args.project, args.merge_request_id);
  if (mr.state === 'merged') return skipped('already merged (by another hand)');
  return failed(
    `the server refuses to merge (it is ${mr.state}${mr.work_in_progress ? ', work in progress' : ''})`,
    outcome.message,
    false,
  );
}

export async function merge(ctx: CallContext, args: CallArgs['mergeRequests.merge']): Promise<CallResult> {
  const checked = await recheck(ctx, args);
  if (isOutcome(checked)) return checked;
  const outcome = await ctx.client.mergeRequests.merge(args.project, args.merge_request_id, {
    sha: args.sha,
    ...(args.should_remove_source_branch !== undefined
      ? { should_remove_source_branch: args.should_remove_source_branch }
      : {}),
    ...(args.merge_commit_message !== undefined ? { merge_commit_message: args.merge_commit_message } : {}),
  });
  switch (outcome.outcome) {
    case 'merged':
      await ctx.store.unwatch(ctx.itemKey);
      return done(`merged at ${short(args.sha)}`);
    case 'armed':
    case 'not_merged':
      return resolveUncertain(ctx, args, false, `the server answered ${outcome.mr.state} without merging`);
    case 'ambiguous':
      return resolveUncertain(ctx, args, false, `merge answer lost: ${outcome.error.message}`);
    default:
      return afterRefusal(ctx, args, outcome);
  }
}

export async function mergeWhenBuildSucceeds(
  ctx: CallContext,
  args: CallArgs['mergeRequests.mergeWhenBuildSucceeds'],
): Promise<CallResult> {
  const checked = await recheck(ctx, args);
  if (isOutcome(checked)) return checked;
  // The bot's own merge when the build succeeds: watched and merged by the merge watch, pinned to this
  // head, on the statuses the bot trusts; the server's merge is not armed (it would merge as the bot
  // whatever the merge request became: rules/actions/merge-when-build-succeeds.ts).
  if (!args.on_server) {
    const held = ctx.store.watched().find((entry) => entry.itemKey === ctx.itemKey);
    if (held?.headSha === args.sha && !held.onServer) return skipped(`already watched at ${short(args.sha)}`);
    return done(
      `the bot merges at ${short(args.sha)} when the build succeeds; ${await ensureWatched(ctx, args, checked.target_branch)}`,
    );
  }
  // A crash between arming and watching left it armed: make sure it is watched.
  if (checked.merge_when_build_succeeds)
    return skipped(`already armed; ${await ensureWatched(ctx, args, checked.target_branch)}`);
  const outcome = await ctx.client.mergeRequests.merge(args.project, args.merge_request_id, {
    sha: args.sha,
    merge_when_build_succeeds: true,
    ...(args.should_remove_source_branch !== undefined
      ? { should_remove_source_branch: args.should_remove_source_branch }
      : {}),
  });
  switch (outcome.outcome) {
    case 'armed':
      return done(`armed at ${short(args.sha)}; ${await ensureWatched(ctx, args, checked.target_branch)}`);
    case 'merged':
      // The build finished between evaluation and call: the server merged at once.
      await ctx.store.unwatch(ctx.itemKey);
      return done(`merged at once at ${short(args.sha)} (the build had finished)`);
    case 'not_merged':
      return resolveUncertain(ctx, args, true, `the server answered ${outcome.mr.state} without arming`);
    case 'ambiguous':
      return resolveUncertain(ctx, args, true, `answer lost: ${outcome.error.message}`);
    default:
      return afterRefusal(ctx, args, outcome);
  }
}

export async function cancelMergeWhenBuildSucceeds(
  ctx: CallContext,
  args: CallArgs['mergeRequests.cancelMergeWhenBuildSucceeds'],
): Promise<CallResult> {
  // The fresh check's read when there is one, for the same reason as for a merge: the evaluation
  // that planned the cancel is the last read before it.
  const fresh = ctx.fresh;
  const mr =
    fresh?.kind === 'merge_request' && fresh.id === args.merge_request_id
      ? fresh
      : await ctx.client.mergeRequests.get(args.project, args.merge_request_id);
  // The bot stops waiting to merge it only once the server's merge cannot happen either: cancelled,
  // not armed, or merged. A closed one the server keeps armed stays watched (its reopen is seen:
  // rules/item/disarm.ts), or a close in the instant before this call would leave it armed, unwatched.
  if (mr.state === 'merged') {
    await ctx.store.unwatch(ctx.itemKey);
    return skipped('the merge request is merged');
  }
  if (!mr.merge_when_build_succeeds) {
    // The bot's own merge when the build succeeds (its watch, no server arming): that is what stops.
    const watched = ctx.store.watched().some((entry) => entry.itemKey === ctx.itemKey);
    await ctx.store.unwatch(ctx.itemKey);
    return watched
      ? done('the bot no longer merges it when its build succeeds')
      : skipped('merge_when_build_succeeds is not set');
  }
  if (!isOpenState(mr.state))
    return skipped(`the merge request is ${mr.state}: kept watched until it is reopened`);
  try {
    const change = await ctx.client.mergeRequests.cancelMergeWhenBuildSucceeds(
      args.project,
      args.merge_request_id,
    );
    await ctx.store.unwatch(ctx.itemKey);
    return change.changed
      ? done('cancelled merge_when_build_succeeds')
      : skipped('merge_when_build_succeeds was not set');
  } catch (error) {
    // 405: merged or closed in between: kept watched (its reopen, or its merge, is seen).
    if (error instanceof ApiError && error.status === 405)
      return skipped('the merge request is no longer open: kept watched until it is reopened');
    throw error;
  }
}
