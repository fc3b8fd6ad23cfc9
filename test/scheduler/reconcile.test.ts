/**
 * Reconciliation against the sandbox: the open items updated since the last successful run are
 * evaluated again (as a lost hook would have had them evaluated), older ones are not even paged
 * through, and the last success moves only when the whole project was done.
 */
import { describe, expect, it } from 'vitest';
import type { ItemProcessorFn } from '../../src/rules/item/process-item.ts';
import { reconcileKey, runReconcile, type ReconcileReport } from '../../src/scheduler/sweeps/reconcile.ts';
import { quietLog } from '../../src/scheduler/types.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { DAY, issueAged, makeWorld, type World } from './world.ts';

const sandbox = useSandbox();

const TRIAGE_RULE = `
rules:
  - name: label bug reports
    on: [issue.open, issue.update]
    if: [ { title: { matches: '(?i)\\bbug\\b' } }, { labels: { none: [bug] } } ]
    do: [ { label: { add: [bug] } } ]
`;

async function labelsOf(world: World): Promise<Map<string, string[]>> {
  const labels = new Map<string, string[]>();
  for await (const issue of world.admin.issues.list(world.project.id)) labels.set(issue.title, issue.labels);
  return labels;
}

const listingCalls = (world: World): number =>
  world.client.http.stats.byRoute.get('GET /projects/:id/issues') ?? 0;

describe('reconcile', () => {
  it('evaluates the items updated since the last success, stops paging at the first older one, and moves the last success', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'reconcile1', rules: TRIAGE_RULE });
    // 120 issues untouched for days (more than a page), then 3 whose hooks were lost.
    for (let i = 0; i < 120; i++) await issueAged(world, `old bug ${i}`, 3);
    for (let i = 0; i < 3; i++) await issueAged(world, `new bug ${i}`, 0);
    await world.store.setLastSuccess(reconcileKey(world.path), Date.now() - 60 * 60_000);
    const started = Date.now();

    const report = (await world.sweeps.run('reconcile')) as ReconcileReport;

    expect(report).toMatchObject({ evaluated: 3, failed: 0 });
    expect(report.projects[0]).toMatchObject({ pages: 2, evaluated: 3 });
    const labels = await labelsOf(world);
    for (let i = 0; i < 3; i++) expect(labels.get(`new bug ${i}`)).toEqual(['bug']);
    expect([...labels].filter(([title, l]) => title.startsWith('old') && l.length > 0)).toEqual([]);
    // Newest first, and the first older issue ended it: one page of issues, not two.
    expect(listingCalls(world)).toBe(1);
    expect(world.store.lastSuccess(reconcileKey(world.path))).toBeGreaterThanOrEqual(started);
  });

  it('looks back one interval when the project was never reconciled', async () => {
    const world = await makeWorld(sandbox().sb, {
      prefix: 'reconcile2',
      rules: TRIAGE_RULE,
      settings: { reconcileLookbackMs: DAY },
    });
    await issueAged(world, 'bug from two days ago', 2);
    await issueAged(world, 'bug from an hour ago', 1 / 24);

    const report = (await world.sweeps.run('reconcile')) as ReconcileReport;

    expect(report.evaluated).toBe(1);
    const labels = await labelsOf(world);
    expect(labels.get('bug from an hour ago')).toEqual(['bug']);
    expect(labels.get('bug from two days ago')).toEqual([]);
  });

  it('keeps the window when an evaluation fails, so the next run covers it again', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'reconcile3', rules: TRIAGE_RULE });
    await issueAged(world, 'bug one', 0);
    await issueAged(world, 'bug two', 0);
    const lastSuccess = Date.now() - 60 * 60_000;
    await world.store.setLastSuccess(reconcileKey(world.path), lastSuccess);
    const seen: number[] = [];
    const flaky: ItemProcessorFn = async (item) => {
      seen.push(item.id);
      if (seen.length === 1) throw new Error('503 Service Unavailable');
    };

    const report = await runReconcile(
      { client: world.client, store: world.store, processItem: flaky, now: Date.now, log: quietLog },
      { projects: [world.path], lookbackMs: 60_000 },
    );

    expect(report).toMatchObject({ evaluated: 1, failed: 1 });
    expect(seen).toHaveLength(2);
    expect(world.store.lastSuccess(reconcileKey(world.path))).toBe(lastSuccess);
  });

  it('treats an item created inside the window as a missed open', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'reconcile4', rules: TRIAGE_RULE });
    await world.store.setLastSuccess(reconcileKey(world.path), Date.now() - 60 * 60_000);
    const fresh = await world.admin.issues.create(world.project.id, { title: 'created now' });
    const old = await issueAged(world, 'created long ago', 30);
    await world.admin.issues.update(world.project.id, old.id, { title: 'created long ago, edited now' });
    const triggers = new Map<number, string | undefined>();

    await runReconcile(
      {
        client: world.client,
        store: world.store,
        processItem: async (item, [trigger]) => void triggers.set(item.id, trigger?.action),
        now: Date.now,
        log: quietLog,
      },
      { projects: [world.path], lookbackMs: 60_000 },
    );

    expect(triggers).toEqual(
      new Map([
        [fresh.id, 'open'],
        [old.id, 'update'],
      ]),
    );
  });
});
