/**
 * One item, one run at a time in a process (rules/executor/lock.ts): runs of one item wait for each
 * other, other items go on; a run's own calls go straight through; work a run starts that outlives
 * it (or that is started outside it) waits like any other; the pipeline's tryRun never waits.
 * Driven by gates, never by time. Across replicas: lock-fleet.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createItemRuns, outsideItemRuns } from '../../../src/rules/executor/lock.ts';

function gate() {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Lets every pending microtask and the next macrotask run. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('item runs in one process', () => {
  it('runs one item once at a time, in order, and other items beside it', async () => {
    const runs = createItemRuns();
    const order: string[] = [];
    const first = gate();
    const a1 = runs.run('issue:1:1', async () => {
      order.push('a1 in');
      await first.promise;
      order.push('a1 out');
    });
    const a2 = runs.run('issue:1:1', async () => void order.push('a2'));
    const b = runs.run('issue:1:2', async () => void order.push('b'));
    await b;
    await turn();
    expect(order).toEqual(['a1 in', 'b']);
    expect(runs.busy('issue:1:1')).toBe(true);
    first.open();
    await Promise.all([a1, a2]);
    expect(order).toEqual(['a1 in', 'b', 'a1 out', 'a2']);
    expect(runs.busy('issue:1:1')).toBe(false);
  });

  it("lets a run's own work on its item through (the executor's calls inside an item run)", async () => {
    const runs = createItemRuns();
    const seen: string[] = [];
    await runs.run('merge_request:1:7', async () => {
      seen.push('run');
      await runs.run('merge_request:1:7', async () => {
        await turn();
        seen.push('call');
      });
      seen.push('after');
    });
    expect(seen).toEqual(['run', 'call', 'after']);
  });

  it('makes work a run started but that outlives it, or work started outside runs, wait for the next run', async () => {
    const runs = createItemRuns();
    const order: string[] = [];
    let late: Promise<void> | undefined;
    const started = gate();
    await runs.run('issue:1:1', async () => {
      // Started inside the run, runs after it ended: it is not part of it.
      late = (async () => {
        await started.promise;
        await runs.run('issue:1:1', async () => void order.push('late'));
      })();
    });
    const second = gate();
    const holder = runs.run('issue:1:1', async () => {
      order.push('second in');
      started.open();
      await turn();
      await second.promise;
      order.push('second out');
    });
    await turn();
    await turn();
    expect(order).toEqual(['second in']);
    second.open();
    await holder;
    await late;
    expect(order).toEqual(['second in', 'second out', 'late']);

    // Started outside every run from inside one (a sweep woken by a hook's run): it waits too.
    const steps: string[] = [];
    const release = gate();
    const reached = gate();
    let woken: Promise<void> | undefined;
    const run = runs.run('issue:1:1', async () => {
      woken = outsideItemRuns(() => runs.run('issue:1:1', async () => void steps.push('woken')));
      steps.push('run');
      reached.open();
      await release.promise;
    });
    await reached.promise;
    await turn();
    await turn();
    expect(steps).toEqual(['run']);
    release.open();
    await run;
    await woken;
    expect(steps).toEqual(['run', 'woken']);
  });

  it('answers false at once from tryRun while the item is held, without running the work', async () => {
    const runs = createItemRuns();
    const held = gate();
    const holder = runs.run('issue:1:1', () => held.promise);
    let ran = false;
    expect(
      await runs.tryRun('issue:1:1', async () => {
        ran = true;
      }),
    ).toBe(false);
    expect(ran).toBe(false);
    expect(await runs.tryRun('issue:1:2', async () => void (ran = true))).toBe(true);
    expect(ran).toBe(true);
    held.open();
    await holder;
    // And a run waits for the pipeline's.
    const order: string[] = [];
    const pipelineRun = gate();
    const tried = runs.tryRun('issue:1:1', async () => {
      order.push('hook in');
      await pipelineRun.promise;
      order.push('hook out');
    });
    const sweep = runs.run('issue:1:1', async () => void order.push('sweep'));
    await turn();
    expect(order).toEqual(['hook in']);
    pipelineRun.open();
    expect(await tried).toBe(true);
    await sweep;
    expect(order).toEqual(['hook in', 'hook out', 'sweep']);
  });

  it('keeps the holdings of two ItemRuns apart', async () => {
    const one = createItemRuns();
    const other = createItemRuns();
    const held = gate();
    const order: string[] = [];
    const holder = other.run('issue:1:1', async () => {
      order.push('other in');
      await held.promise;
      order.push('other out');
    });
    // A run of `one` does not count as holding the item in `other`.
    const nested = one.run('issue:1:1', () => other.run('issue:1:1', async () => void order.push('nested')));
    await turn();
    expect(order).toEqual(['other in']);
    held.open();
    await Promise.all([holder, nested]);
    expect(order).toEqual(['other in', 'other out', 'nested']);
  });
});
