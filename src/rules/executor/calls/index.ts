/**
 * Every kind of API call a plan may hold, one file each: its key (two calls with the same key do the
 * same thing to the item, so a plan keeps one), whether it waits for a fresh evaluation (a call that
 * cannot be taken back, or that decides one), and how it is performed (re-read, then act only when
 * the effect does not hold yet). The table must name a handler for every `Op` of planned-call.ts:
 * the compiler refuses a call kind without one.
 */
import type { ApiCall, Op } from '../../engine/planned-call.ts';
import type { CallContext, CallHandler, CallResult } from '../types.ts';
import { issuesUpdate } from './issues-update.ts';
import { mergeRequestsUpdate } from './merge-requests-update.ts';
import { issuesAssign } from './issues-assign.ts';
import { mergeRequestsAssign } from './merge-requests-assign.ts';
import { notesCreateIssueNote } from './notes-create-issue-note.ts';
import { notesCreateMergeRequestNote } from './notes-create-merge-request-note.ts';
import { issuesMove } from './issues-move.ts';
import { issuesSubscribe } from './issues-subscribe.ts';
import { issuesUnsubscribe } from './issues-unsubscribe.ts';
import { mergeRequestsSubscribe } from './merge-requests-subscribe.ts';
import { mergeRequestsUnsubscribe } from './merge-requests-unsubscribe.ts';
import { statusesCreate } from './statuses-create.ts';
import { mergeRequestsMerge } from './merge-requests-merge.ts';
import { mergeRequestsMergeWhenBuildSucceeds } from './merge-requests-merge-when-build-succeeds.ts';
import { mergeRequestsCancelMergeWhenBuildSucceeds } from './merge-requests-cancel-merge-when-build-succeeds.ts';
import { mergeQueueEnqueue } from './merge-queue-enqueue.ts';
import { mergeQueueDequeue } from './merge-queue-dequeue.ts';

const HANDLERS: { [K in Op]: CallHandler<K> } = {
  'issues.update': issuesUpdate,
  'mergeRequests.update': mergeRequestsUpdate,
  'issues.assign': issuesAssign,
  'mergeRequests.assign': mergeRequestsAssign,
  'notes.createIssueNote': notesCreateIssueNote,
  'notes.createMergeRequestNote': notesCreateMergeRequestNote,
  'issues.move': issuesMove,
  'issues.subscribe': issuesSubscribe,
  'issues.unsubscribe': issuesUnsubscribe,
  'mergeRequests.subscribe': mergeRequestsSubscribe,
  'mergeRequests.unsubscribe': mergeRequestsUnsubscribe,
  'statuses.create': statusesCreate,
  'mergeRequests.merge': mergeRequestsMerge,
  'mergeRequests.mergeWhenBuildSucceeds': mergeRequestsMergeWhenBuildSucceeds,
  'mergeRequests.cancelMergeWhenBuildSucceeds': mergeRequestsCancelMergeWhenBuildSucceeds,
  'mergeQueue.enqueue': mergeQueueEnqueue,
  'mergeQueue.dequeue': mergeQueueDequeue,
};

/** The handler of a call's kind (typed for that kind). */
function handlerOf<K extends Op>(op: K): CallHandler<K> {
  return HANDLERS[op];
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

/** In a dry run, what the call would come to from the store alone (`CallHandler.dryRun`), if anything. */
export function dryRunCall(
  store: Pick<CallContext['store'], 'queued'>,
  itemKey: string,
  call: ApiCall,
): CallResult | undefined {
  return handlerOf(call.op).dryRun?.(store, itemKey, call as never);
}
