import { describe, expect, it } from 'vitest';
import { createReadiness } from '../../src/receiver/readiness.ts';

describe('createReadiness', () => {
  it('runs the checks at most once per TTL, and callers during a run share it', async () => {
    let runs = 0;
    let release: () => void = () => undefined;
    const clock = { now: 0 };
    const ready = createReadiness({
      checks: [
        { name: 'api', check: () => new Promise<void>((resolve) => ((runs += 1), (release = resolve))) },
      ],
      ttlMs: 5_000,
      now: () => clock.now,
    });
    const waiting = [ready(), ready(), ready()];
    release();
    expect(await Promise.all(waiting)).toEqual([true, true, true]);
    expect(runs).toBe(1);
    clock.now = 4_999;
    expect(await ready()).toBe(true);
    expect(runs).toBe(1);
    clock.now = 5_000;
    const next = ready();
    release();
    expect(await next).toBe(true);
    expect(runs).toBe(2);
  });

  it('answers false and logs which check failed and why', async () => {
    const logged: { obj: object; msg: string }[] = [];
    const ready = createReadiness({
      checks: [
        { name: 'state', check: async () => undefined },
        {
          name: 'api',
          check: async () => {
            throw new Error('401 Unauthorized');
          },
        },
      ],
      log: { warn: (obj, msg) => void logged.push({ obj, msg }) },
    });
    expect(await ready()).toBe(false);
    expect(logged).toEqual([
      { obj: { failures: [{ check: 'api', reason: '401 Unauthorized' }] }, msg: 'not ready' },
    ]);
  });
});
