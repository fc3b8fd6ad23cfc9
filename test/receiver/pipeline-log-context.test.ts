/**
 * The pipeline's log context, over the real logger: whatever an item run logs, however deep and
 * after however many awaits, carries the delivery (or deliveries) it serves and the item; what is
 * logged while a delivery is taken carries that delivery; one run's ids never leak into another's.
 */
import type { DestinationStream } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ItemRef } from '../../src/events/hints.ts';
import { createLogger, type HookbotLogger } from '../../src/ops/logger.ts';
import { createPipeline, type HintResolver } from '../../src/receiver/pipeline.ts';
import type { Trigger } from '../../src/rules/engine/snapshot.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { fixture } from '../events/fixtures.ts';

class Transient extends Error {}

type Line = Record<string, unknown> & { msg: string; part?: string };

/** The issue of issue.json, as the pipeline names it. */
const ISSUE = fixture('issue.json');
const PROJECT = ISSUE.object_attributes.project_id as number;
const ISSUE_KEY = `issue:${PROJECT}:${ISSUE.object_attributes.id}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A pipeline wired as start-bot.ts wires it (its log a child of the real logger), with a processor that
 * logs the way the item processor and the executor do: through their own child loggers, after
 * awaits and a timer, with the item key but no delivery id.
 */
async function setup(
  options: {
    debounceMs?: number;
    concurrency?: number;
    queueLimit?: number;
    process?: (item: ItemRef, triggers: Trigger[], log: HookbotLogger) => Promise<void>;
    resolver?: Partial<HintResolver>;
  } = {},
) {
  const raw: string[] = [];
  const destination: DestinationStream = { write: (line: string) => void raw.push(line) };
  const log = createLogger({ level: 'debug', format: 'json', destination });
  const processLog = log.child({ part: 'process' });
  const executorLog = log.child({ part: 'executor' });
  const store = createMemoryStore();
  await store.open();
  const pipeline = createPipeline({
    store,
    bot: { username: 'hookbot', id: 99 },
    debounceMs: options.debounceMs ?? 0,
    concurrency: options.concurrency,
    queueLimit: options.queueLimit,
    isTransient: (e) => e instanceof Transient,
    retryDelayMs: () => 5,
    resolver: {
      mergeRequestsForBranch: async () => [],
      mergeRequestsForCommit: async () => [],
      ...options.resolver,
    },
    log: log.child({ part: 'pipeline' }),
    process: async (item, triggers) => {
      const itemKey = `${item.type}:${item.projectId}:${item.id}`;
      processLog.info({ itemKey }, 'evaluating');
      await sleep(1);
      await options.process?.(item, triggers, log);
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          executorLog.info({ itemKey, actionId: 'a-1' }, 'call done');
          resolve();
        }, 1),
      );
      processLog.info({ itemKey }, 'decided');
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
    pipeline.wake(store.pending().find((e) => e.id === accepted.id)!);
    return accepted.id;
  };
  const lines = () => raw.map((text) => JSON.parse(text) as Line);
  return { pipeline, deliver, lines, log };
}

const ids = (line: Line) => ({
  delivery: line.delivery,
  deliveries: line.deliveries,
  item: line.item,
  job: line.job,
});

describe('pipeline log context', () => {
  it('a delivery processed end to end: every line of its item run carries its id and the item', async () => {
    const s = await setup();
    const id = await s.deliver('issue.json');
    await s.pipeline.idle();
    const run = s.lines().filter((line) => line.part === 'process' || line.part === 'executor');
    expect(run.map((line) => line.msg)).toEqual(['evaluating', 'call done', 'decided']);
    for (const line of run)
      expect(ids(line)).toEqual({ delivery: id, deliveries: [id], item: ISSUE_KEY, job: undefined });
  });

  it('two deliveries coalesced into one run: its lines carry both ids, the first as `delivery`', async () => {
    const s = await setup({ debounceMs: 30 });
    const first = await s.deliver('issue.json');
    const second = await s.deliver(
      'issue-close.json',
      (b) => (b.object_attributes.id = ISSUE.object_attributes.id),
    );
    await s.pipeline.idle();
    const run = s.lines().filter((line) => line.part === 'process' || line.part === 'executor');
    expect(run.map((line) => line.msg)).toEqual(['evaluating', 'call done', 'decided']);
    for (const line of run)
      expect(ids(line)).toEqual({
        delivery: first,
        deliveries: [first, second],
        item: ISSUE_KEY,
        job: undefined,
      });
  });

  it("runs one after another (concurrency 1) each carry their own ids, never the previous run's", async () => {
    const s = await setup({ concurrency: 1 });
    const a = await s.deliver('issue.json', (b) => (b.object_attributes.id = 1));
    const b = await s.deliver('issue.json', (body) => (body.object_attributes.id = 2));
    const c = await s.deliver('issue.json', (body) => (body.object_attributes.id = 3));
    await s.pipeline.idle();
    const seen = s
      .lines()
      .filter((line) => line.part === 'process' || line.part === 'executor')
      .map((line) => [line.itemKey, line.delivery, line.deliveries, line.item]);
    const expected = (id: string, n: number) => [`issue:${PROJECT}:${n}`, id, [id], `issue:${PROJECT}:${n}`];
    expect(seen).toHaveLength(9);
    expect(new Set(seen.map((line) => JSON.stringify(line)))).toEqual(
      new Set([expected(a, 1), expected(b, 2), expected(c, 3)].map((line) => JSON.stringify(line))),
    );
  });

  it("the pipeline's own lines carry the delivery: a payload it cannot read", async () => {
    const s = await setup();
    const id = await s.deliver('issue.json', (b) => (b.object_attributes = 'broken'));
    await s.pipeline.idle();
    const skipped = s.lines().find((line) => line.msg === 'delivery skipped: payload not understood');
    expect(skipped && ids(skipped)).toEqual({
      delivery: id,
      deliveries: undefined,
      item: undefined,
      job: undefined,
    });
  });

  it('a delivery pulled in from the inbox when a run ends carries its own id, none of that run', async () => {
    // Past the queue limit deliveries wait in the inbox; the end of the last run pulls them in.
    const s = await setup({ queueLimit: 2 });
    await s.deliver('issue.json', (b) => (b.object_attributes.id = 1));
    await s.deliver('issue.json', (b) => (b.object_attributes.id = 2));
    const waiting = await s.deliver('issue.json', (b) => (b.object_attributes = 'broken'));
    await s.pipeline.idle();
    const skipped = s.lines().find((line) => line.msg === 'delivery skipped: payload not understood');
    expect(skipped && ids(skipped)).toEqual({
      delivery: waiting,
      deliveries: undefined,
      item: undefined,
      job: undefined,
    });
  });

  it("the pipeline's own lines carry the delivery: resolving failed, retried, then processed", async () => {
    let failures = 1;
    const s = await setup({
      resolver: {
        mergeRequestsForBranch: async (projectId) => {
          if (failures-- > 0) throw new Transient('503');
          await sleep(1);
          return [{ type: 'merge_request', projectId, id: 99 }];
        },
      },
    });
    const id = await s.deliver('push.json');
    await s.pipeline.idle();
    const lines = s.lines();
    const retrying = lines.find((line) => line.msg === 'could not resolve the delivery yet; retrying');
    expect(retrying && ids(retrying)).toMatchObject({ delivery: id, deliveries: undefined });
    const run = lines.filter((line) => line.part === 'process' || line.part === 'executor');
    expect(run).toHaveLength(3);
    const project = fixture('push.json').project_id as number;
    for (const line of run)
      expect(ids(line)).toMatchObject({ delivery: id, item: `merge_request:${project}:99` });
  });

  it("a failed run's lines, the pipeline's and the processor's, carry the deliveries and the item", async () => {
    let failures = 1;
    const s = await setup({
      process: async (_item, _triggers, log) => {
        if (failures-- > 0) {
          log.child({ part: 'api' }).warn('server answered 503');
          throw new Transient('503');
        }
      },
    });
    const id = await s.deliver('issue.json');
    await s.pipeline.idle();
    const lines = s.lines();
    const failed = lines.filter((line) => line.msg === 'item run failed; retrying' || line.part === 'api');
    expect(failed.map((line) => line.msg)).toEqual(['server answered 503', 'item run failed; retrying']);
    for (const line of failed)
      expect(ids(line)).toEqual({ delivery: id, deliveries: [id], item: ISSUE_KEY, job: undefined });
  });

  it('lines logged outside the pipeline, before and after, carry no id', async () => {
    const s = await setup();
    s.log.info('before');
    await s.deliver('issue.json');
    s.log.info('between');
    await s.pipeline.idle();
    s.log.info('after');
    for (const msg of ['before', 'between', 'after']) {
      const line = s.lines().find((l) => l.msg === msg);
      expect(line && ids(line)).toEqual({
        delivery: undefined,
        deliveries: undefined,
        item: undefined,
        job: undefined,
      });
    }
  });
});
