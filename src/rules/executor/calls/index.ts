/**
 * Every kind of API call a plan may hold, one file each: its key (two calls with the same key do the
 * same thing to the item, so a plan keeps one), whether it waits for a fresh evaluation (a call that
 * cannot be taken back, or that decides one), and how it is performed (re-read, then act only when
 * the effect does not hold yet), and what the plan of a rules change says it would do. The table
 * must name a handler for every `Op` of planned-call.ts: the compiler refuses a call kind without one.
 */
import type { ApiCall, Op } from '../../engine/planned-call.ts';
import type { CallContext, CallHandler, CallResult } from '../types.ts';
import { itemUpdate } from './item-update.ts';
import { itemAssign } from './item-assign.ts';
import { notesCreate } from './notes-create.ts';
import { issuesMove } from './issues-move.ts';
import { itemSubscribe } from './item-subscribe.ts';
import { itemUnsubscribe } from './item-unsubscribe.ts';
import { statusesCreate } from './statuses-create.ts';
import { mergeRequestsMerge } from './merge-requests-merge.ts';
import { mergeRequestsMergeWhenBuildSucceeds } from './merge-requests-merge-when-build-succeeds.ts';
import { mergeRequestsCancelMergeWhenBuildSucceeds } from './merge-requests-cancel-merge-when-build-succeeds.ts';
import { mergeQueueEnqueue } from './merge-queue-enqueue.ts';
import { mergeQueueDequeue } from './merge-queue-dequeue.ts';

/**
 * A call kind missing here fails to compile with `Property '<op>' is missing in type ...`: write
 * its handler in a file of this folder and name it here. A kind on both items (`issues.x` and
 * `mergeRequests.x`) shares one handler, typed for both.
 */
const HANDLERS: { [K in Op]: CallHandler<K> } = {
  'issues.update': itemUpdate,
  'mergeRequests.update': itemUpdate,
  'issues.assign': itemAssign,
  'mergeRequests.assign': itemAssign,
  'notes.createIssueNote': notesCreate,
  'notes.createMergeRequestNote': notesCreate,
  'issues.move': issuesMove,
  'issues.subscribe': itemSubscribe,
  'mergeRequests.subscribe': itemSubscribe,
  'issues.unsubscribe': itemUnsubscribe,
  'mergeRequests.unsubscribe': itemUnsubscribe,
  'statuses.create': statusesCreate,
  'mergeRequests.merge': mergeRequestsMerge,
  'mergeRequests.mergeWhenBuildSucceeds': mergeRequestsMergeWhenBuildSucceeds,
  'mergeRequests.cancelMergeWhenBuildSucceeds': mergeRequestsCancelMergeWhenBuildSucceeds,
  'mergeQueue.enqueue': mergeQueueEnqueue,
  'mergeQueue.dequeue': mergeQueueDequeue,
};

/** The handler of a call's kind (typed for that kind). */
function handlerOf<K extends Op>(op: K): CallHandler<K> {
  const handler = HANDLERS[op] as CallHandler<K> | undefined;
  // A stored call of a kind this version does not know (an outbox written by a newer one).
  if (!handler)
    throw new Error(`no handler for the call kind "${op}" in src/rules/executor/calls/index.ts (HANDLERS)`);
  return handler;
}

/** Two calls with the same key do the same thing to the item (it is the same item throughout). */
export function callKey(call: ApiCall): string {
  return `${call.op}|${handlerOf(call.op).key(call as never)}`;
}

/** Whether the call is made only on a fresh evaluation that still plans it. */
export function needsFreshCheck(op: Op): boolean {
  return handlerOf(op).freshCheck;
}

/** Re-checks and performs the stored call. */
export function performCall(ctx: CallContext): Promise<CallResult> {
  const call = ctx.stored.planned.call;
  return handlerOf(call.op).perform(ctx, call as never);
}

/** What the plan of a rules change says the call would do (`CallHandler.effects`). */
export function callEffects(call: ApiCall, hideText: boolean): string[] {
  return handlerOf(call.op).effects(call as never, hideText);
}

/** In a dry run, what the call would come to from the store alone (`CallHandler.dryRun`), if anything. */
export function dryRunCall(
  store: Pick<CallContext['store'], 'queued'>,
  itemKey: string,
  call: ApiCall,
): CallResult | undefined {
  return handlerOf(call.op).dryRun?.(store, itemKey, call as never);
}
