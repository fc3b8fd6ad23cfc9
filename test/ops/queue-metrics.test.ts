/**
 * The merge queue's metrics (src/ops/queue-metrics.ts): counters by closed label sets, and the
 * per-queue gauges read from the store's entries when scraped, at most 50 queues of their own.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/ops/metrics.ts';
import { MAX_QUEUE_SERIES } from '../../src/ops/queue-metrics.ts';
import type { QueueEntry } from '../../src/state/store.ts';

function entry(project: string, n: number, extra: Partial<QueueEntry> = {}): QueueEntry {
  return {
    itemKey: `merge_request:1:${project}-${n}`,
    project,
    projectId: 1,
    mrId: n,
    iid: n,
    targetBranch: 'master',
    queue: 'default',
    rule: 'ship',
    priority: 0,
    enqueuedAt: n,
    required: [],
    statusTimeoutMs: 1000,
    maxUpdates: 3,
    updates: 0,
    ...extra,
  };
}

const lines = async (metrics: ReturnType<typeof createMetrics>, name: string) =>
  (await metrics.text())
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));

describe('merge queue metrics', () => {
  it('count landings, the time to land, removals by code, cars by outcome and rounds; every value is there from the start', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    expect(await lines(metrics, 'hookbot_merge_queue_removed_total')).toContain(
      'hookbot_merge_queue_removed_total{reason="dequeue_command"} 0',
    );
    metrics.mergeQueue.landed('serial', 90);
    metrics.mergeQueue.landed('train', 4000);
    metrics.mergeQueue.removed('conflict');
    metrics.mergeQueue.removed('invented' as 'conflict');
    metrics.mergeQueue.carBuilt('timed_out');
    metrics.mergeQueue.round('train');
    const text = await metrics.text();
    expect(text).toContain('hookbot_merge_queue_landed_total{mode="serial"} 1');
    expect(text).toContain('hookbot_merge_queue_landed_total{mode="train"} 1');
    expect(text).toContain('hookbot_merge_queue_time_to_land_seconds_bucket{le="120",mode="serial"} 1');
    expect(text).toContain('hookbot_merge_queue_time_to_land_seconds_bucket{le="3600",mode="train"} 0');
    expect(text).toContain('hookbot_merge_queue_time_to_land_seconds_bucket{le="7200",mode="train"} 1');
    expect(text).toContain('hookbot_merge_queue_removed_total{reason="conflict"} 1');
    expect(text).toContain('hookbot_merge_queue_removed_total{reason="other"} 1');
    expect(text).toContain('hookbot_merge_queue_car_builds_total{outcome="timed_out"} 1');
    expect(text).toContain('hookbot_merge_queue_rounds_total{mode="train"} 1');
  });

  it('entries and trouble per queue are read from the store when scraped; entries that left are in no queue', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    let entries: QueueEntry[] = [
      entry('acme/web', 1),
      entry('acme/web', 2, { trouble: { since: 1, count: 3, error: 'no git credentials' } }),
      entry('acme/api', 3),
      entry('acme/api', 4, { left: { at: 1, sha: 'abc', reason: 'conflict' } }),
    ];
    metrics.watchMergeQueues(() => entries);
    expect(await lines(metrics, 'hookbot_merge_queue_entries')).toEqual([
      'hookbot_merge_queue_entries{project="acme/web",target="master",queue="default"} 2',
      'hookbot_merge_queue_entries{project="acme/api",target="master",queue="default"} 1',
    ]);
    expect(await lines(metrics, 'hookbot_merge_queue_trouble')).toEqual([
      'hookbot_merge_queue_trouble{project="acme/web",target="master",queue="default"} 1',
      'hookbot_merge_queue_trouble{project="acme/api",target="master",queue="default"} 0',
    ]);
    // Emptied: its series goes.
    entries = [entry('acme/api', 3)];
    expect(await lines(metrics, 'hookbot_merge_queue_entries')).toEqual([
      'hookbot_merge_queue_entries{project="acme/api",target="master",queue="default"} 1',
    ]);
  });

  it(`at most ${MAX_QUEUE_SERIES} queues have series of their own, those with the most entries; the rest are summed under (other)`, async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const entries: QueueEntry[] = [];
    // 60 queues: p00 with 3 entries, p01..p59 with 1; p59 in trouble.
    for (let p = 0; p < 60; p++) {
      const name = `g/p${String(p).padStart(2, '0')}`;
      const count = p === 0 ? 3 : 1;
      for (let n = 0; n < count; n++)
        entries.push(
          entry(name, p * 10 + n, p === 59 ? { trouble: { since: 1, count: 1, error: 'x' } } : {}),
        );
    }
    metrics.watchMergeQueues(() => entries);
    const shown = await lines(metrics, 'hookbot_merge_queue_entries');
    expect(shown).toHaveLength(MAX_QUEUE_SERIES + 1);
    expect(shown[0]).toBe('hookbot_merge_queue_entries{project="g/p00",target="master",queue="default"} 3');
    // p01..p49 have their own; p50..p59 (10 queues, one entry each) are summed.
    expect(shown).toContain('hookbot_merge_queue_entries{project="g/p49",target="master",queue="default"} 1');
    expect(shown.some((line) => line.includes('g/p50'))).toBe(false);
    expect(shown.at(-1)).toBe(
      'hookbot_merge_queue_entries{project="(other)",target="(other)",queue="(other)"} 10',
    );
    expect(await lines(metrics, 'hookbot_merge_queue_trouble')).toContain(
      'hookbot_merge_queue_trouble{project="(other)",target="(other)",queue="(other)"} 1',
    );
  });
});
