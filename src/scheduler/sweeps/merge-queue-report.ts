/** What a run of the merge queue sweep reports (merge-queue.ts): per merge request, and counted. */
import type { CallReport, StatusBucket } from '../../rules/index.ts';

export type QueueOutcome =
  | 'waiting'
  | 'updated'
  | 'merged'
  /** Out at once: gone, closed, pushed by someone else, rule no longer holding. */
  | 'dropped'
  /** Out with a comment: conflict, failed status, timeout, target moving too often. */
  | 'removed'
  | 'would-update'
  | 'would-merge'
  | 'error';

export interface QueueItemReport {
  itemKey: string;
  project: string;
  queue: string;
  targetBranch: string;
  outcome: QueueOutcome;
  detail: string;
  statuses?: Record<string, StatusBucket>;
  call?: CallReport;
}

export interface MergeQueueReport {
  sweep: 'merge_queue';
  dryRun: boolean;
  queues: number;
  items: QueueItemReport[];
  counts: Record<QueueOutcome, number>;
  aborted: boolean;
}

export function emptyCounts(): Record<QueueOutcome, number> {
  return {
    waiting: 0,
    updated: 0,
    merged: 0,
    dropped: 0,
    removed: 0,
    'would-update': 0,
    'would-merge': 0,
    error: 0,
  };
}
