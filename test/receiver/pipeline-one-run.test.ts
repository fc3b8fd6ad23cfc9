/**
 * One item, one run at a time in the pipeline (issue 29): the bookkeeping after a run must not
 * forget a run of the same item that started meanwhile, or a third event starts a second run of
 * the item beside it. Driven by gates (a delivery's `markProcessed` held, a run held), not by time.
 */
import { describe, expect, it } from 'vitest';
import type { ItemRef } from '../../src/events/hints.ts';
import { createPipeline } from '../../src/receiver/pipeline.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { fixture } from '../events/fixtures.ts';
import { waitFor } from '../helpers/wait-for.ts';

interface Gate {
  promise: Promise<void>;
  open: () => void;
}

function gate(): Gate {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('one run per item in the pipeline', () => {
  it('a run that starts while the one before is still being marked processed is never run beside', async () => {
    const store = createMemoryStore();
    await store.open();
    // The first delivery's markProcessed is held: the end of run 1 waits there.
    const marking = gate();
    let markCalls = 0;
    const markProcessed = store.markProcessed.bind(store);
    const pendingDeliveries = store.pendingDeliveries.bind(store);

    let resolved = 0;
    let inside = 0;
    let most = 0;
    let started = 0;
    const runGates: Gate[] = [gate(), gate(), gate()];
    runGates[0]!.open(); // run 1 goes through at once
    const pipeline = createPipeline({
      store: {
        pendingDeliveries,
        async markProcessed(id) {
          if (++markCalls === 1) await marking.promise;
          await markProcessed(id);
        },
      },
      bot: { username: 'hookbot', id: 99 },
      debounceMs: 0,
      // Every push names the same merge request; `resolved` counts the answers given.
      resolver: {
        mergeRequestsForBranch: async (projectId) => {
          resolved++;
          return [{ type: 'merge_request', projectId, id: 99 }];
        },
        mergeRequestsForCommit: async () => [],
      },
      process: async (_item: ItemRef) => {
        const mine = started++;
        inside++;
        most = Math.max(most, inside);
        try {
          await runGates[Math.min(mine, 2)]!.promise;
        } finally {
          inside--;
        }
      },
    });
    let n = 0;
    const deliver = async () => {
      const body = fixture('push.json');
      body.ref = 'refs/heads/ms-viewport';
      body.after = String(++n).padStart(40, 'a');
      const accepted = await store.accept({
        key: `k${n}`,
        kind: body.object_kind,
        receivedAt: Date.now(),
        headers: {},
        body,
      });
      pipeline.wake(store.pending().find((entry) => entry.id === accepted.id)!);
    };

    await deliver(); // run 1: done at once, then held in markProcessed
    await waitFor(() => (markCalls === 1 ? true : undefined), 5_000, 'run 1 to reach markProcessed');
    await deliver(); // run 2 of the same issue starts: held inside
    await waitFor(() => (started === 2 ? true : undefined), 5_000, 'run 2 to start');
    marking.open(); // run 1's bookkeeping ends while run 2 runs
    await waitFor(() => (markCalls >= 1 && store.pending().length === 1 ? true : undefined), 5_000);
    await deliver(); // must wait for run 2, not start beside it
    await waitFor(() => (resolved === 3 ? true : undefined), 5_000, 'the third push to be resolved');
    // A run started for it would have started in the microtasks that follow its resolution.
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toBe(2);
    runGates[1]!.open();
    runGates[2]!.open();
    await pipeline.idle();
    expect(most).toBe(1);
    expect(started).toBe(3);
    expect(store.pending()).toEqual([]);
  });
});
