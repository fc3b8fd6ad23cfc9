/**
 * The merge queue's events (src/rules/queue/queue-events.ts) and the story read back from the kept
 * decisions (queue-story.ts), on a memory store: what each event records, what it counts, and how
 * explain tells them (the actions list, the story, the latest decision).
 */
import { describe, expect, it } from 'vitest';
import { explainAnswer } from '../../../src/rules/item/explain-answer.ts';
import {
  createQueueEvents,
  type CarOutcome,
  type QueueMode,
  type RemovalCode,
} from '../../../src/rules/queue/queue-events.ts';
import { queueStory } from '../../../src/rules/queue/queue-story.ts';
import { createMemoryStore } from '../../../src/state/memory-store.ts';
import type { DecisionRecord, QueueEntry } from '../../../src/state/store.ts';

const ENTRY: QueueEntry = {
  itemKey: 'merge_request:12:70',
  project: 'acme/web',
  projectId: 12,
  mrId: 70,
  iid: 7,
  targetBranch: 'master',
  queue: 'default',
  rule: 'ship it',
  priority: 0,
  enqueuedAt: 1_000_000,
  required: ['ci/test'],
  statusTimeoutMs: 600_000,
  maxUpdates: 3,
  updates: 0,
};
const SHA = 'abcdef0123456789abcdef0123456789abcdef01';
const MERGE = '1234567890123456789012345678901234567890';

async function world() {
  const store = createMemoryStore();
  await store.open();
  let clock = 1_060_000;
  const counted = {
    landed: [] as [QueueMode, number][],
    removed: [] as RemovalCode[],
    cars: [] as CarOutcome[],
    rounds: [] as QueueMode[],
  };
  const events = createQueueEvents({
    store,
    now: () => clock,
    metrics: {
      landed: (mode, seconds) => counted.landed.push([mode, seconds]),
      removed: (code) => counted.removed.push(code),
      carBuilt: (outcome) => counted.cars.push(outcome),
      round: (mode) => counted.rounds.push(mode),
    },
  });
  return { store, events, counted, tick: (ms: number) => (clock += ms) };
}

/** An evaluation that queued the merge request (what the executor's enqueue call reports). */
function enqueued(at: number, detail: string): DecisionRecord {
  return {
    itemKey: ENTRY.itemKey,
    at,
    acted: true,
    id: `e${at}`,
    decision: {
      evaluation: {
        item: { kind: 'merge_request', id: 70, iid: 7, project: 'acme/web', state: 'opened' },
        rules: [],
      },
      execution: {
        calls: [
          {
            id: `q${at}`,
            op: 'mergeQueue.enqueue',
            rule: 'ship it',
            status: 'done',
            call: 'mergeQueue.enqueue',
            detail,
          },
        ],
      },
      text: 'queued',
    },
  };
}

describe('queue events', () => {
  it('a serial landing is recorded as a decision that acted, on the merge request merged, and counted with its time in the queue', async () => {
    const { store, events, counted } = await world();
    await events.landed(
      ENTRY,
      { mode: 'serial', tested: SHA, commit: MERGE },
      { title: 'Fix', state: 'merged' },
    );
    const record = store.latestDecision(ENTRY.itemKey)!;
    expect(record.acted).toBe(true);
    const decision = record.decision as {
      evaluation: { item: { state: string; iid: number; project: string }; event: string };
      execution: { calls: { call: string; detail: string; status: string; rule: string }[] };
      queueEvent: { kind: string; commit: string; waitedMs: number };
    };
    expect(decision.evaluation.item).toMatchObject({ state: 'merged', iid: 7, project: 'acme/web' });
    expect(decision.evaluation.event).toBe('merge_queue.landed');
    expect(decision.queueEvent).toMatchObject({ kind: 'landed', commit: MERGE, waitedMs: 60_000 });
    expect(decision.execution.calls).toEqual([
      expect.objectContaining({
        call: 'merge queue: merged by the serial queue',
        status: 'done',
        rule: 'ship it',
        detail: 'the default queue for master merged its tested head abcdef0; master is at 1234567 with it',
      }),
    ]);
    expect(counted.landed).toEqual([['serial', 60]]);
  });

  it('a train landing says the car, its commit and its members', async () => {
    const { store, events, counted } = await world();
    await events.landed(ENTRY, {
      mode: 'train',
      car: { position: 2, iids: [5, 7], sha: MERGE },
      commit: MERGE,
    });
    const story = queueStory(await store.keptDecisions(ENTRY.itemKey));
    expect(story).toEqual([
      expect.objectContaining({
        kind: 'landed',
        mode: 'train',
        commit: MERGE,
        car: { position: 2, members: [5, 7] },
        text: 'landed in car 2 of a train: master fast-forwarded to 1234567, the commit of car 2 of the default merge train (members !5, !7)',
      }),
    ]);
    expect(counted.landed).toEqual([['train', 60]]);
  });

  it('a train landing through a car behind (flaky CI) says why it landed though its own car failed', async () => {
    const { store, events } = await world();
    const through =
      "landed through car 2: car 1's own build failed (ci/test) but car 2, which contains it, passed";
    await events.landed(ENTRY, {
      mode: 'train',
      car: { position: 1, iids: [5], sha: MERGE },
      commit: MERGE,
      through,
    });
    const story = queueStory(await store.keptDecisions(ENTRY.itemKey));
    expect(story).toEqual([
      expect.objectContaining({
        kind: 'landed',
        text: `landed in car 1 of a train: master fast-forwarded to 1234567, the commit of car 1 of the default merge train (members !5); ${through}`,
      }),
    ]);
  });

  it('a removal keeps its reason code and the comment, a drop its code; both are counted by code', async () => {
    const { store, events, counted, tick } = await world();
    await events.removed(ENTRY, {
      code: 'conflict',
      reason: 'fix conflicts with master at 1234567 in `a.txt`',
      comment: { body: 'Removed from the default merge queue for `master`: ...', posted: true },
    });
    tick(1000);
    await events.dropped(ENTRY, { code: 'closed', reason: 'the merge request is closed' });
    const story = queueStory(await store.keptDecisions(ENTRY.itemKey));
    expect(story.map((line) => [line.kind, line.code])).toEqual([
      ['removed', 'conflict'],
      ['dropped', 'closed'],
    ]);
    expect(story[0]!.comment).toBe('Removed from the default merge queue for `master`: ...');
    expect(story[0]!.text).toBe(
      'removed (conflict): taken out of the default queue for master: fix conflicts with master at 1234567 in `a.txt`; comment posted',
    );
    expect(story[1]!.text).toBe(
      'left (closed): out of the default queue for master at once, without a comment: the merge request is closed',
    );
    expect(counted.removed).toEqual(['conflict', 'closed']);
  });

  it('car builds and rounds are counted only', async () => {
    const { store, events, counted } = await world();
    events.carBuilt('passed');
    events.carBuilt('replaced');
    events.round('train');
    expect(counted.cars).toEqual(['passed', 'replaced']);
    expect(counted.rounds).toEqual(['train']);
    expect(store.latestDecisions()).toEqual([]);
  });

  it('a store that fails to record does not fail the queue: the error is logged', async () => {
    const warned: string[] = [];
    const events = createQueueEvents({
      store: { recordDecision: () => Promise.reject(new Error('disk full')) },
      now: () => 1,
      log: { warn: (_fields, message) => warned.push(message) },
    });
    await expect(events.dropped(ENTRY, { code: 'gone', reason: 'gone' })).resolves.toBeUndefined();
    expect(warned).toEqual(['merge queue: could not record the event "dropped" for explain']);
  });
});

describe("explain tells the queue's story", () => {
  it('entered, removed with the comment, came back, merged: oldest first, and the latest decision is the landing on the merged merge request', async () => {
    const { store, events, tick } = await world();
    await store.recordDecision(ENTRY.itemKey, enqueued(1_000_000, 'queued in default for master').decision, {
      acted: true,
    });
    await events.removed(ENTRY, {
      code: 'status_failed',
      reason: 'ci/test failed on abcdef0',
      comment: { body: 'Removed from the default merge queue for `master`: ci/test failed', posted: true },
    });
    tick(5000);
    await store.recordDecision(
      ENTRY.itemKey,
      enqueued(0, 'queued again in default for master (it had left at abcdef0: ci/test failed on abcdef0)')
        .decision,
      { acted: true },
    );
    tick(5000);
    await events.landed(ENTRY, { mode: 'serial', tested: SHA, commit: MERGE });
    // The echoes of the bot's own merge and comment: evaluations that did nothing.
    for (let i = 0; i < 30; i++) {
      tick(10);
      await store.recordDecision(ENTRY.itemKey, {
        evaluation: {
          item: { kind: 'merge_request', id: 70, iid: 7, project: 'acme/web', state: 'merged' },
          event: 'note',
        },
        execution: { calls: [] },
        text: 'echo',
      });
    }
    const kept = await store.keptDecisions(ENTRY.itemKey);
    const latest = store.latestDecision(ENTRY.itemKey)!;
    const answer = explainAnswer(
      {
        found: true,
        record: latest,
        item: { kind: 'merge_request', projectId: '12', id: 70, project: 'acme/web', iid: 7 },
        by: 'iid',
      },
      kept,
    );
    if (!answer.found) throw new Error('not found');
    const story = answer.body.queue!;
    expect(story.map((line) => line.kind)).toEqual(['entered', 'removed', 'came_back', 'landed']);
    expect(answer.body.explanation).toMatch(/^in the merge queue, oldest first \(4\):\n/);
    expect(answer.body.explanation).toContain('entered: queued in default for master');
    expect(answer.body.explanation).toContain(
      'removed (status_failed): taken out of the default queue for master: ci/test failed on abcdef0; comment posted',
    );
    expect(answer.body.explanation).toContain(
      'comment: Removed from the default merge queue for `master`: ci/test failed',
    );
    expect(answer.body.explanation).toContain('came back: queued again in default for master');
    expect(answer.body.explanation).toContain(
      'merged by the serial queue: the default queue for master merged its tested head abcdef0; master is at 1234567 with it',
    );
    expect(answer.body.actions.map((a) => a.call)).toContain('merge queue: merged by the serial queue');
  });

  it('an entry after a drop reads as came back even when the enqueue does not say so; the status page link by rule skips the events', () => {
    const records: DecisionRecord[] = [
      enqueued(1000, 'queued in default for master'),
      {
        itemKey: ENTRY.itemKey,
        at: 2000,
        acted: true,
        id: 'drop',
        decision: {
          queueEvent: {
            kind: 'dropped',
            project: 'acme/web',
            iid: 7,
            queue: 'default',
            targetBranch: 'master',
            at: 2000,
            code: 'pushed',
            reason: 'pushed by someone else',
          },
          execution: {
            calls: [{ id: 'x', rule: 'ship it', status: 'done', call: 'merge queue: left (pushed)' }],
          },
        },
      },
      enqueued(3000, 'queued in default for master'),
    ];
    expect(queueStory(records).map((line) => line.kind)).toEqual(['entered', 'dropped', 'came_back']);
    const answer = explainAnswer(
      {
        found: true,
        record: records[2]!,
        item: { kind: 'merge_request', projectId: '12', id: 70, project: 'acme/web', iid: 7 },
        by: 'iid',
      },
      [...records].reverse(),
      { rule: 'ship it' },
    );
    if (!answer.found) throw new Error('not found');
    expect(answer.body.id).toBe('e3000');
  });
});
