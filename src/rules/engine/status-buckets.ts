/**
 * Where a required commit status stands, in the four buckets the `statuses` condition, the merge
 * actions' safety checks and the merge watch all judge by: one definition, so they never disagree.
 */
import type { CommitStatusSnapshot } from './snapshot.ts';

export type StatusBucket = 'passed' | 'running' | 'failed' | 'missing';

/** Where one required status stands. A status that is absent is `missing`, never passed. */
export function classifyStatus(status: CommitStatusSnapshot | undefined): StatusBucket {
  if (!status) return 'missing';
  switch (status.status) {
    case 'success':
      return 'passed';
    case 'pending':
    case 'running':
    case 'created':
      return 'running';
    case 'failed':
      // The server's own pipeline lets a build marked allow_failure fail without failing.
      return status.allow_failure ? 'passed' : 'failed';
    default:
      // canceled, skipped, or anything this version does not know: never a pass.
      return 'failed';
  }
}
