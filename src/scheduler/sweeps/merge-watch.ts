/**
 * The merge watch: merge requests that a rule armed (merge-when-build-succeeds) and that wait for
 * their required statuses. Each run reads, per watched merge request and nothing else:
 *
 *   1. `GET /projects/:id/merge_requests/:mr_id`: its state (closed or merged: dropped) and, on
 *      later 8.x servers (and the sandbox), its head `sha`;
 *   2. only on servers whose merge requests carry no `sha`: `GET .../repository/branches/:source`
 *      for the head (the watch entry keeps the project and id, not the source branch);
 *   3. `GET .../repository/commits/:pinned_sha/statuses` (one page: the latest per name).
 *
 * So a run costs 2 calls per watched merge request (3 on servers without `sha`), whatever the
 * number of merge requests in the projects. Only when a merge request is ready does the run make
 * more: the merge, carried out by the executor like any planned call (re-read, head pinned with
 * `sha`, an ambiguous answer re-read, never merged twice), and when the head moved, one fresh
 * evaluation by the engine (the new head gets its own verdict; usually: wait for its statuses).
 *
 * The merge goes through the outbox under the executor's id for that call, so a crash between
 * plan and merge leaves it to the retry sweep, and a merge planned meanwhile by a hook is the
 * same action, not a second one.
 */
import pLimit from 'p-limit';
import type { StateStore, WatchEntry } from '../../state/index.ts';
import { messageOf, type SweepLog, type SweepRunOptions } from '../types.ts';
import {
  actionIdOf,
  type CallReport,
  type Executor,
  type ItemProcessorFn,
  type PlannedCall,
  type StatusBucket,
  type StoredCall,
  type Trigger,
  cancelServerMerge,
  disarmIfOutgrown,
  runNow,
} from '../../rules/index.ts';
import { ApiError, isOpenState, type Client, type MergeRequest } from '../../api/index.ts';
import { requiredBuckets, sourceHead } from './head-statuses.ts';

export interface MergeWatchDeps {
  client: {
    mergeRequests: Pick<Client['mergeRequests'], 'get'>;
    branches: Pick<Client['branches'], 'get'>;
    statuses: Pick<Client['statuses'], 'list'>;
  };
  store: Pick<StateStore, 'watched' | 'watch' | 'unwatch' | 'putAction' | 'getAction'>;
  executor: Executor;
  /** Evaluates one item afresh (rules/item/process-item.ts), for a head that moved. */
  processItem: ItemProcessorFn;
  now: () => number;
  log: SweepLog;
}

export interface MergeWatchOptions extends SweepRunOptions {
  /** Only the merge requests of these `namespace/project` paths. */
  projects?: readonly string[];
  /** Merge requests checked at once. Default 4 (the API client bounds calls in flight anyway). */
  concurrency?: number;
}

export type WatchOutcome =
  /** Required statuses not all passed yet (or the merge is in the outbox, backing off). */
  | 'waiting'
  | 'merged'
  /** Closed, merged by someone, or gone: no longer watched. */
  | 'dropped'
  /** The head moved: no longer watched, evaluated again. */
  | 'reevaluated'
  /** The merge was refused for good (conflict...): parked, still watched until the head moves. */
  | 'blocked'
  /** Dry run: what would happen. */
  | 'would-merge'
  | 'would-reevaluate'
  | 'error';

export interface WatchItemReport {
  itemKey: string;
  project: string;
  mrId: number;
  rule: string;
  outcome: WatchOutcome;
  detail: string;
  /** Each required status of the pinned head, when read. */
  statuses?: Record<string, StatusBucket>;
  call?: CallReport;
}

export interface MergeWatchReport {
  sweep: 'merge_watch';
  dryRun: boolean;
  /** Entries checked this run. */
  watched: number;
  items: WatchItemReport[];
  counts: Record<WatchOutcome, number>;
  aborted: boolean;
}

const short = (sha: string): string => sha.slice(0, 8);

function emptyCounts(): Record<WatchOutcome, number> {
  return {
    waiting: 0,
    merged: 0,
    dropped: 0,
    reevaluated: 0,
    blocked: 0,
    'would-merge': 0,
    'would-reevaluate': 0,
    error: 0,
  };
}

export async function runMergeWatch(
  deps: MergeWatchDeps,
  options: MergeWatchOptions = {},
): Promise<MergeWatchReport> {
  const { client, store, executor, log } = deps;
  const dryRun = executor.dryRun;
  const wanted = options.projects && new Set(options.projects.map((p) => p.toLowerCase()));
  const entries = store.watched().filter((entry) => !wanted || wanted.has(entry.project.toLowerCase()));
  const report: MergeWatchReport = {
    sweep: 'merge_watch',
    dryRun,
    watched: 0,
    items: [],
    counts: emptyCounts(),
    aborted: false,
  };
  const limit = pLimit(options.concurrency ?? 4);
  const results: (WatchItemReport | undefined)[] = await Promise.all(
    entries.map((entry) =>
      limit(async () => {
        if (options.signal?.aborted) {
          report.aborted = true;
          return undefined;
        }
        // One run of the item at a time: a hook run or another sweep on it waits, and so does this.
        const item = await executor.runs
          .run(entry.itemKey, () => check(entry))
          .catch((error: unknown): WatchItemReport => ({
            ...base(entry),
            outcome: 'error',
            detail: messageOf(error),
          }));
        report.watched++;
        options.onProgress?.({
          sweep: 'merge_watch',
          scope: 'watched merge requests',
          items: report.watched,
          pages: 0,
        });
        return item;
      }),
    ),
  );
  for (const item of results) {
    if (!item) continue;
    report.items.push(item);
    report.counts[item.outcome]++;
    if (item.outcome === 'error')
      log.warn(
        { sweep: 'merge_watch', itemKey: item.itemKey, err: item.detail },
        'merge watch: check failed',
      );
  }
  return report;

  function base(entry: WatchEntry): Pick<WatchItemReport, 'itemKey' | 'project' | 'mrId' | 'rule'> {
    return { itemKey: entry.itemKey, project: entry.project, mrId: entry.mrId, rule: entry.rule };
  }

  async function check(entry: WatchEntry): Promise<WatchItemReport> {
    let mr: MergeRequest;
    try {
      mr = await client.mergeRequests.get(entry.project, entry.mrId);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        return drop(entry, 'the merge request is gone (404)');
      throw error;
    }
    if (!isOpenState(mr.state)) {
      // Closed while armed: the server keeps the arming (8.x cancels it on no close, and a push
      // while closed does not disarm it), so the merge request stays watched: at its reopen, the
      // bot sees whether it is still the head and target it armed for (rules/item/disarm.ts).
      if (mr.state === 'closed' && mr.merge_when_build_succeeds)
        return {
          ...base(entry),
          outcome: 'waiting',
          detail: `closed while armed at ${short(entry.headSha)}: watched, so that a reopen at another head or target cancels the server's merge`,
        };
      return drop(entry, `the merge request is ${mr.state}`);
    }
    const head = await sourceHead(client, mr);
    // Armed, at another head or target than the bot armed for: the server's merge is cancelled first.
    const disarmed = dryRun
      ? undefined
      : await disarmIfOutgrown({ store, executor, now: deps.now }, entry.itemKey, entry.project, {
          ...mr,
          sha: head,
        });
    if (disarmed)
      return headMoved(entry, mr, head, `${disarmed.reason.replace(/^disarm: /, '')}: ${disarmed.detail}`);
    if (head !== entry.headSha) return headMoved(entry, mr, head);

    const statuses = await requiredBuckets(client, mr, entry.headSha, entry.required);
    const pending = Object.entries(statuses).filter(([, bucket]) => bucket !== 'passed');
    if (pending.length > 0)
      return {
        ...base(entry),
        outcome: 'waiting',
        statuses,
        detail: `at ${short(entry.headSha)}: ${pending.map(([name, bucket]) => `${name} ${bucket}`).join(', ')}`,
      };
    return merge(entry, mr, statuses);
  }

  async function drop(entry: WatchEntry, why: string): Promise<WatchItemReport> {
    if (!dryRun) await store.unwatch(entry.itemKey);
    return { ...base(entry), outcome: 'dropped', detail: why };
  }

  /** `head`: the new head, null when the branch is gone, undefined when the executor found it moved. */
  async function headMoved(
    entry: WatchEntry,
    mr: MergeRequest,
    head: string | null | undefined,
    disarmed?: string,
  ): Promise<WatchItemReport> {
    const now = head === undefined ? 'a newer commit' : head === null ? 'no branch' : short(head);
    const detail = disarmed ?? `head moved: armed at ${short(entry.headSha)}, now ${now}`;
    if (dryRun)
      return { ...base(entry), outcome: 'would-reevaluate', detail: `${detail}; would evaluate again` };
    // Unwatched first: the new evaluation may arm the new head and watch it under the same key.
    await store.unwatch(entry.itemKey);
    const trigger: Trigger = { kind: 'merge_request', action: 'update', byBot: false };
    try {
      await deps.processItem({ type: 'merge_request', projectId: mr.project_id, id: mr.id }, [trigger]);
    } catch (error) {
      // Not evaluated (the server is away): watch the old head again, so the next run sees the
      // move again and retries. It can never merge: its head is not the branch's any more.
      await store.watch(entry);
      throw error;
    }
    return { ...base(entry), outcome: 'reevaluated', detail: `${detail}; not merged, evaluated again` };
  }

  async function merge(
    entry: WatchEntry,
    mr: MergeRequest,
    statuses: Record<string, StatusBucket>,
  ): Promise<WatchItemReport> {
    // Branch removal as the person who armed it asked, where the server shows it (later 8.x).
    const removeSource = (mr as Record<string, unknown>).should_remove_source_branch === true;
    const planned: PlannedCall = {
      action: 'merge',
      rule: entry.rule,
      reason: `merge watch: ${entry.required.join(', ')} passed at ${short(entry.headSha)}`,
      call: {
        op: 'mergeRequests.merge',
        args: {
          project: mr.project_id,
          merge_request_id: mr.id,
          sha: entry.headSha,
          ...(removeSource ? { should_remove_source_branch: true } : {}),
        },
      },
    };
    const id = actionIdOf(entry.itemKey, entry.rule, planned.call);
    if (dryRun)
      return {
        ...base(entry),
        outcome: 'would-merge',
        statuses,
        detail: `would merge at ${short(entry.headSha)}`,
      };

    const held = store.getAction(id);
    if (held?.parked)
      return { ...base(entry), outcome: 'blocked', statuses, detail: `merge parked: ${held.parked.reason}` };
    if (held && held.nextTryAt > deps.now())
      return {
        ...base(entry),
        outcome: 'waiting',
        statuses,
        detail: `merge in the outbox, next try ${new Date(held.nextTryAt).toISOString()}${held.lastError ? ` (${held.lastError})` : ''}`,
      };
    // Gated by the executor's fresh check: the rule that armed it must still hold on a fresh read
    // (its conditions but the pending statuses), the head be the pinned one, every required status passed.
    const stored: StoredCall = {
      v: 1,
      planned,
      project: entry.project,
      required: entry.required,
      origin: 'merge_watch',
      // Armed on a member's comment: that comment is replayed (the rule's gate holds on it).
      trigger: entry.trigger ?? { kind: 'merge_request', action: 'update', byBot: false },
    };
    const call = await runNow({ store, executor, now: deps.now }, entry.itemKey, stored);
    if (call.headMoved) return headMoved(entry, mr, undefined);
    if (call.status === 'withdrawn') {
      // The rule no longer holds (a label removed, a required status failed, work in progress...):
      // stop watching, and first cancel the server's merge where it was armed too (on_server), or it
      // would merge later on its own, whatever the merge request becomes (red team of issue 36).
      if (entry.onServer && mr.merge_when_build_succeeds)
        await cancelServerMerge({ store, executor, now: deps.now }, entry, entry.project, mr, call.detail);
      else await store.unwatch(entry.itemKey);
      return { ...base(entry), outcome: 'dropped', statuses, call, detail: call.detail };
    }
    if (call.status === 'done')
      return { ...base(entry), outcome: 'merged', statuses, call, detail: call.detail };
    if (call.status === 'skipped') {
      // Merged by another hand, or closed meanwhile: nothing left to watch.
      await store.unwatch(entry.itemKey);
      return { ...base(entry), outcome: 'dropped', statuses, call, detail: call.detail };
    }
    if (call.parked)
      return { ...base(entry), outcome: 'blocked', statuses, call, detail: `merge parked: ${call.parked}` };
    return {
      ...base(entry),
      outcome: 'waiting',
      statuses,
      call,
      detail: `merge not done: ${call.detail}; the retry sweep retries it`,
    };
  }
}
