/**
 * `hookbot_hook_to_action_seconds` as docs/operations.md defines it: one sample per action that took
 * effect in an item run of deliveries, from the earliest acceptance among the deliveries it serves;
 * none for a sweep's run; a delivery accepted before the process remembered it is found in the inbox.
 */
import { describe, expect, it } from 'vitest';
import { createHookToAction } from '../../src/ops/hook-to-action.ts';
import { runInNewLogContext } from '../../src/ops/log-context.ts';

function clock(start: number) {
  const state = { at: start };
  return { now: () => state.at, set: (at: number) => (state.at = at) };
}

describe('hook to action', () => {
  it('measures each action from the earliest acceptance of the deliveries its item run serves', () => {
    const time = clock(10_000);
    const samples: number[] = [];
    const latency = createHookToAction({ observe: (s) => samples.push(s), now: time.now });
    latency.accepted('a');
    time.set(10_250);
    latency.accepted('b');
    time.set(11_500);
    runInNewLogContext({ delivery: 'a', deliveries: ['b', 'a'], item: 'issue:1:2' }, () => {
      latency.acted();
      time.set(11_700);
      latency.acted();
    });
    expect(samples).toEqual([1.5, 1.7]);
  });

  it('takes no sample outside an item run of deliveries (a sweep, or nothing)', () => {
    const samples: number[] = [];
    const latency = createHookToAction({ observe: (s) => samples.push(s) });
    latency.accepted('a');
    runInNewLogContext({ job: 'retries:20250301T140500Z-1' }, () => latency.acted());
    latency.acted();
    expect(samples).toEqual([]);
  });

  it("finds a delivery it does not remember in the store's inbox (accepted before a restart)", () => {
    const time = clock(50_000);
    const samples: number[] = [];
    const latency = createHookToAction({
      observe: (s) => samples.push(s),
      now: time.now,
      pending: () => [{ id: 'old', receivedAt: 20_000 }],
    });
    runInNewLogContext({ deliveries: ['old', 'old+again-1'] }, () => latency.acted());
    expect(samples).toEqual([30]);
  });

  it('remembers a bounded number of acceptances, oldest forgotten first', () => {
    const time = clock(0);
    const samples: number[] = [];
    const latency = createHookToAction({ observe: (s) => samples.push(s), now: time.now, limit: 2 });
    for (const id of ['1', '2', '3']) latency.accepted(id);
    time.set(1_000);
    runInNewLogContext({ deliveries: ['1'] }, () => latency.acted());
    runInNewLogContext({ deliveries: ['3'] }, () => latency.acted());
    expect(samples).toEqual([1]);
  });
});
