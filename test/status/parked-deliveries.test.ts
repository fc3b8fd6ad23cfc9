/**
 * A delivery parked unprocessed (issue 28: processes kept dying on it) is on the status page, with
 * its reason, first among what needs a look, and in `/status.json`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { NOW, RULES_STATE, SWEEPS, serveStatus, type Served } from './status-fixture.ts';

const REASON =
  'the process stopped during each of its last 2 attempts (it may be what stops it): parked, not tried again';

describe('GET /status: parked deliveries', () => {
  let served: Served;
  let id = '';
  beforeAll(async () => {
    const store = createMemoryStore({ now: () => NOW });
    await store.open();
    id = (
      await store.accept({
        key: 'poison',
        kind: 'Merge Request Hook',
        receivedAt: NOW - 60_000,
        headers: {},
        body: { object_kind: 'merge_request' },
      })
    ).id;
    await store.beginAttempt(id);
    await store.beginAttempt(id);
    await store.beginAttempt(id);
    await store.parkDelivery(id, REASON);
    served = await serveStatus({
      store,
      rules: { state: () => RULES_STATE },
      sweeps: SWEEPS,
      now: () => NOW,
    });
  });
  afterAll(() => served.close());

  it('the page lists it with its reason and says so at the top', async () => {
    const page = await (await fetch(`${served.url}/status`)).text();
    const section = /<section id="parked-deliveries">([\s\S]*?)<\/section>/.exec(page)?.[1] ?? '';
    expect(section).toContain('Merge Request Hook');
    expect(section).toContain(id);
    expect(section).toContain(REASON.replace(/'/g, '&#39;'));
    expect(page).toContain('1 delivery was parked after the process stopped during them');
  });

  it('/status.json has it', async () => {
    const body = (await (await fetch(`${served.url}/status.json`)).json()) as { parkedDeliveries: unknown };
    expect(body.parkedDeliveries).toEqual([
      {
        id,
        key: 'poison',
        kind: 'Merge Request Hook',
        receivedAt: NOW - 60_000,
        attempts: 3,
        reason: REASON,
        at: NOW,
      },
    ]);
  });
});
