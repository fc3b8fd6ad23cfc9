/**
 * The StateStore contract: one table of cases, run against every backend. A new backend adds one
 * row to `backends` and must pass every case unchanged.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createFileStore,
  createMemoryStore,
  createPostgresStore,
  StateError,
  type Delivery,
  type StateOptions,
  type StateStore,
} from '../../src/state/index.ts';
import { fakeClock, useTempDir, type FakeClock } from './temp-dir.ts';
import { postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../helpers/postgres.ts';

const dir = useTempDir();
const schema = useTestSchemas();

const backends: [string, (options: StateOptions) => StateStore][] = [
  ['file', (options) => createFileStore({ ...options, path: join(dir.path, 'data', 'hookbot.json') })],
  ['memory', (options) => createMemoryStore(options)],
  // Real PostgreSQL, a schema per test (test/helpers/postgres.ts says how to run it where it skips).
  ...(postgresAvailable
    ? [
        [
          'postgres',
          (options: StateOptions) =>
            createPostgresStore({ ...options, url: TEST_DATABASE_URL, schema: schema() }),
        ] as [string, (options: StateOptions) => StateStore],
      ]
    : []),
];

interface Ctx {
  store: StateStore;
  clock: FakeClock;
}

function delivery(key: string, body: unknown = { object_kind: 'issue', key }): Delivery {
  return { key, kind: 'Issue Hook', receivedAt: 1_000, headers: { 'x-gitlab-event': 'Issue Hook' }, body };
}

const action = (id: string, nextTryAt?: number) => ({
  id,
  itemKey: 'acme/web#1',
  rule: 'label-bugs',
  call: { method: 'PUT', path: '/projects/1/issues/1', body: { labels: 'bug' } },
  ...(nextTryAt === undefined ? {} : { nextTryAt }),
});

async function expectStateError(promise: Promise<unknown>, code: string): Promise<void> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StateError);
  expect((error as StateError).code).toBe(code);
}

type Case = [name: string, options: StateOptions, run: (ctx: Ctx) => Promise<void>];

const cases: Case[] = [
  [
    'accept gives each delivery a new id and pending lists them in acceptance order',
    {},
    async ({ store, clock }) => {
      const a = await store.accept(delivery('a'));
      const b = await store.accept(delivery('b'));
      expect(a.duplicate).toBe(false);
      expect(b.duplicate).toBe(false);
      expect(a.id).not.toBe(b.id);
      expect(store.pending()).toEqual([
        { ...delivery('a'), id: a.id, acceptedAt: clock.now },
        { ...delivery('b'), id: b.id, acceptedAt: clock.now },
      ]);
    },
  ],
  [
    'a key seen within the window is a duplicate: the first id comes back and nothing is added',
    { dedupTtlMs: 60_000 },
    async ({ store, clock }) => {
      const first = await store.accept(delivery('same'));
      clock.now += 59_999;
      expect(await store.accept(delivery('same', { other: 'body' }))).toEqual({
        id: first.id,
        duplicate: true,
      });
      expect(store.pending().map((e) => e.id)).toEqual([first.id]);
    },
  ],
  [
    'concurrent accepts of one key store it once',
    {},
    async ({ store }) => {
      const results = await Promise.all([store.accept(delivery('k')), store.accept(delivery('k'))]);
      expect(results.map((r) => r.duplicate)).toEqual([false, true]);
      expect(results[1]?.id).toBe(results[0]?.id);
      expect(store.pending()).toHaveLength(1);
    },
  ],
  [
    'a key is new again once its window has expired',
    { dedupTtlMs: 60_000 },
    async ({ store, clock }) => {
      const first = await store.accept(delivery('same'));
      await store.markProcessed(first.id);
      clock.now += 60_000;
      const again = await store.accept(delivery('same'));
      expect(again.duplicate).toBe(false);
      expect(again.id).not.toBe(first.id);
      expect(store.stats().dedupKeys).toBe(1);
    },
  ],
  [
    'markProcessed removes the delivery from pending, and its key still de-duplicates',
    {},
    async ({ store }) => {
      const a = await store.accept(delivery('a'));
      const b = await store.accept(delivery('b'));
      await store.markProcessed(a.id);
      expect(store.pending().map((e) => e.id)).toEqual([b.id]);
      expect(await store.accept(delivery('a'))).toEqual({ id: a.id, duplicate: true });
    },
  ],
  [
    'markProcessed of an unknown or already processed id changes nothing',
    {},
    async ({ store }) => {
      const a = await store.accept(delivery('a'));
      await store.markProcessed(a.id);
      await store.markProcessed(a.id);
      await store.markProcessed('no-such-id');
      expect(store.pending()).toEqual([]);
    },
  ],
  [
    'accept refuses with inbox_full once maxPending deliveries wait, and accepts again after processing',
    { maxPending: 2 },
    async ({ store }) => {
      const a = await store.accept(delivery('a'));
      await store.accept(delivery('b'));
      await expectStateError(store.accept(delivery('c')), 'inbox_full');
      await store.markProcessed(a.id);
      expect((await store.accept(delivery('c'))).duplicate).toBe(false);
      expect(store.pending().map((e) => e.key)).toEqual(['b', 'c']);
    },
  ],
  [
    'accept refuses with inbox_full when a delivery would pass maxPendingBytes, counted again after a reopen',
    { maxPendingBytes: 2_700 },
    async ({ store }) => {
      const big = (key: string) => delivery(key, { object_kind: 'push', pad: 'x'.repeat(1_000) });
      const a = await store.accept(big('a'));
      await store.accept(big('b'));
      const error: unknown = await store.accept(big('c')).catch((e: unknown) => e);
      expect((error as StateError).code).toBe('inbox_full');
      expect((error as StateError).message).toMatch(/would pass the limit of 2700 \(maxPendingBytes\)/);
      // A small one still fits: the bound is on bytes, not on a count.
      const small = await store.accept(delivery('small'));
      await store.close();
      await store.open();
      await expectStateError(store.accept(big('c')), 'inbox_full');
      await store.markProcessed(a.id);
      await store.markProcessed(small.id);
      expect((await store.accept(big('c'))).duplicate).toBe(false);
      expect(store.pending().map((e) => e.key)).toEqual(['b', 'c']);
    },
  ],
  [
    'de-dup keys beyond maxDedupKeys drop the oldest first',
    { maxDedupKeys: 3 },
    async ({ store }) => {
      for (const key of ['a', 'b', 'c', 'd']) await store.accept(delivery(key));
      expect(store.stats().dedupKeys).toBe(3);
      expect((await store.accept(delivery('a'))).duplicate).toBe(false);
      expect((await store.accept(delivery('d'))).duplicate).toBe(true);
    },
  ],
  [
    'a key accepted again after it expired takes its new place in the order keys are pushed out in',
    { maxDedupKeys: 2, dedupTtlMs: 60_000 },
    async ({ store, clock }) => {
      await store.accept(delivery('a'));
      clock.now += 60_000;
      const again = await store.accept(delivery('a'));
      await store.accept(delivery('b'));
      await store.accept(delivery('c'));
      // 'a' is the oldest again now: it went first when 'c' came.
      expect(store.stats().dedupKeys).toBe(2);
      expect((await store.accept(delivery('b'))).duplicate).toBe(true);
      expect((await store.accept(delivery('c'))).duplicate).toBe(true);
      const third = await store.accept(delivery('a'));
      expect(third.duplicate).toBe(false);
      expect(third.id).not.toBe(again.id);
    },
  ],
  [
    'values are kept as JSON: a Date becomes its string, undefined fields vanish',
    {},
    async ({ store }) => {
      const at = new Date(Date.UTC(2016, 0, 19, 8, 40, 25, 934));
      await store.accept(delivery('a', { at, gone: undefined, kept: [1, 'x', null] }));
      expect(store.pending()[0]?.body).toEqual({ at: '2016-01-19T08:40:25.934Z', kept: [1, 'x', null] });
    },
  ],
  [
    'headers that carry credentials are never stored',
    {},
    async ({ store }) => {
      await store.accept({
        ...delivery('a'),
        headers: {
          'X-Gitlab-Event': 'Issue Hook',
          'X-Gitlab-Token': 'hook-secret-0123456789',
          authorization: 'Bearer abc',
          'PRIVATE-TOKEN': 'tok',
          Cookie: 'session=1',
        },
      });
      expect(store.pending()[0]?.headers).toEqual({ 'X-Gitlab-Event': 'Issue Hook' });
      await store.close({ compact: false });
      await store.open();
      expect(JSON.stringify(store.pending())).not.toContain('hook-secret');
    },
  ],
  [
    'a value JSON cannot hold is refused and changes nothing',
    {},
    async ({ store }) => {
      await expect(store.accept(delivery('a', { big: 10n }))).rejects.toThrow(TypeError);
      await expect(store.setNextRun('stale', undefined, Number.NaN)).rejects.toThrow(/invalid next_run/);
      expect(store.pending()).toEqual([]);
      expect(store.nextRun('stale')).toBeUndefined();
      expect((await store.accept(delivery('a'))).duplicate).toBe(false);
    },
  ],
  [
    'accept refuses fields a restart would not give back the same, and changes nothing',
    {},
    async ({ store }) => {
      await expect(store.accept({ ...delivery('a'), receivedAt: Number.NaN })).rejects.toThrow(
        /invalid accept \(entry\.receivedAt: expected a finite number\)/,
      );
      await expect(
        store.accept({ ...delivery('a'), headers: { 'x-gitlab-event': 7 as unknown as string } }),
      ).rejects.toThrow(/invalid accept \(entry\.headers\.x-gitlab-event: expected a string\)/);
      await expect(store.accept({ ...delivery('a'), kind: undefined as unknown as string })).rejects.toThrow(
        TypeError,
      );
      expect(store.pending()).toEqual([]);
      expect(store.stats().dedupKeys).toBe(0);
      expect((await store.accept(delivery('a'))).duplicate).toBe(false);
    },
  ],
  [
    'pending hands out entries equal to what was accepted, parsed anew on each call (nothing parsed is kept)',
    {},
    async ({ store, clock }) => {
      const a = await store.accept(delivery('a', { nested: { list: [1, 'two', null] } }));
      const first = store.pending();
      expect(first).toEqual([
        { ...delivery('a', { nested: { list: [1, 'two', null] } }), id: a.id, acceptedAt: clock.now },
      ]);
      expect(store.pending()).toEqual(first);
      expect(store.pending()[0]).not.toBe(first[0]);
    },
  ],
  [
    'pendingDeliveries gives id, kind and receipt time, and reads each body only when asked',
    {},
    async ({ store }) => {
      const a = await store.accept(delivery('a', { n: 1 }));
      const b = await store.accept(delivery('b', { n: 2 }));
      const [first, second] = store.pendingDeliveries();
      expect([first?.id, first?.kind, first?.receivedAt]).toEqual([
        a.id,
        delivery('a').kind,
        delivery('a').receivedAt,
      ]);
      expect(first?.body).toEqual({ n: 1 });
      expect(second?.id).toBe(b.id);
      await store.markProcessed(b.id);
      // Processed: there is no body to read any more.
      expect(second?.body).toBeUndefined();
      expect(store.pendingDeliveries().map((d) => d.id)).toEqual([a.id]);
    },
  ],
  [
    "delivery hands the receiver's parsed body to its first reader, then reads the stored text",
    {},
    async ({ store }) => {
      const a = await store.accept(delivery('a', { n: 1 }));
      const parsed = { n: 1 };
      const handle = store.delivery(a.id, 'issue', parsed);
      expect(handle.body).toBe(parsed);
      expect(handle.body).toEqual({ n: 1 });
      expect(handle.body).not.toBe(parsed);
    },
  ],
  [
    'putAction creates an action once per id, with no attempts and a first try now by default',
    {},
    async ({ store, clock }) => {
      expect(await store.putAction(action('x'))).toEqual({ created: true });
      expect(await store.putAction({ ...action('x'), rule: 'other' })).toEqual({ created: false });
      expect(store.getAction('x')).toEqual({
        ...action('x'),
        attempts: 0,
        nextTryAt: clock.now,
        createdAt: clock.now,
      });
      expect(store.getAction('y')).toBeUndefined();
    },
  ],
  [
    'dueActions lists unparked actions due by now, earliest first, planned order on ties',
    {},
    async ({ store, clock }) => {
      await store.putAction(action('late', clock.now + 500));
      await store.putAction(action('b', clock.now + 100));
      await store.putAction(action('a', clock.now + 100));
      await store.putAction(action('first', clock.now));
      await store.putAction(action('parked', clock.now));
      await store.parkAction('parked', 'needs a human');
      expect(store.dueActions(clock.now + 100).map((a) => a.id)).toEqual(['first', 'b', 'a']);
      expect(store.dueActions(clock.now - 1)).toEqual([]);
    },
  ],
  [
    'failAction with a retryable error counts the attempt, keeps the error and moves the next try',
    {},
    async ({ store, clock }) => {
      await store.putAction(action('x'));
      await store.failAction('x', {
        error: '503 Service Unavailable',
        retryable: true,
        nextTryAt: clock.now + 2_000,
      });
      await store.failAction('x', { error: 'timeout', retryable: true, nextTryAt: clock.now + 4_000 });
      expect(store.getAction('x')).toMatchObject({
        attempts: 2,
        lastError: 'timeout',
        nextTryAt: clock.now + 4_000,
      });
      expect(store.getAction('x')?.parked).toBeUndefined();
      expect(store.dueActions(clock.now + 3_999)).toEqual([]);
    },
  ],
  [
    'failAction with a permanent error parks the action with the error as the reason',
    {},
    async ({ store, clock }) => {
      await store.putAction(action('x'));
      await store.failAction('x', { error: '403 Forbidden', retryable: false });
      expect(store.getAction('x')).toMatchObject({
        attempts: 1,
        lastError: '403 Forbidden',
        parked: { reason: '403 Forbidden', at: clock.now },
      });
      expect(store.listParked().map((a) => a.id)).toEqual(['x']);
      expect(store.dueActions(Number.MAX_SAFE_INTEGER)).toEqual([]);
    },
  ],
  [
    'parkAction parks with a visible reason, oldest parked listed first',
    {},
    async ({ store, clock }) => {
      await store.putAction(action('a'));
      await store.putAction(action('b'));
      await store.parkAction('b', 'gave up after 5 attempts');
      clock.now += 1;
      await store.parkAction('a', 'circuit breaker');
      expect(store.listParked().map((a) => [a.id, a.parked?.reason])).toEqual([
        ['b', 'gave up after 5 attempts'],
        ['a', 'circuit breaker'],
      ]);
      expect(store.stats()).toMatchObject({ outbox: 0, parked: 2 });
    },
  ],
  [
    'failAction and parkAction of an action the outbox does not hold reject with unknown_action',
    {},
    async ({ store }) => {
      await expectStateError(store.failAction('nope', { error: 'x', retryable: false }), 'unknown_action');
      await expectStateError(store.parkAction('nope', 'x'), 'unknown_action');
      await store.putAction(action('p'));
      await store.parkAction('p', 'first reason');
      await expectStateError(store.failAction('p', { error: 'x', retryable: false }), 'unknown_action');
    },
  ],
  [
    'completeAction removes an active or a parked action; an unknown id is a no-op',
    {},
    async ({ store }) => {
      await store.putAction(action('a'));
      await store.putAction(action('p'));
      await store.parkAction('p', 'reason');
      await store.completeAction('a');
      await store.completeAction('p');
      await store.completeAction('never');
      expect(store.getAction('a')).toBeUndefined();
      expect(store.listParked()).toEqual([]);
      expect(await store.putAction(action('a'))).toEqual({ created: true });
    },
  ],
  [
    'parked actions beyond maxParked drop the oldest parked',
    { maxParked: 2 },
    async ({ store }) => {
      for (const id of ['a', 'b', 'c']) {
        await store.putAction(action(id));
        await store.parkAction(id, `reason ${id}`);
      }
      expect(store.listParked().map((a) => a.id)).toEqual(['b', 'c']);
      expect(store.getAction('a')).toBeUndefined();
    },
  ],
  [
    'watch adds or replaces the entry of an item; unwatch removes it',
    {},
    async ({ store, clock }) => {
      const entry = {
        itemKey: 'acme/web!7',
        project: 'acme/web',
        mrId: 70,
        headSha: 'a'.repeat(40),
        rule: 'merge-when-green',
        required: ['ci/build', 'ci/test'],
        since: clock.now,
      };
      await store.watch(entry);
      await store.watch({ ...entry, headSha: 'b'.repeat(40) });
      await store.watch({ ...entry, itemKey: 'acme/web!8', mrId: 80 });
      expect(store.watched()).toEqual([
        { ...entry, headSha: 'b'.repeat(40) },
        { ...entry, itemKey: 'acme/web!8', mrId: 80 },
      ]);
      await store.unwatch('acme/web!7');
      await store.unwatch('acme/web!404');
      expect(store.watched().map((w) => w.itemKey)).toEqual(['acme/web!8']);
    },
  ],
  [
    'enqueue adds or replaces the queue entry of an item; dequeue removes it; both outlive a reopen',
    {},
    async ({ store, clock }) => {
      const entry = {
        itemKey: 'merge_request:3:70',
        project: 'acme/web',
        projectId: 3,
        mrId: 70,
        iid: 7,
        targetBranch: 'master',
        queue: 'default',
        rule: 'queue-green',
        priority: 0,
        enqueuedAt: clock.now,
        required: ['ci/test'],
        statusTimeoutMs: 60_000,
        maxUpdates: 3,
        updates: 0,
      };
      await store.enqueue(entry);
      await store.enqueue({ ...entry, itemKey: 'merge_request:3:80', mrId: 80, iid: 8, priority: 1 });
      const head = {
        ...entry,
        pinnedSha: 'a'.repeat(40),
        targetSha: 'b'.repeat(40),
        testingSince: clock.now,
        updates: 1,
      };
      await store.enqueue(head);
      // Fields the entry does not know are not kept.
      await store.enqueue({ ...entry, itemKey: 'merge_request:3:90', mrId: 90, extra: 'x' } as typeof entry);
      await store.dequeue('merge_request:3:90');
      await store.dequeue('merge_request:3:404');
      const sorted = () => store.queued().sort((a, b) => a.itemKey.localeCompare(b.itemKey));
      expect(sorted()).toEqual([
        head,
        { ...entry, itemKey: 'merge_request:3:80', mrId: 80, iid: 8, priority: 1 },
      ]);
      await store.close();
      await store.open();
      expect(sorted()).toEqual([
        head,
        { ...entry, itemKey: 'merge_request:3:80', mrId: 80, iid: 8, priority: 1 },
      ]);
      await store.dequeue('merge_request:3:70');
      expect(store.queued().map((q) => q.itemKey)).toEqual(['merge_request:3:80']);
      // One taken out with a comment is kept as a memory of the head it left at.
      const left = { ...entry, left: { at: clock.now, sha: 'c'.repeat(40), reason: 'ci/test failed' } };
      await store.enqueue(left);
      await store.close();
      await store.open();
      expect(store.queued().find((q) => q.itemKey === entry.itemKey)).toEqual(left);
      // Queued on a member's comment (docs/rules.md#members-commands): the approval and the comment
      // are kept, and the note it left with.
      const approved = {
        ...entry,
        itemKey: 'merge_request:3:100',
        mrId: 100,
        approval: { by: 'alice', level: 30, noteId: 41, sha: 'd'.repeat(40) },
        trigger: {
          kind: 'note' as const,
          noteId: 41,
          byBot: false,
          events: [{ name: 'note.created', byBot: false }],
        },
      };
      await store.enqueue(approved);
      const leftApproved = {
        ...approved,
        itemKey: 'merge_request:3:110',
        mrId: 110,
        left: { at: clock.now, sha: 'd'.repeat(40), reason: 'ci/test failed', noteId: 41 },
      };
      await store.enqueue(leftApproved);
      await store.close();
      await store.open();
      expect(store.queued().find((q) => q.itemKey === approved.itemKey)).toEqual(approved);
      expect(store.queued().find((q) => q.itemKey === leftApproved.itemKey)).toEqual(leftApproved);
    },
  ],
  [
    "queue controls: a pause is kept per queue (project in any case), lifted by a control with nothing set; an entry's front is kept; both outlive a reopen",
    {},
    async ({ store, clock }) => {
      const paused = {
        project: 'acme/web',
        projectId: 3,
        targetBranch: 'master',
        queue: 'default',
        paused: { by: 'alice', reason: 'release freeze', at: clock.now },
      };
      const other = { ...paused, queue: 'docs', paused: { by: 'bob', reason: 'audit', at: clock.now + 1 } };
      await store.setQueueControl(paused);
      await store.setQueueControl(other);
      // The same queue named in another case replaces it.
      const again = { ...paused, project: 'ACME/Web', paused: { ...paused.paused, reason: 'still frozen' } };
      await store.setQueueControl(again);
      // Lifting a queue that has no control writes nothing.
      await store.setQueueControl({
        project: 'acme/web',
        projectId: 3,
        targetBranch: 'master',
        queue: 'nothing',
      });
      const sorted = () => [...store.queueControls()].sort((a, b) => a.queue.localeCompare(b.queue));
      expect(sorted()).toEqual([again, other]);
      expect(store.stats().queueControls).toBe(2);
      const entry = {
        itemKey: 'merge_request:3:70',
        project: 'acme/web',
        projectId: 3,
        mrId: 70,
        iid: 7,
        targetBranch: 'master',
        queue: 'default',
        rule: 'queue-green',
        priority: 0,
        enqueuedAt: clock.now,
        required: ['ci/test'],
        statusTimeoutMs: 60_000,
        maxUpdates: 3,
        updates: 0,
        front: { by: 'alice', at: clock.now + 5 },
      };
      await store.enqueue(entry);
      await store.close();
      await store.open();
      expect(sorted()).toEqual([again, other]);
      expect(store.queued()).toEqual([entry]);
      const { paused: _lifted, ...resumed } = other;
      await store.setQueueControl(resumed);
      await store.close();
      await store.open();
      expect(store.queueControls()).toEqual([again]);
    },
  ],
  [
    'nextRun is kept per sweep and project, apart from the sweep-wide time',
    {},
    async ({ store }) => {
      await store.setNextRun('stale', undefined, 100);
      await store.setNextRun('stale', 'acme/web', 200);
      await store.setNextRun('stale', 'acme/api', 300);
      await store.setNextRun('stale', 'acme/web', 250);
      await store.setNextRun('reconcile', undefined, 400);
      expect([
        store.nextRun('stale'),
        store.nextRun('stale', 'acme/web'),
        store.nextRun('stale', 'acme/api'),
        store.nextRun('reconcile'),
        store.nextRun('reconcile', 'acme/web'),
        store.nextRun('never'),
      ]).toEqual([100, 250, 300, 400, undefined, undefined]);
    },
  ],
  [
    'lastSuccess is kept per sweep',
    {},
    async ({ store }) => {
      await store.setLastSuccess('reconcile', 1_000);
      await store.setLastSuccess('reconcile', 2_000);
      expect([store.lastSuccess('reconcile'), store.lastSuccess('stale')]).toEqual([2_000, undefined]);
    },
  ],
  [
    'pauseRule keeps the rule paused with its reason until approveRule',
    {},
    async ({ store, clock }) => {
      await store.pauseRule('close-stale', 'would touch 412 of 500 items (limit 50)');
      await store.pauseRule('label-all', 'would touch 90% of items (limit 20%)');
      expect(store.pausedRules()).toEqual([
        { rule: 'close-stale', reason: 'would touch 412 of 500 items (limit 50)', at: clock.now },
        { rule: 'label-all', reason: 'would touch 90% of items (limit 20%)', at: clock.now },
      ]);
      await store.approveRule('close-stale');
      await store.approveRule('not-paused');
      expect(store.pausedRules().map((p) => p.rule)).toEqual(['label-all']);
    },
  ],
  [
    'decisions: the latest per item and a ring of recent ones, newest first, within their bounds',
    { decisionItems: 2, recentDecisions: 3 },
    async ({ store, clock }) => {
      for (const [item, verdict] of [
        ['i1', 'one'],
        ['i2', 'two'],
        ['i1', 'three'],
        ['i3', 'four'],
      ] as const) {
        clock.now += 1;
        await store.recordDecision(item, { verdict });
      }
      expect(store.latestDecision('i1')).toEqual({
        id: expect.stringMatching(/^[0-9a-f]{12}$/),
        itemKey: 'i1',
        at: clock.now - 1,
        decision: { verdict: 'three' },
      });
      expect(store.latestDecision('i3')?.decision).toEqual({ verdict: 'four' });
      // i2 was decided least recently: it went first when i3 came in.
      expect(store.latestDecision('i2')).toBeUndefined();
      expect(store.latestDecisions().map((d) => [d.itemKey, d.decision])).toEqual([
        ['i1', { verdict: 'three' }],
        ['i3', { verdict: 'four' }],
      ]);
      expect(store.recentDecisions().map((d) => d.decision)).toEqual([
        { verdict: 'four' },
        { verdict: 'three' },
        { verdict: 'two' },
      ]);
      expect(store.recentDecisions(1).map((d) => d.itemKey)).toEqual(['i3']);
      expect(store.recentDecisions(0)).toEqual([]);
      expect(store.stats()).toMatchObject({ decisionItems: 2, recentDecisions: 3 });
    },
  ],
  [
    'decisions kept per item: the newest evaluations (decisionHistory) and, apart, the newest that acted (actingDecisions), newest first, across a restart',
    { decisionHistory: 3, actingDecisions: 2 },
    async ({ store, clock }) => {
      // A1 acted, then an echo, A2 acted, then four echoes: the echoes fill the ring, the two that
      // acted stay beside it.
      const record = async (verdict: string) => {
        clock.now += 1;
        await store.recordDecision('mr', { verdict }, { acted: verdict.startsWith('A') });
      };
      for (const verdict of ['A1', 'E1', 'A2', 'E2', 'E3', 'E4', 'E5']) await record(verdict);
      const kept = async () =>
        (await store.keptDecisions('mr')).map((d) => (d.decision as { verdict: string }).verdict);
      expect(await kept()).toEqual(['E5', 'E4', 'E3', 'A2', 'A1']);
      const records = await store.keptDecisions('mr');
      expect(records.map((d) => d.acted ?? false)).toEqual([false, false, false, true, true]);
      expect(new Set(records.map((d) => d.id)).size).toBe(5);
      for (const d of records) expect(d.id).toMatch(/^[0-9a-f]{12}$/);
      expect(records[0]).toEqual(store.latestDecision('mr'));
      expect(records.map((d) => d.at)).toEqual([7, 6, 5, 3, 1].map((n) => clock.now - 7 + n));
      // One more that acted: the oldest that acted goes (two at most), the ring moves on.
      await record('A3');
      expect(await kept()).toEqual(['A3', 'E5', 'E4', 'A2']);
      // Another item, and an item without any.
      await store.recordDecision('other', { verdict: 'O1' });
      expect((await store.keptDecisions('other')).map((d) => d.decision)).toEqual([{ verdict: 'O1' }]);
      expect(await store.keptDecisions('none')).toEqual([]);
      await store.close();
      await store.open();
      expect(await kept()).toEqual(['A3', 'E5', 'E4', 'A2']);
      expect((await store.keptDecisions('mr'))[0]).toEqual(store.latestDecision('mr'));
      // Echoes after the restart push out echoes only.
      for (const verdict of ['E6', 'E7', 'E8']) await record(verdict);
      expect(await kept()).toEqual(['E8', 'E7', 'E6', 'A3', 'A2']);
    },
  ],
  [
    'decisions kept per item are bounded in bytes: the newest and the newest that acted stay, then those that acted, then the others, newest first',
    // Each decision here is about 1,100 bytes of JSON: three fit in 3,500, four do not.
    { decisionHistory: 20, actingDecisions: 10, decisionItemBytes: 3_500 },
    async ({ store, clock }) => {
      const pad = 'x'.repeat(1_000);
      const record = async (verdict: string, size = pad) => {
        clock.now += 1;
        await store.recordDecision('mr', { verdict, pad: size }, { acted: verdict.startsWith('A') });
      };
      const kept = async () =>
        (await store.keptDecisions('mr')).map((d) => (d.decision as { verdict: string }).verdict);
      for (const verdict of ['A1', 'E1', 'E2', 'A2', 'E3', 'E4']) await record(verdict);
      expect(await kept()).toEqual(['E4', 'A2', 'A1']);
      for (const d of await store.keptDecisions('mr'))
        expect(JSON.stringify(d).length).toBeGreaterThan(1_000);
      // A decision larger than the bound by itself: it stays, with the newest that acted.
      await record('E5', 'y'.repeat(5_000));
      expect(await kept()).toEqual(['E5', 'A2']);
      // What went for it does not come back; the large one goes as soon as it is not the newest.
      await record('E6');
      expect(await kept()).toEqual(['E6', 'A2']);
      await record('A3');
      expect(await kept()).toEqual(['A3', 'E6', 'A2']);
      await store.close();
      await store.open();
      expect(await kept()).toEqual(['A3', 'E6', 'A2']);
    },
  ],
  [
    "decisions kept for all items are bounded in bytes: the least recently decided items' go first, their latest decision stays",
    // Each decision here is about 1,100 bytes of JSON: two items' fit in 2,500, three do not.
    { decisionBytes: 2_500, decisionItems: 3 },
    async ({ store, clock }) => {
      const pad = 'x'.repeat(1_000);
      for (const item of ['i1', 'i2', 'i3']) {
        clock.now += 1;
        await store.recordDecision(item, { item, pad }, { acted: true });
      }
      // PostgreSQL applies the bounds over every item at each refresh (compact runs them now).
      await store.compact();
      expect(await store.keptDecisions('i1')).toEqual([]);
      expect((await store.keptDecisions('i2')).map((d) => d.itemKey)).toEqual(['i2']);
      expect((await store.keptDecisions('i3')).map((d) => d.itemKey)).toEqual(['i3']);
      expect(store.latestDecision('i1')?.decision).toEqual({ item: 'i1', pad });
      // Past decisionItems, an item's kept decisions go with its latest decision.
      clock.now += 1;
      await store.recordDecision('i4', { item: 'i4' });
      await store.compact();
      expect(store.latestDecision('i1')).toBeUndefined();
      expect(await store.keptDecisions('i1')).toEqual([]);
      expect((await store.keptDecisions('i4')).map((d) => d.decision)).toEqual([{ item: 'i4' }]);
      await store.close();
      await store.open();
      expect(await store.keptDecisions('i1')).toEqual([]);
      expect((await store.keptDecisions('i3')).map((d) => d.itemKey)).toEqual(['i3']);
    },
  ],
  [
    'stats counts every collection',
    {},
    async ({ store, clock }) => {
      const a = await store.accept(delivery('a'));
      await store.accept(delivery('b'));
      await store.markProcessed(a.id);
      await store.putAction(action('x'));
      await store.putAction(action('y'));
      await store.parkAction('y', 'r');
      await store.watch({
        itemKey: 'w',
        project: 'p',
        mrId: 1,
        headSha: 's',
        rule: 'r',
        required: [],
        since: clock.now,
      });
      await store.pauseRule('r', 'why');
      await store.recordDecision('w', 'd');
      expect(store.stats()).toMatchObject({
        inbox: 1,
        dedupKeys: 2,
        outbox: 1,
        parked: 1,
        watched: 1,
        pausedRules: 1,
        decisionItems: 1,
        recentDecisions: 1,
      });
    },
  ],
  [
    'closing and opening the same store again keeps every collection',
    {},
    async ({ store, clock }) => {
      const kept = await store.accept(delivery('kept'));
      await store.putAction(action('x'));
      await store.failAction('x', { error: 'e', retryable: true, nextTryAt: clock.now + 5 });
      await store.setNextRun('stale', 'acme/web', 42);
      await store.pauseRule('r', 'why');
      await store.recordDecision('i', { verdict: 'kept' });
      await store.close();
      await store.open();
      expect(store.pending().map((e) => e.id)).toEqual([kept.id]);
      expect((await store.accept(delivery('kept'))).duplicate).toBe(true);
      expect(store.getAction('x')).toMatchObject({ attempts: 1, nextTryAt: clock.now + 5 });
      expect(store.nextRun('stale', 'acme/web')).toBe(42);
      expect(store.pausedRules().map((p) => p.rule)).toEqual(['r']);
      expect(store.latestDecision('i')?.decision).toEqual({ verdict: 'kept' });
    },
  ],
  [
    'beginAttempt counts the attempts begun on a pending delivery, durably; releaseAttempt gives one back; processed forgets them',
    {},
    async ({ store }) => {
      const a = await store.accept(delivery('a'));
      const b = await store.accept(delivery('b'));
      expect(await store.beginAttempt(a.id)).toBe(1);
      await store.close();
      await store.open();
      // A restart (the process died during the attempt): the count is still there.
      expect(await store.beginAttempt(a.id)).toBe(2);
      await store.releaseAttempt(a.id);
      expect(await store.beginAttempt(a.id)).toBe(2);
      expect(await store.beginAttempt(b.id)).toBe(1);
      await store.markProcessed(b.id);
      expect(await store.beginAttempt(b.id)).toBe(0);
      expect(await store.beginAttempt('no-such-delivery')).toBe(0);
    },
  ],
  [
    'parkDelivery takes a pending delivery out unprocessed, keeps why, keeps its de-dup key; bounded by maxParked',
    { maxParked: 2 },
    async ({ store, clock }) => {
      const ids = [];
      for (const key of ['a', 'b', 'c', 'd']) ids.push((await store.accept(delivery(key))).id);
      const [a, b, c, d] = ids as [string, string, string, string];
      await store.beginAttempt(a);
      await store.beginAttempt(a);
      await store.beginAttempt(a);
      await store.parkDelivery(a, 'the process stopped during it twice');
      expect(store.pending().map((entry) => entry.key)).toEqual(['b', 'c', 'd']);
      expect(store.parkedDeliveries()).toEqual([
        {
          id: a,
          key: 'a',
          kind: 'Issue Hook',
          receivedAt: 1_000,
          attempts: 3,
          reason: 'the process stopped during it twice',
          at: clock.now,
        },
      ]);
      expect((await store.accept(delivery('a'))).duplicate).toBe(true);
      await store.parkDelivery('no-such-delivery', 'nothing');
      await store.close();
      await store.open();
      expect(store.parkedDeliveries().map((parked) => parked.key)).toEqual(['a']);
      expect(store.pending().map((entry) => entry.key)).toEqual(['b', 'c', 'd']);
      await store.parkDelivery(b, 'two');
      await store.parkDelivery(c, 'three');
      expect(store.parkedDeliveries().map((parked) => parked.key)).toEqual(['b', 'c']);
      await store.close();
      await store.open();
      expect(store.parkedDeliveries().map((parked) => parked.key)).toEqual(['b', 'c']);
      expect(store.pending().map((entry) => entry.id)).toEqual([d]);
    },
  ],
  [
    'after close every operation rejects or throws with closed',
    {},
    async ({ store }) => {
      await store.close();
      await expectStateError(store.accept(delivery('a')), 'closed');
      await expectStateError(store.flush(), 'closed');
      expect(() => store.pending()).toThrow(StateError);
      expect(store.stats().inbox).toBe(0);
      await store.open();
    },
  ],
];

describe.each(backends)('%s store contract', (_backend, make) => {
  let current: StateStore | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });

  it.each(cases)('%s', async (_name, options, run) => {
    const clock = fakeClock();
    const store = make({ ...options, now: clock.read });
    current = store;
    await expectStateError(store.accept(delivery('before-open')), 'closed');
    await store.open();
    await run({ store, clock });
    await store.flush();
  });
});
