/**
 * The pipeline's side of poison deliveries (issue 28), in process on the memory store: what it
 * counts, what runs alone, what it parks, and what a clean stop gives back. The crash itself is
 * played by a child process in poison-deliveries.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createPipeline, type Pipeline } from '../../src/receiver/pipeline.ts';
import type { ItemRef } from '../../src/events/hints.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import type { StateStore } from '../../src/state/store.ts';
import { fixture } from '../events/fixtures.ts';
import { waitFor } from '../helpers/wait-for.ts';

const issueHook = (id: number) => {
  const body = fixture('issue.json');
  body.object_attributes.id = id;
  body.object_attributes.iid = id;
  return body;
};

async function accept(store: StateStore, id: number): Promise<string> {
  return (
    await store.accept({ key: `issue-${id}`, kind: 'issue', receivedAt: 0, headers: {}, body: issueHook(id) })
  ).id;
}

function pipelineOver(
  store: StateStore,
  process: (item: ItemRef) => Promise<void>,
  debounceMs = 0,
): Pipeline {
  return createPipeline({
    store,
    bot: { username: 'hookbot', id: 99 },
    debounceMs,
    concurrency: 4,
    resolver: { mergeRequestsForBranch: async () => [], mergeRequestsForCommit: async () => [] },
    process,
  });
}

describe('pipeline: attempts on deliveries', () => {
  it('counts one attempt per delivery before its work, and forgets it once processed', async () => {
    const store = createMemoryStore();
    await store.open();
    const id = await accept(store, 1);
    const seen: number[] = [];
    const pipeline = pipelineOver(store, async () => {
      seen.push(store.deliveryAttempts(id));
    });
    pipeline.resume();
    await pipeline.idle();
    expect(seen).toEqual([1]);
    expect(store.pending()).toEqual([]);
    expect(store.deliveryAttempts(id)).toBe(0);
  });

  it('suspects (an attempt that never finished) run alone, one after the other; none is parked', async () => {
    const store = createMemoryStore();
    await store.open();
    const ids = [];
    for (const n of [1, 2, 3, 4]) ids.push(await accept(store, n));
    // A process died with 1 and 3 in flight.
    await store.beginAttempt(ids[0]!);
    await store.beginAttempt(ids[2]!);
    let running = 0;
    const log: string[] = [];
    const pipeline = pipelineOver(store, async (item) => {
      running++;
      log.push(`start ${item.id} with ${running} running`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running--;
    });
    pipeline.resume();
    await pipeline.idle();
    expect(store.pending()).toEqual([]);
    expect(store.parkedDeliveries()).toEqual([]);
    // The suspects first, each alone; then the others, together.
    expect(log.slice(0, 2)).toEqual(['start 1 with 1 running', 'start 3 with 1 running']);
    expect(
      log
        .slice(2)
        .map((line) => line.split(' ')[1])
        .sort(),
    ).toEqual(['2', '4']);
  });

  it('a delivery past its attempts is parked, with the reason, and the others go on', async () => {
    const store = createMemoryStore();
    await store.open();
    const poison = await accept(store, 666);
    const other = await accept(store, 2);
    // The first attempt, and two runs alone: each ended with the process.
    await store.beginAttempt(poison);
    await store.beginAttempt(poison);
    await store.beginAttempt(poison);
    const processed: number[] = [];
    const pipeline = pipelineOver(store, async (item) => {
      processed.push(item.id);
    });
    pipeline.resume();
    await pipeline.idle();
    expect(processed).toEqual([2]);
    expect(store.pending()).toEqual([]);
    expect(store.parkedDeliveries()).toEqual([
      expect.objectContaining({
        id: poison,
        attempts: 4,
        reason:
          'the process stopped during each of its last 3 attempts (it may be what stops it): parked, not tried again',
      }),
    ]);
    expect(other).not.toBe(poison);
  });

  it('a suspect whose one run alone ended with the process (a kill from outside) runs alone once more and is processed', async () => {
    const store = createMemoryStore();
    await store.open();
    const id = await accept(store, 5);
    // The first attempt died with the process beside others, and its run alone met a kill -9 too.
    await store.beginAttempt(id);
    await store.beginAttempt(id);
    const processed: number[] = [];
    const pipeline = pipelineOver(store, async (item) => {
      processed.push(item.id);
    });
    pipeline.resume();
    await pipeline.idle();
    expect(processed).toEqual([5]);
    expect(store.pending()).toEqual([]);
    expect(store.parkedDeliveries()).toEqual([]);
  });

  it('a delivery another replica took over (no longer in this inbox) is left to it: not parsed, not processed here', async () => {
    const store = createMemoryStore();
    await store.open();
    const id = await accept(store, 7);
    const [entry] = store.pendingDeliveries();
    // Processed meanwhile by its holder: what this process was handed is no longer in its inbox.
    await store.markProcessed(id);
    const processed: number[] = [];
    const warnings: string[] = [];
    const pipeline = createPipeline({
      store,
      bot: { username: 'hookbot', id: 99 },
      debounceMs: 0,
      resolver: { mergeRequestsForBranch: async () => [], mergeRequestsForCommit: async () => [] },
      process: async (item) => {
        processed.push(item.id);
      },
      log: {
        info: () => undefined,
        warn: (_o, msg) => warnings.push(msg),
        error: (_o, msg) => warnings.push(msg),
      },
    });
    pipeline.wake(entry!);
    await pipeline.idle();
    expect(processed).toEqual([]);
    expect(warnings).toEqual([]);
    expect(store.parkedDeliveries()).toEqual([]);
  });

  it('a clean stop gives back the attempts it leaves unfinished', async () => {
    const store = createMemoryStore();
    await store.open();
    const id = await accept(store, 1);
    // A long coalescing window: the item run has not started when the stop comes.
    const pipeline = pipelineOver(store, async () => undefined, 60_000);
    pipeline.resume();
    await waitFor(() => store.deliveryAttempts(id) === 1 || undefined, 5_000, 'the attempt to be counted');
    await pipeline.stop();
    expect(store.pending().map((entry) => entry.id)).toEqual([id]);
    expect(store.deliveryAttempts(id)).toBe(0);
  });
});
