/**
 * Taking back the bot's own arming of merge-when-build-succeeds (docs/rules.md#merge_when_build_succeeds).
 *
 * The bot arms the server's merge at one head, for one target branch, on a rule's judgment of that
 * merge request. The server then merges on its own, as the bot's user, when the head's build
 * succeeds. 8.x disarms it on a push to the source branch while the merge request is open, and
 * nowhere else: it stays armed across a close, a push while closed and a reopen, and across a change
 * of the target branch (red team of issue 36: a fork owner closed, pushed an unreviewed head,
 * reopened, and the server merged it into protected master as the bot; a developer retargeted a
 * merge request the bot armed for `staging` to protected `master`). So whenever the bot sees an
 * armed merge request it watches at another head or target than it armed for, it cancels the
 * server's merge at once, through the executor, before anything else is evaluated: a hook's run
 * (the reopen, the update that changed the target) and the merge watch's timer alike. A closed one
 * cannot be cancelled (the server answers 405): it stays watched, and its reopen is seen.
 */
import type { StateStore, WatchEntry } from '../../state/index.ts';
import type { CallReport, StoredCall } from '../executor/executor.ts';
import { runNow, type OutboxNowDeps } from '../executor/outbox-now.ts';
import type { PlannedCall } from '../engine/planned-call.ts';

/** What of the merge request decides (the snapshot's or the API's fields). */
export interface ArmedFacts {
  state: string;
  /** The head, null when unknown (the source branch is gone). */
  sha: string | null;
  target_branch: string;
  merge_when_build_succeeds: boolean;
  project_id: number;
  id: number;
}

const isOpen = (state: string): boolean => state === 'opened' || state === 'reopened';
const short = (sha: string | null): string => (sha ? sha.slice(0, 8) : 'none');

/** Why the arming no longer covers the merge request, or undefined while it does. */
export function armingOutgrown(entry: WatchEntry, mr: ArmedFacts): string | undefined {
  if (!isOpen(mr.state) || !mr.merge_when_build_succeeds) return undefined;
  if (mr.sha !== entry.headSha)
    return `armed at ${short(entry.headSha)}, the merge request is at ${short(mr.sha)} now (a push while it was closed is not disarmed by the server)`;
  if (entry.targetBranch !== undefined && mr.target_branch !== entry.targetBranch)
    return `armed for ${entry.targetBranch}, its target is ${mr.target_branch} now`;
  return undefined;
}

export interface DisarmDeps extends OutboxNowDeps {
  store: Pick<StateStore, 'watched' | 'putAction' | 'getAction'>;
  executor: OutboxNowDeps['executor'] & { readonly dryRun: boolean };
}

/**
 * Cancels the server's merge-when-build-succeeds of a watched merge request whose head or target is
 * not the one it was armed for; the report of the cancel, or undefined when nothing was to do. The
 * cancel unwatches it (the executor's handler), so the rule's evaluation that follows decides anew.
 */
export async function disarmIfOutgrown(
  deps: DisarmDeps,
  itemKey: string,
  project: string,
  mr: ArmedFacts,
): Promise<CallReport | undefined> {
  const entry = deps.store.watched().find((one) => one.itemKey === itemKey);
  if (!entry || deps.executor.dryRun) return undefined;
  const why = armingOutgrown(entry, mr);
  if (why === undefined) return undefined;
  return cancelServerMerge(deps, entry, project, mr, why);
}

/**
 * Cancels the server's merge-when-build-succeeds of watched `entry` (the bot's own taking back, no
 * rule's plan: no fresh check stops it), `why` said in the outbox and explain. The executor's
 * handler stops watching it once the server's merge cannot happen any more (cancelled, not armed,
 * merged); a closed one stays watched for its reopen.
 */
export function cancelServerMerge(
  deps: Omit<DisarmDeps, 'store'> & { store: Pick<StateStore, 'putAction' | 'getAction'> },
  entry: WatchEntry,
  project: string,
  mr: Pick<ArmedFacts, 'project_id' | 'id'>,
  why: string,
): Promise<CallReport> {
  const planned: PlannedCall = {
    action: 'merge_when_build_succeeds',
    rule: entry.rule,
    reason: `disarm: ${why}; the bot's arming covers only the head and target it judged`,
    call: {
      op: 'mergeRequests.cancelMergeWhenBuildSucceeds',
      args: { project: mr.project_id, merge_request_id: mr.id },
    },
  };
  const stored: StoredCall = {
    v: 1,
    planned,
    project,
    origin: 'disarm',
    trigger: { kind: 'merge_request', action: 'update', byBot: false },
  };
  return runNow(deps, entry.itemKey, stored);
}
