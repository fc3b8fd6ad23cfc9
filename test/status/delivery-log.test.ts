import { describe, expect, it } from 'vitest';
import { createDeliveryLog } from '../../src/status/delivery-log.ts';

describe('createDeliveryLog', () => {
  const fill = (size: number, count: number) => {
    let clock = 1_000;
    const log = createDeliveryLog(size, () => clock++);
    for (let i = 0; i < count; i++) log.record('accepted', { kind: `kind-${i}`, status: 202, ackMs: i });
    return log;
  };

  const cases: { name: string; size: number; count: number; kinds: string[] }[] = [
    { name: 'empty', size: 3, count: 0, kinds: [] },
    { name: 'fewer than the size, newest first', size: 3, count: 2, kinds: ['kind-1', 'kind-0'] },
    { name: 'exactly the size', size: 3, count: 3, kinds: ['kind-2', 'kind-1', 'kind-0'] },
    { name: 'past the size: the oldest go', size: 3, count: 7, kinds: ['kind-6', 'kind-5', 'kind-4'] },
    { name: 'size one keeps the last', size: 1, count: 4, kinds: ['kind-3'] },
  ];
  for (const { name, size, count, kinds } of cases)
    it(name, () => {
      expect(
        fill(size, count)
          .list()
          .map((entry) => entry.kind),
      ).toEqual(kinds);
    });

  it('keeps outcome, status, timing and the time of the answer; kind only when known', () => {
    const log = createDeliveryLog(5, () => 42);
    log.record('unauthorized', { status: 401, ackMs: 0.5 });
    expect(log.list()).toEqual([{ at: 42, outcome: 'unauthorized', status: 401, ackMs: 0.5 }]);
  });

  it('hands out copies: a caller cannot change the log', () => {
    const log = fill(2, 1);
    log.list()[0]!.outcome = 'changed';
    expect(log.list()[0]!.outcome).toBe('accepted');
  });

  it.each([0, -1, 1.5])('refuses size %s', (size) => {
    expect(() => createDeliveryLog(size)).toThrow(RangeError);
  });
});
