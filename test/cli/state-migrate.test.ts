/**
 * `hookbot state migrate`: a state file moved into PostgreSQL and back, every collection kept
 * (real PostgreSQL, a schema of its own); a target that is not empty is refused, changing nothing.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runStateMigrate } from '../../src/cli/state.ts';
import {
  createFileStore,
  createPostgresStore,
  type DecisionRecord,
  type QueueEntry,
  type StateStore,
} from '../../src/state/index.ts';
import { postgresAvailable, TEST_DATABASE_URL, useTestSchemas } from '../helpers/postgres.ts';

const schema = useTestSchemas();
let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookbot-migrate-'));
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t) }, out, err };
}

/** A member's comment, kept with a watch and a queue entry (docs/rules.md#members-commands). */
const comment = { kind: 'note' as const, noteId: 41, byBot: false };
const approvedEntry: QueueEntry = {
  itemKey: 'merge_request:3:70',
  project: 'acme/web',
  projectId: 3,
  mrId: 70,
  iid: 7,
  targetBranch: 'master',
  queue: 'default',
  rule: 'queue on command',
  priority: 0,
  enqueuedAt: 8,
  required: ['ci/test'],
  statusTimeoutMs: 60_000,
  maxUpdates: 3,
  updates: 0,
  approval: { by: 'alice', level: 30, noteId: 41, sha: 'd'.repeat(40) },
  trigger: comment,
  left: { at: 9, sha: 'd'.repeat(40), reason: 'ci/test failed', noteId: 41 },
};

async function fill(store: StateStore): Promise<{ pendingKey: string }> {
  await store.open();
  const kept = await store.accept({
    key: 'k-pending',
    kind: 'Issue Hook',
    receivedAt: 5,
    headers: {},
    body: { a: 1 },
  });
  const done = await store.accept({
    key: 'k-done',
    kind: 'Issue Hook',
    receivedAt: 6,
    headers: {},
    body: { b: 2 },
  });
  await store.markProcessed(done.id);
  expect(kept.duplicate).toBe(false);
  await store.putAction({
    id: 'retrying',
    itemKey: 'acme/web#1',
    rule: 'r',
    call: { op: 'comment' },
    nextTryAt: 100,
  });
  await store.failAction('retrying', { error: 'timeout', retryable: true, nextTryAt: 200 });
  await store.putAction({ id: 'given-up', itemKey: 'acme/web#2', rule: 'r', call: { op: 'label' } });
  await store.parkAction('given-up', 'no permission');
  await store.watch({
    itemKey: 'acme/web!3',
    project: 'acme/web',
    mrId: 30,
    headSha: 'abc',
    rule: 'm',
    required: ['ci'],
    since: 7,
    trigger: comment,
  });
  await store.enqueue(approvedEntry);
  await store.pauseRule('noisy', 'too many items');
  await store.setQueueControl(frozen);
  await store.recordDecision('acme/web#1', { verdict: 'commented' });
  // The history kept for explain: a decision that acted, then the echoes of the bot's own changes.
  await store.recordDecision('acme/web!3', { verdict: 'labelled' }, { acted: true });
  await store.recordDecision('acme/web!3', { verdict: 'echo of the label' });
  await store.recordDecision('acme/web!3', { verdict: 'echo of the status' });
  await store.setNextRun('merge_watch', undefined, 12_345);
  await store.close();
  return { pendingKey: 'k-pending' };
}

const frozen = {
  project: 'acme/web',
  projectId: 3,
  targetBranch: 'master',
  queue: 'default',
  paused: { by: 'alice', reason: 'release freeze', at: 4_000 },
};

/** The decisions kept for explain in the source, with their ids, times and whether they acted. */
let sourceKept: DecisionRecord[] = [];

async function expectFilled(store: StateStore): Promise<void> {
  expect(await store.keptDecisions('acme/web!3')).toEqual(sourceKept);
  expect(sourceKept.map((d) => [d.decision, d.acted ?? false])).toEqual([
    [{ verdict: 'echo of the status' }, false],
    [{ verdict: 'echo of the label' }, false],
    [{ verdict: 'labelled' }, true],
  ]);
  expect(store.pending().map((e) => [e.key, e.body])).toEqual([['k-pending', { a: 1 }]]);
  expect(store.getAction('retrying')).toMatchObject({ attempts: 1, nextTryAt: 200, lastError: 'timeout' });
  expect(store.listParked().map((a) => [a.id, a.parked?.reason])).toEqual([['given-up', 'no permission']]);
  expect(store.watched().map((w) => [w.itemKey, w.trigger])).toEqual([['acme/web!3', comment]]);
  expect(store.queued()).toEqual([approvedEntry]);
  expect(store.pausedRules().map((p) => [p.rule, p.reason])).toEqual([['noisy', 'too many items']]);
  // An operator's pause of a queue, with who, why and when.
  expect(store.queueControls()).toEqual([frozen]);
  expect(store.latestDecision('acme/web#1')?.decision).toEqual({ verdict: 'commented' });
  expect(store.nextRun('merge_watch')).toBe(12_345);
}

describe.skipIf(!postgresAvailable)('hookbot state migrate', () => {
  it('moves a state file into PostgreSQL and back, keeping every collection', async () => {
    const shared = schema();
    const config = join(dir, 'config.yml');
    await writeFile(config, `state:\n  database_schema: ${shared}\n`);
    const source = join(dir, 'data', 'hookbot.json');
    await fill(createFileStore({ path: source }));
    const reading = createFileStore({ path: source });
    await reading.open();
    sourceKept = await reading.keptDecisions('acme/web!3');
    await reading.close({ compact: false });
    vi.stubEnv('HOOKBOT_STATE', source);
    vi.stubEnv('HOOKBOT_DATABASE_URL', TEST_DATABASE_URL);

    const there = io();
    expect(await runStateMigrate({ to: 'postgres', config }, there.io)).toBe(0);
    // A count agrees with its noun (text/count.ts): it said "1 pending deliveries, 1 actions".
    expect(there.out.join('')).toContain('1 pending delivery, 1 action, 1 parked, 1 watch');
    const database = createPostgresStore({ url: TEST_DATABASE_URL, schema: shared, replicaId: 'check' });
    await database.open();
    try {
      await expectFilled(database);
    } finally {
      await database.close();
    }

    // Again: the database is not empty any more, and nothing is moved twice.
    const again = io();
    expect(await runStateMigrate({ to: 'postgres', config }, again.io)).toBe(1);
    expect(again.err.join('')).toMatch(/is not empty \(1 delivery, 1 action, .*nothing was moved/);

    const back = join(dir, 'back', 'hookbot.json');
    vi.stubEnv('HOOKBOT_STATE', back);
    const home = io();
    expect(await runStateMigrate({ to: 'file', config }, home.io)).toBe(0);
    const file = createFileStore({ path: back });
    await file.open();
    try {
      await expectFilled(file);
    } finally {
      await file.close();
    }
  });

  it('refuses a wrong --to and a missing database URL, saying what to set', async () => {
    const wrong = io();
    expect(await runStateMigrate({ to: 'mysql' }, wrong.io)).toBe(2);
    expect(wrong.err.join('')).toContain('--to must be postgres or file');
    vi.stubEnv('HOOKBOT_DATABASE_URL', '');
    vi.stubEnv('HOOKBOT_STATE', join(dir, 'none.json'));
    const missing = io();
    expect(await runStateMigrate({ to: 'postgres' }, missing.io)).toBe(1);
    expect(missing.err.join('')).toContain('set HOOKBOT_DATABASE_URL');
  });
});
