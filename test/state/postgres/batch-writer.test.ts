/**
 * The PostgreSQL store's group commit: what is submitted in one event-loop turn is written as one
 * batch, results go back in order, a failed batch fails its own items only, and with two in flight a
 * second batch is written while the first waits. An item's deadline tells its caller in time even
 * when the batch ahead of it never comes back (a connection that died silently).
 */
import { describe, expect, it } from 'vitest';
import { BatchWriter } from '../../../src/state/postgres/batch-writer.ts';

/** A write that waits until released, recording each batch it was given. */
function gatedWrite() {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const write = async (items: number[]) => {
    batches.push(items);
    await new Promise<void>((resolve) => gates.push(resolve));
    if (items.includes(-1)) throw new Error('refused');
    return items.map((n) => n * 10);
  };
  const releaseAll = () => gates.splice(0).forEach((open) => open());
  return { batches, gates, write, releaseAll };
}

const until = async (probe: () => boolean) => {
  while (!probe()) await new Promise((resolve) => setImmediate(resolve));
};

describe('BatchWriter', () => {
  it('one batch per event-loop turn, results in order, and one batch at a time by default', async () => {
    const g = gatedWrite();
    const writer = new BatchWriter(g.write, 100);
    const first = [1, 2, 3].map((n) => writer.submit(n));
    await until(() => g.batches.length === 1);
    const second = [4, 5].map((n) => writer.submit(n));
    // The second turn's items wait for the first batch.
    await new Promise((resolve) => setImmediate(resolve));
    expect(g.batches).toEqual([[1, 2, 3]]);
    g.releaseAll();
    expect(await Promise.all(first)).toEqual([10, 20, 30]);
    await until(() => g.batches.length === 2);
    g.releaseAll();
    expect(await Promise.all(second)).toEqual([40, 50]);
  });

  it('with two in flight, the next batch is written while the first waits; a failure fails its own items', async () => {
    const g = gatedWrite();
    const writer = new BatchWriter(g.write, 100, 2);
    const first = [1, -1].map((n) => writer.submit(n));
    await until(() => g.batches.length === 1);
    const second = [7, 8].map((n) => writer.submit(n));
    await until(() => g.batches.length === 2);
    expect(g.batches).toEqual([
      [1, -1],
      [7, 8],
    ]);
    g.releaseAll();
    await expect(Promise.all(first)).rejects.toThrow('refused');
    expect(await Promise.all(second)).toEqual([70, 80]);
    await writer.idle();
  });

  it('a deadline: the caller is told in time; an item still waiting is never written, one on the wire is waited for by idle', async () => {
    const g = gatedWrite();
    const writer = new BatchWriter(g.write, 100);
    const timedOut = () => new Error('no commit in time');
    const onWire = writer.submit(1, { ms: 20, error: timedOut });
    await until(() => g.batches.length === 1);
    // Behind a batch that never comes back (the gate stays shut): waits in the queue.
    const waiting = writer.submit(2, { ms: 20, error: timedOut });
    await expect(onWire).rejects.toThrow('no commit in time');
    await expect(waiting).rejects.toThrow('no commit in time');
    expect(writer.unwritten).toBe(1); // the batch on the wire, not the dropped item
    let idle = false;
    const settled = writer.idle().then(() => (idle = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false);
    g.releaseAll();
    await settled;
    // The dropped item never reached a batch; the next one is written alone.
    const next = writer.submit(3);
    await until(() => g.batches.length === 2);
    g.releaseAll();
    expect(await next).toBe(30);
    expect(g.batches).toEqual([[1], [3]]);
  });
});
