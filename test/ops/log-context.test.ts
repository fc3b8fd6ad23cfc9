/**
 * The log context over the real logger: the ids of the work under way appear on every line logged
 * inside it (across awaits, timers and callbacks), on no line outside, never over an id given
 * explicitly, and with redaction as before.
 */
import { EventEmitter } from 'node:events';
import type { DestinationStream } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  currentLogContext,
  runInNewLogContext,
  runWithLogContext,
  type LogContext,
} from '../../src/ops/log-context.ts';
import { createLogger, type HookbotLogger } from '../../src/ops/logger.ts';

const API_TOKEN = 'glpat-CONTEXT-api-0001';

type Line = Record<string, unknown> & { msg: string };

/** A logger writing JSON lines into an array, as in logger.test.ts. */
function collected(format: 'json' | 'pretty' = 'json') {
  const raw: string[] = [];
  const destination: DestinationStream = { write: (line: string) => void raw.push(line) };
  const log = createLogger({ level: 'trace', format, destination, secrets: [API_TOKEN] });
  return {
    log,
    raw,
    lines: () => raw.map((line) => JSON.parse(line) as Line),
    /** The line with this message. */
    line(msg: string): Line {
      const found = raw.map((text) => JSON.parse(text) as Line).find((line) => line.msg === msg);
      if (!found) throw new Error(`no line "${msg}"`);
      return found;
    },
  };
}

const ids = (line: Line) => ({
  delivery: line.delivery,
  deliveries: line.deliveries,
  job: line.job,
  item: line.item,
});

/** A line's context fields when it has none. */
const NONE = { delivery: undefined, deliveries: undefined, job: undefined, item: undefined };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('log context: where the fields appear', () => {
  const ways: { name: string; log: (log: HookbotLogger) => Promise<void> }[] = [
    { name: 'logged at once', log: async (log) => log.info('inside') },
    {
      name: 'after awaits',
      log: async (log) => {
        await Promise.resolve();
        await sleep(1);
        log.info('inside');
      },
    },
    {
      name: 'from a timer set inside',
      log: (log) => new Promise((resolve) => setTimeout(() => resolve(log.info('inside')), 1)),
    },
    {
      name: 'from setImmediate and a resolved promise chain',
      log: (log) =>
        new Promise((resolve) =>
          setImmediate(() => void Promise.resolve().then(() => resolve(log.info('inside')))),
        ),
    },
    {
      name: 'from an event listener called inside',
      log: async (log) => {
        const emitter = new EventEmitter();
        emitter.on('tick', () => log.info('inside'));
        await sleep(1);
        emitter.emit('tick');
      },
    },
    {
      name: 'through a child logger',
      log: async (log) => {
        await sleep(1);
        log.child({ part: 'executor' }).child({ step: 2 }).info('inside');
      },
    },
  ];

  it.each(ways)('a line $name carries the fields', async ({ log: write }) => {
    const c = collected();
    await runWithLogContext({ delivery: 'd-1', item: 'issue:1:2' }, () => write(c.log));
    expect(c.line('inside')).toMatchObject({ delivery: 'd-1', item: 'issue:1:2' });
  });

  it('lines before, after and beside the context carry none of its fields', async () => {
    const c = collected();
    c.log.info('before');
    let release: () => void = () => undefined;
    const inside = runWithLogContext({ delivery: 'd-1', job: 'rules:x-1' }, async () => {
      await new Promise<void>((resolve) => (release = resolve));
      c.log.info('inside');
    });
    c.log.info('beside'); // logged while the context's work is still waiting
    setTimeout(() => c.log.info('timer outside'), 0);
    await sleep(5);
    release();
    await inside;
    c.log.info('after');
    expect(c.lines().map((line) => [line.msg, ids(line)])).toEqual([
      ['before', NONE],
      ['beside', NONE],
      ['timer outside', NONE],
      ['inside', { delivery: 'd-1', deliveries: undefined, job: 'rules:x-1', item: undefined }],
      ['after', NONE],
    ]);
    expect(currentLogContext()).toBeUndefined();
  });

  it('two contexts running at once keep their own ids', async () => {
    const c = collected();
    const work = (delivery: string, delay: number) =>
      runWithLogContext({ delivery }, async () => {
        for (let step = 0; step < 3; step++) {
          await sleep(delay);
          c.log.info({ step }, `work of ${delivery}`);
        }
      });
    await Promise.all([work('d-a', 2), work('d-b', 3)]);
    const seen = c.lines().map((line) => [line.msg, line.delivery]);
    expect(seen).toHaveLength(6);
    for (const [msg, delivery] of seen) expect(msg).toBe(`work of ${String(delivery)}`);
  });
});

describe('log context: nesting', () => {
  const cases: { name: string; outer: LogContext; inner: LogContext; expected: LogContext }[] = [
    {
      name: 'inner fields are added to the outer ones',
      outer: { job: 'rules:x-1' },
      inner: { item: 'issue:1:2' },
      expected: { job: 'rules:x-1', item: 'issue:1:2' },
    },
    {
      name: 'the inner field wins over the outer one of the same name',
      outer: { delivery: 'd-1', item: 'issue:1:2' },
      inner: { delivery: 'd-2' },
      expected: { delivery: 'd-2', item: 'issue:1:2' },
    },
    {
      name: 'an inner field left undefined keeps the outer one',
      outer: { delivery: 'd-1' },
      inner: { delivery: undefined, deliveries: ['d-1', 'd-3'] },
      expected: { delivery: 'd-1', deliveries: ['d-1', 'd-3'] },
    },
  ];

  it.each(cases)('$name', async ({ outer, inner, expected }) => {
    const c = collected();
    await runWithLogContext(outer, async () => {
      await sleep(1);
      await runWithLogContext(inner, async () => {
        await sleep(1);
        c.log.info('inner');
      });
      c.log.info('outer again');
    });
    expect(ids(c.line('inner'))).toEqual({ ...NONE, ...expected });
    expect(ids(c.line('outer again'))).toEqual({ ...NONE, ...outer });
  });

  it('a new context inherits nothing from the one it is started in', async () => {
    const c = collected();
    await runWithLogContext({ delivery: 'd-1', deliveries: ['d-1'], item: 'issue:1:2' }, () =>
      runInNewLogContext({ delivery: 'd-9' }, async () => {
        await sleep(1);
        c.log.info('fresh');
      }),
    );
    expect(ids(c.line('fresh'))).toEqual({ ...NONE, delivery: 'd-9' });
  });

  it('returns what the function returns, and changing the given fields later changes nothing', async () => {
    const c = collected();
    const deliveries = ['d-1'];
    const fields: LogContext = { delivery: 'd-1', deliveries };
    const result = await runWithLogContext(fields, async () => {
      fields.delivery = 'changed';
      deliveries.push('changed');
      await sleep(1);
      c.log.info('inside');
      return 42;
    });
    expect(result).toBe(42);
    expect(ids(c.line('inside'))).toMatchObject({ delivery: 'd-1', deliveries: ['d-1'] });
  });
});

describe('log context: what wins, and what stays as it was', () => {
  it('a field given to the log call wins over the context', async () => {
    const c = collected();
    await runWithLogContext({ delivery: 'd-ctx', item: 'issue:1:2' }, async () => {
      c.log.warn({ delivery: 'd-explicit' }, 'explicit');
      c.log.warn({ delivery: undefined }, 'explicitly undefined');
    });
    expect(ids(c.line('explicit'))).toMatchObject({ delivery: 'd-explicit', item: 'issue:1:2' });
    // pino drops an undefined field: the context's id then still marks the line.
    expect(ids(c.line('explicitly undefined'))).toMatchObject({ delivery: 'd-ctx' });
  });

  it("a child's binding wins over the context, and the key is written once", async () => {
    const c = collected();
    await runWithLogContext({ delivery: 'd-ctx', job: 'rules:x-1' }, async () => {
      c.log.child({ delivery: 'd-bound' }).child({ part: 'x' }).info('bound');
    });
    const [text] = c.raw;
    expect(text?.match(/"delivery":/g)).toHaveLength(1);
    expect(ids(c.line('bound'))).toMatchObject({ delivery: 'd-bound', job: 'rules:x-1' });
  });

  it('an Error logged directly still gets the context', async () => {
    const c = collected();
    await runWithLogContext({ job: 'retries:x-2' }, async () => c.log.error(new Error('boom')));
    expect(c.line('boom')).toMatchObject({ job: 'retries:x-2', err: { message: 'boom' } });
  });

  it('without a context, the object given to the log call is neither changed nor added to', () => {
    const c = collected();
    const fields = { kind: 'issue' };
    c.log.info(fields, 'plain');
    expect(fields).toEqual({ kind: 'issue' });
    expect(Object.keys(c.line('plain')).sort()).toEqual(['hostname', 'kind', 'level', 'msg', 'pid', 'time']);
  });

  it('inside a context, the object given to the log call is not changed', async () => {
    const c = collected();
    const fields = { kind: 'issue' };
    await runWithLogContext({ delivery: 'd-1' }, async () => c.log.info(fields, 'plain'));
    expect(fields).toEqual({ kind: 'issue' });
    expect(c.line('plain')).toMatchObject({ kind: 'issue', delivery: 'd-1' });
  });

  for (const format of ['json', 'pretty'] as const)
    it(`${format}: secrets are still redacted on a line with context, and the ids kept`, async () => {
      const raw: string[] = [];
      const log = createLogger({
        level: 'info',
        format,
        destination: { write: (line: string) => void raw.push(line) },
        secrets: [API_TOKEN],
      });
      await runWithLogContext({ delivery: 'd-secret', item: 'issue:1:2' }, async () => {
        await sleep(1);
        log.info(
          { token: 'unregistered-value-1', url: `http://git.test/api/v3/user?private_token=${API_TOKEN}` },
          `calling with ${API_TOKEN}`,
        );
      });
      const text = raw.join('');
      expect(text).not.toContain(API_TOKEN);
      expect(text).not.toContain('unregistered-value-1');
      expect(text).toContain('[REDACTED]');
      expect(text).toContain('d-secret');
      expect(text).toContain('issue:1:2');
    });

  it('a secret that made its way into a context field is redacted too', async () => {
    const c = collected();
    await runWithLogContext({ item: `issue:${API_TOKEN}` }, async () => c.log.info('odd id'));
    expect(c.line('odd id').item).toBe('issue:[REDACTED]');
  });
});
