import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/state/group-commit.ts';

/** A write the test completes by hand, recording what each call received. */
function manualWriter() {
  const calls: { items: number[]; finish: (error?: Error) => void }[] = [];
  const write = (items: number[]) =>
    new Promise<void>((resolve, reject) =>
      calls.push({ items, finish: (error) => (error === undefined ? resolve() : reject(error)) }),
    );
  return { calls, write };
}

/** Settles what is settleable now: pending timers of the window (0 ms here) and promise callbacks. */
const turn = () => new Promise((resolve) => setTimeout(resolve, 5));

function track(promise: Promise<void>) {
  const state = { settled: 'pending' as 'pending' | 'resolved' | 'rejected' };
  promise.then(
    () => (state.settled = 'resolved'),
    () => (state.settled = 'rejected'),
  );
  return state;
}

describe('group commit', () => {
  it('writes items submitted together in one batch and resolves each only after that write', async () => {
    const { calls, write } = manualWriter();
    const commit = new GroupCommit<number>({ windowMs: 1, maxBatch: 100, write });
    const states = [1, 2, 3].map((n) => track(commit.submit(n)));
    await turn();
    expect(calls.map((c) => c.items)).toEqual([[1, 2, 3]]);
    expect(states.map((s) => s.settled)).toEqual(['pending', 'pending', 'pending']);
    calls[0]?.finish();
    await turn();
    expect(states.map((s) => s.settled)).toEqual(['resolved', 'resolved', 'resolved']);
    expect(commit.batches).toBe(1);
  });

  it('gathers what arrives during a write into the next batch, written when the first is done', async () => {
    const { calls, write } = manualWriter();
    const commit = new GroupCommit<number>({ windowMs: 0, maxBatch: 100, write });
    const first = track(commit.submit(1));
    await turn();
    const later = [2, 3, 4].map((n) => track(commit.submit(n)));
    await turn();
    expect(calls.map((c) => c.items)).toEqual([[1]]);
    calls[0]?.finish();
    await turn();
    expect(first.settled).toBe('resolved');
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3, 4]]);
    expect(later.map((s) => s.settled)).toEqual(['pending', 'pending', 'pending']);
    calls[1]?.finish();
    await turn();
    expect(later.map((s) => s.settled)).toEqual(['resolved', 'resolved', 'resolved']);
  });

  it('splits a batch at maxBatch items', async () => {
    const written: number[][] = [];
    const commit = new GroupCommit<number>({
      windowMs: 0,
      maxBatch: 2,
      write: async (items) => void written.push(items),
    });
    await Promise.all([1, 2, 3, 4, 5].map((n) => commit.submit(n)));
    expect(written).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('barrier resolves only once every item submitted before it is written', async () => {
    const { calls, write } = manualWriter();
    const commit = new GroupCommit<number>({ windowMs: 0, maxBatch: 1, write });
    void commit.submit(1);
    void commit.submit(2);
    const barrier = track(commit.barrier());
    await turn();
    calls[0]?.finish();
    await turn();
    expect(barrier.settled).toBe('pending');
    calls[1]?.finish();
    await turn();
    expect(barrier.settled).toBe('resolved');
    await expect(
      new GroupCommit<number>({ windowMs: 0, maxBatch: 1, write }).barrier(),
    ).resolves.toBeUndefined();
  });

  it('a failed write rejects its items, the queued ones and every later submit with the same error', async () => {
    const { calls, write } = manualWriter();
    const commit = new GroupCommit<number>({ windowMs: 0, maxBatch: 1, write });
    const first = commit.submit(1);
    const queued = commit.submit(2);
    await turn();
    const failure = new Error('ENOSPC: no space left on device');
    calls[0]?.finish(failure);
    await expect(first).rejects.toBe(failure);
    await expect(queued).rejects.toBe(failure);
    await expect(commit.submit(3)).rejects.toBe(failure);
    await expect(commit.barrier()).rejects.toBe(failure);
    expect(calls).toHaveLength(1);
  });

  it('an exclusive task runs after the write in flight, alone, and takes over the queued items', async () => {
    const { calls, write } = manualWriter();
    const commit = new GroupCommit<number>({ windowMs: 0, maxBatch: 100, write });
    const inFlight = track(commit.submit(1));
    await turn();
    const queued = [2, 3].map((n) => track(commit.submit(n)));
    const taken: number[][] = [];
    let finishTask = () => {};
    const task = track(
      commit.exclusive(
        (items) =>
          new Promise<void>((resolve) => {
            taken.push(items);
            finishTask = resolve;
          }),
      ),
    );
    await turn();
    expect(taken).toEqual([]);
    calls[0]?.finish();
    await turn();
    expect(inFlight.settled).toBe('resolved');
    expect(taken).toEqual([[2, 3]]);
    const duringTask = track(commit.submit(4));
    await turn();
    expect(calls).toHaveLength(1);
    expect(queued.map((s) => s.settled)).toEqual(['pending', 'pending']);
    finishTask();
    await turn();
    expect([...queued, task].map((s) => s.settled)).toEqual(['resolved', 'resolved', 'resolved']);
    expect(calls.map((c) => c.items)).toEqual([[1], [4]]);
    calls[1]?.finish();
    await turn();
    expect(duringTask.settled).toBe('resolved');
  });

  it('a failed exclusive task fails the items it took over and every later submit', async () => {
    const commit = new GroupCommit<number>({ windowMs: 5, maxBatch: 100, write: async () => {} });
    const queued = commit.submit(1);
    const failure = new Error('rename failed');
    await expect(
      commit.exclusive(async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    await expect(queued).rejects.toBe(failure);
    await expect(commit.submit(2)).rejects.toBe(failure);
  });

  it('a between task runs after the write in flight, leaves the queued items to the next write, and returns its result', async () => {
    const { calls, write } = manualWriter();
    const commit = new GroupCommit<number>({ windowMs: 0, maxBatch: 100, write });
    const order: string[] = [];
    const inFlight = track(commit.submit(1));
    await turn();
    const queued = [2, 3].map((n) => track(commit.submit(n)));
    const between = commit.between(async () => {
      order.push(`between ran with ${calls.length} write(s) started`);
      return 'switched';
    });
    await turn();
    expect(order).toEqual([]);
    calls[0]?.finish();
    await expect(between).resolves.toBe('switched');
    await turn();
    expect(inFlight.settled).toBe('resolved');
    expect(order).toEqual(['between ran with 1 write(s) started']);
    // The queued items were not taken: they go in the next write, after the task.
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3]]);
    expect(queued.map((s) => s.settled)).toEqual(['pending', 'pending']);
    calls[1]?.finish();
    await turn();
    expect(queued.map((s) => s.settled)).toEqual(['resolved', 'resolved']);
  });

  it('a failing between task fails the queued items and every later submit', async () => {
    const commit = new GroupCommit<number>({ windowMs: 5, maxBatch: 100, write: async () => {} });
    const queued = commit.submit(1);
    const failure = new Error('rename failed');
    await expect(
      commit.between(async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    await expect(queued).rejects.toBe(failure);
    await expect(commit.submit(2)).rejects.toBe(failure);
  });

  it('fail() from outside rejects the queued items, later submits, barriers and tasks with the error', async () => {
    const { calls, write } = manualWriter();
    const commit = new GroupCommit<number>({ windowMs: 0, maxBatch: 1, write });
    const inFlight = commit.submit(1);
    const queued = commit.submit(2);
    await turn();
    const failure = new Error('compaction failed');
    commit.fail(failure);
    await expect(queued).rejects.toBe(failure);
    await expect(commit.submit(3)).rejects.toBe(failure);
    await expect(commit.barrier()).rejects.toBe(failure);
    await expect(commit.between(async () => 1)).rejects.toBe(failure);
    // The write in flight still settles as the disk answers; nothing more is written.
    calls[0]?.finish();
    await expect(inFlight).resolves.toBeUndefined();
    expect(calls).toHaveLength(1);
  });
});
