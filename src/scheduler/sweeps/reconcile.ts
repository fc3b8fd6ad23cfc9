/**
 * Reconciliation: hooks get lost (real servers drop a delivery on a refused connection and never
 * retry it, docs/server-behaviour.md#hook-delivery), so every interval the open issues and merge requests updated since
 * the last successful run are evaluated again, each through the same item processor as a hook
 * (rules/item/process-item.ts: fresh read, engine, executor, decision). A lost delivery then costs at
 * most one interval.
 *
 * Listings are ordered by `updated_at`, newest first, and paging stops at the first item older
 * than the window, so a run costs the pages of what changed, not of every open item. The window
 * starts at the project's last successful run (the time it started, so changes made during a run
 * fall in the next window), minus an overlap for clock differences between server and bot; a
 * project never reconciled looks back one interval. The last success moves only when every item
 * of the project was evaluated: a failure means the next run covers the same window again,
 * which the level-triggered engine makes harmless.
 */
import type { StateStore } from '../../state/index.ts';
import { messageOf, pagesFor, type SweepLog, type SweepRunOptions } from '../types.ts';
import type { ItemKind, ItemProcessorFn, Trigger } from '../../rules/index.ts';
import type { Client } from '../../api/index.ts';

/** The store key of a project's last successful reconciliation. */
export const reconcileKey = (project: string): string => `reconcile:${project}`;

export const DEFAULT_OVERLAP_MS = 2 * 60_000;

export interface ReconcileDeps {
  client: { issues: Pick<Client['issues'], 'list'>; mergeRequests: Pick<Client['mergeRequests'], 'list'> };
  store: Pick<StateStore, 'lastSuccess' | 'setLastSuccess'>;
  processItem: ItemProcessorFn;
  now: () => number;
  log: SweepLog;
}

export interface ReconcileOptions extends SweepRunOptions {
  projects: readonly string[];
  /** How far a project never reconciled looks back: the sweep's interval. */
  lookbackMs: number;
  overlapMs?: number;
  /** Evaluate, but leave the last-success times alone (a dry run). */
  dryRun?: boolean;
}

export interface ReconcileProjectReport {
  project: string;
  /** Start of the window (ISO 8601). */
  since: string;
  items: Partial<Record<ItemKind, number>>;
  pages: number;
  evaluated: number;
  failed: number;
  error?: string;
}

export interface ReconcileReport {
  sweep: 'reconcile';
  dryRun: boolean;
  projects: ReconcileProjectReport[];
  evaluated: number;
  failed: number;
  aborted: boolean;
}

interface Updated {
  id: number;
  project_id: number;
  created_at: string;
  updated_at: string;
}

const KIND_SCOPE: Record<ItemKind, string> = { issue: 'issues', merge_request: 'merge requests' };

export async function runReconcile(deps: ReconcileDeps, options: ReconcileOptions): Promise<ReconcileReport> {
  const { store, log } = deps;
  const dryRun = options.dryRun ?? false;
  const overlap = options.overlapMs ?? DEFAULT_OVERLAP_MS;
  const report: ReconcileReport = {
    sweep: 'reconcile',
    dryRun,
    projects: [],
    evaluated: 0,
    failed: 0,
    aborted: false,
  };

  for (const project of options.projects) {
    if (options.signal?.aborted) {
      report.aborted = true;
      break;
    }
    const startedAt = deps.now();
    const since = (store.lastSuccess(reconcileKey(project)) ?? startedAt - options.lookbackMs) - overlap;
    const projectReport: ReconcileProjectReport = {
      project,
      since: new Date(since).toISOString(),
      items: {},
      pages: 0,
      evaluated: 0,
      failed: 0,
    };
    report.projects.push(projectReport);
    try {
      for (const kind of ['issue', 'merge_request'] as const)
        await reconcileKind(project, kind, since, projectReport);
    } catch (error) {
      projectReport.error = messageOf(error);
      log.error({ sweep: 'reconcile', project, err: error }, 'reconcile: listing failed');
    }
    report.evaluated += projectReport.evaluated;
    report.failed += projectReport.failed;
    const complete = projectReport.error === undefined && projectReport.failed === 0 && !report.aborted;
    if (complete && !dryRun) await store.setLastSuccess(reconcileKey(project), startedAt);
  }
  return report;

  async function reconcileKind(
    project: string,
    kind: ItemKind,
    since: number,
    projectReport: ReconcileProjectReport,
  ) {
    const filter = { state: 'opened', order_by: 'updated_at', sort: 'desc' } as const;
    const listing: AsyncIterable<Updated> =
      kind === 'issue'
        ? deps.client.issues.list(project, filter)
        : deps.client.mergeRequests.list(project, filter);
    let seen = 0;
    for await (const item of listing) {
      seen++;
      // Newest first: the first older item ends the window, and leaving the loop stops the paging.
      if (Date.parse(item.updated_at) < since) break;
      if (options.signal?.aborted) {
        report.aborted = true;
        break;
      }
      const trigger: Trigger = {
        kind,
        // Created inside the window: its open may be the delivery that was lost.
        action: Date.parse(item.created_at) >= since ? 'open' : 'update',
        byBot: false,
      };
      try {
        await deps.processItem({ type: kind, projectId: item.project_id, id: item.id }, [trigger]);
        projectReport.evaluated++;
      } catch (error) {
        projectReport.failed++;
        log.warn(
          { sweep: 'reconcile', project, item: `${kind}:${item.id}`, err: error },
          'reconcile: evaluation failed',
        );
      }
      options.onProgress?.({
        sweep: 'reconcile',
        scope: `${project} ${KIND_SCOPE[kind]}`,
        items: seen,
        pages: pagesFor(seen),
      });
    }
    projectReport.items[kind] = seen;
    projectReport.pages += pagesFor(seen);
  }
}
