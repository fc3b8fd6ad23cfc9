import { describe, expect, it } from 'vitest';
import type { ItemRef } from '../../src/events/hints.ts';
import { coalesce, createPipeline, type HintResolver } from '../../src/receiver/pipeline.ts';
import type { Trigger } from '../../src/rules/engine/snapshot.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import type { StateStore } from '../../src/state/store.ts';
import { fixture } from '../events/fixtures.ts';

class Transient extends Error {}

async function setup(
  options: {
    debounceMs?: number;
    queueLimit?: number;
    concurrency?: number;
    process?: (item: ItemRef, triggers: Trigger[]) => Promise<void>;
    resolver?: Partial<HintResolver>;
    store?: StateStore;
  } = {},
) {
  const store = options.store ?? createMemoryStore();
  await store.open();
  const runs: { key: string; triggers: Trigger[] }[] = [];
  let inFlight = 0;
  let maxInFlightPerItem = 0;
  const perItem = new Map<string, number>();
  const pipeline = createPipeline({
    store,
    bot: { username: 'hookbot', id: 99 },
    debounceMs: options.debounceMs ?? 0,
    queueLimit: options.queueLimit,
    concurrency: options.concurrency,
    isTransient: (e) => e instanceof Transient,
    retryDelayMs: () => 5,
    resolver: {
      mergeRequestsForBranch: async (projectId, branch) =>
        branch === 'ms-viewport' ? [{ type: 'merge_request', projectId, id: 99 }] : [],
      mergeRequestsForCommit: async () => [],
      ...options.resolver,
    },
    process: async (item, triggers) => {
      const key = `${item.type}:${item.id}`;
      perItem.set(key, (perItem.get(key) ?? 0) + 1);
      maxInFlightPerItem = Math.max(maxInFlightPerItem, perItem.get(key)!);
      inFlight++;
      try {
        await (options.process?.(item, triggers) ?? new Promise((r) => setTimeout(r, 1)));
        runs.push({ key, triggers });
      } finally {
        inFlight--;
        perItem.set(key, perItem.get(key)! - 1);
      }
    },
  });
  const deliver = async (name: string, patch: (body: any) => void = () => undefined) => {
    const body = fixture(name);
    patch(body);
    const accepted = await store.accept({
      key: `${name}:${JSON.stringify(body)}`,
      kind: body.object_kind,
      receivedAt: Date.now(),
      headers: {},
      body,
    });
    if (!accepted.duplicate) pipeline.wake(store.pending().find((e) => e.id === accepted.id)!);
    return accepted;
  };
  return { store, pipeline, runs, deliver, stats: () => ({ inFlight, maxInFlightPerItem }) };
}

describe('processing pipeline', () => {
  it('coalesces a burst for one MR into one evaluation', async () => {
    const s = await setup({ debounceMs: 30 });
    await s.deliver('merge_request.json');
    await s.deliver('merge_request-update.json');
    await s.pipeline.idle();
    expect(s.runs).toHaveLength(1);
    expect(s.runs[0]?.triggers).toEqual([
      {
        kind: 'merge_request',
        action: 'update',
        byBot: false,
        events: [
          { name: 'merge_request.open', byBot: false },
          { name: 'merge_request.update', byBot: false },
        ],
      },
    ]);
    expect(s.store.pending()).toEqual([]);
  });

  it('keeps notes apart in a burst (a note may be a command)', async () => {
    const s = await setup({ debounceMs: 30 });
    await s.deliver('merge_request-update.json');
    await s.deliver('note-merge_request.json', (b) => {
      b.project_id = 14;
      b.merge_request.id = 99;
    });
    await s.pipeline.idle();
    expect(s.runs).toHaveLength(1);
    expect(s.runs[0]?.triggers.map((t) => t.kind)).toEqual(['merge_request', 'note']);
  });

  it('never runs one item twice at once; events during a run cause one more run', async () => {
    let release: () => void = () => undefined;
    let first = true;
    const s = await setup({
      process: () =>
        first
          ? new Promise<void>((r) => {
              first = false;
              release = r;
            })
          : Promise.resolve(),
    });
    await s.deliver('issue.json');
    await new Promise((r) => setTimeout(r, 10));
    await s.deliver('issue-close.json');
    await s.deliver('issue-confidential.json');
    await new Promise((r) => setTimeout(r, 10));
    release();
    await s.pipeline.idle();
    expect(s.runs).toHaveLength(2);
    expect(s.stats().maxInFlightPerItem).toBe(1);
  });

  it('turns a push into runs for the open MRs of its branch', async () => {
    const s = await setup();
    await s.deliver('push.json', (b) => (b.ref = 'refs/heads/ms-viewport'));
    await s.pipeline.idle();
    expect(s.runs).toEqual([
      {
        key: 'merge_request:99',
        triggers: [{ kind: 'push', byBot: false, events: [{ name: 'push', byBot: false }] }],
      },
    ]);
  });

  it('marks events caused by the bot user, so rules can ignore them', async () => {
    const s = await setup();
    await s.deliver('note-issue.json', (b) => {
      b.user.username = 'hookbot';
      b.object_attributes.author_id = 99;
    });
    await s.pipeline.idle();
    expect(s.runs[0]?.triggers[0]).toMatchObject({ kind: 'note', byBot: true });
  });

  it('holds at most queueLimit deliveries in memory; the rest wait in the inbox and all get processed', async () => {
    const s = await setup({ queueLimit: 2, concurrency: 1 });
    let maxDepth = 0;
    const deliveries = [];
    for (let i = 0; i < 8; i++) {
      deliveries.push(await s.deliver('issue.json', (b) => (b.object_attributes.id = 1000 + i)));
      maxDepth = Math.max(maxDepth, s.pipeline.depth());
    }
    await s.pipeline.idle();
    // wake() stops taking at the limit; resume() pulls the rest once room frees up.
    s.pipeline.resume();
    await s.pipeline.idle();
    expect(maxDepth).toBeLessThanOrEqual(2);
    expect(new Set(s.runs.map((r) => r.key)).size).toBe(8);
    expect(s.store.pending()).toEqual([]);
  });

  it('retries an item run that failed transiently and marks the delivery processed only after', async () => {
    let failures = 2;
    const s = await setup({
      process: async () => {
        if (failures-- > 0) throw new Transient('503');
      },
    });
    await s.deliver('issue.json');
    await s.pipeline.idle();
    expect(s.runs).toHaveLength(1);
    expect(failures).toBe(-1);
    expect(s.store.pending()).toEqual([]);
  });

  it('processes what a crashed run left in the inbox after a restart', async () => {
    const store = createMemoryStore();
    await store.open();
    for (const id of [1, 2, 3]) {
      const body = fixture('issue.json');
      body.object_attributes.id = id;
      await store.accept({ key: `k${id}`, kind: 'issue', receivedAt: 0, headers: {}, body });
    }
    const s = await setup({ store });
    s.pipeline.resume();
    await s.pipeline.idle();
    expect(s.runs.map((r) => r.key).sort()).toEqual(['issue:1', 'issue:2', 'issue:3']);
    expect(store.pending()).toEqual([]);
  });

  it('lets a payload it cannot read go, without blocking the rest', async () => {
    const s = await setup();
    await s.deliver('issue.json', (b) => (b.object_attributes = 'broken'));
    await s.deliver('issue-close.json', (b) => (b.object_attributes.id = 7));
    await s.pipeline.idle();
    expect(s.runs.map((r) => r.key)).toEqual(['issue:7']);
    expect(s.store.pending()).toEqual([]);
  });
});

describe('coalescing triggers', () => {
  const t = (kind: Trigger['kind'], action?: Trigger['action'], byBot = false): Trigger => ({
    kind,
    byBot,
    ...(action ? { action } : {}),
  });
  const e = (name: string, byBot = false) => ({ name, byBot });
  it.each([
    [
      'names the latest event and keeps every event of the burst',
      [t('issue', 'update'), t('issue', 'close')],
      [{ ...t('issue', 'close'), events: [e('issue.update'), e('issue.close')] }],
    ],
    [
      'keeps an open in the burst',
      [t('issue', 'open'), t('issue', 'update')],
      [{ ...t('issue', 'update'), events: [e('issue.open'), e('issue.update')] }],
    ],
    [
      'keeps an MR opened and its first status a moment later',
      [t('merge_request', 'open'), t('status')],
      [{ ...t('status'), events: [e('merge_request.open'), e('status.changed')] }],
    ],
    [
      'counts as the bot only if all were, and keeps who caused each event',
      [t('issue', 'update', true), t('issue', 'update')],
      [{ ...t('issue', 'update'), events: [e('issue.update', true), e('issue.update')] }],
    ],
    [
      'keeps each event once',
      [t('issue', 'update'), t('issue', 'update'), t('issue', 'update')],
      [{ ...t('issue', 'update'), events: [e('issue.update')] }],
    ],
    [
      'folds an already coalesced trigger (a run put back after a failure) without losing its events',
      [{ ...t('status'), events: [e('merge_request.open'), e('status.changed')] }, t('push')],
      [{ ...t('push'), events: [e('merge_request.open'), e('status.changed'), e('push')] }],
    ],
    [
      'keeps every note',
      [t('note'), t('issue', 'update'), t('note')],
      [{ ...t('issue', 'update'), events: [e('issue.update')] }, t('note'), t('note')],
    ],
  ])('%s', (_name, input, output) => {
    expect(coalesce(input)).toEqual(output);
  });
});
