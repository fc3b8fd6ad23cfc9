import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HOOK_FLAG, type HookDispatcher, type HookEventName } from '../../src/sandbox/context.ts';
import { createDb, emptyData, type Db, type HookRec } from '../../src/sandbox/db.ts';
import { createHookDispatcher, type HookDispatcherOptions } from '../../src/sandbox/hook-dispatcher.ts';

interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, received: Received) => void;

interface Receiver {
  url: string;
  received: Received[];
  /** Resolves when `count` requests have arrived. */
  arrived(count: number): Promise<void>;
  close(): Promise<void>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const answerOk: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
};

/** A hook receiver on 127.0.0.1 that records every request and lets `handler` answer it. */
async function startReceiver(handler: Handler = answerOk): Promise<Receiver> {
  const received: Received[] = [];
  let waiters: { count: number; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry: Received = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(entry);
      waiters = waiters.filter((w) => (received.length >= w.count ? (w.resolve(), false) : true));
      handler(req, res, entry);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}`,
    received,
    arrived: (count) =>
      received.length >= count
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ count, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  cleanups.push(() => receiver.close());
  return receiver;
}

function newDb(): Db {
  return createDb(emptyData(new Date().toISOString()));
}

const NO_FLAGS = {
  push_events: false,
  issues_events: false,
  merge_requests_events: false,
  tag_push_events: false,
  note_events: false,
  build_events: false,
  pipeline_events: false,
};

function addHook(
  db: Db,
  input: { url: string; project_id?: number; token?: string | null; flags?: Partial<typeof NO_FLAGS> },
): HookRec {
  const hook: HookRec = {
    id: db.nextId('hooks'),
    project_id: input.project_id ?? 1,
    url: input.url,
    token: input.token ?? null,
    ...NO_FLAGS,
    ...(input.flags ?? { push_events: true }),
    enable_ssl_verification: true,
    created_at: db.now(),
  };
  db.data.hooks.push(hook);
  return hook;
}

function dispatcher(db: Db, options: HookDispatcherOptions = {}): HookDispatcher {
  const d = createHookDispatcher(db, { timeoutMs: 2_000, ...options });
  cleanups.push(() => d.close());
  return d;
}

/** A port nothing listens on: bound, then released. */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hook`;
}

describe('hook dispatcher: what is sent', () => {
  it('follows redirects as HTTP clients do: 307 resends the POST, 302 goes on as a GET; the last status is recorded', async () => {
    const receiver = await startReceiver((req, res) => {
      if (req.url === '/moved-keep') res.writeHead(307, { location: '/kept' }).end();
      else if (req.url === '/moved-get') res.writeHead(302, { location: '/got' }).end();
      else res.writeHead(204).end();
    });
    const db = newDb();
    addHook(db, { url: `${receiver.url}/moved-keep` });
    addHook(db, { url: `${receiver.url}/moved-get` });
    const hooks = dispatcher(db);
    hooks.emit(1, 'Push Hook', { object_kind: 'push' });
    await hooks.idle();
    const byPath = new Map(receiver.received.map((r) => [r.path, r]));
    expect(byPath.get('/kept')).toMatchObject({ method: 'POST', body: '{"object_kind":"push"}' });
    expect(byPath.get('/got')).toMatchObject({ method: 'GET', body: '' });
    expect(hooks.recent().map((d) => d.status)).toEqual([204, 204]);
  });

  it('POSTs the payload as JSON with X-Gitlab-Event, and X-Gitlab-Token only when the hook has one', async () => {
    const receiver = await startReceiver();
    const db = newDb();
    addHook(db, { url: `${receiver.url}/with-token`, token: 's3cret' });
    addHook(db, { url: `${receiver.url}/without-token`, token: null });
    const hooks = dispatcher(db);
    const payload = { object_kind: 'push', ref: 'refs/heads/master', total_commits_count: 0 };

    hooks.emit(1, 'Push Hook', payload);
    await hooks.idle();

    const byPath = new Map(receiver.received.map((r) => [r.path, r]));
    expect([...byPath.keys()].sort()).toEqual(['/with-token', '/without-token']);
    for (const r of receiver.received) {
      expect(r.method).toBe('POST');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-gitlab-event']).toBe('Push Hook');
      expect(JSON.parse(r.body)).toEqual(payload);
    }
    expect(byPath.get('/with-token')?.headers['x-gitlab-token']).toBe('s3cret');
    expect(byPath.get('/without-token')?.headers).not.toHaveProperty('x-gitlab-token');
  });

  it.each(Object.entries(HOOK_FLAG) as [HookEventName, keyof HookRec][])(
    'sends %s only to hooks with %s on',
    async (event, flag) => {
      const receiver = await startReceiver();
      const db = newDb();
      addHook(db, { url: `${receiver.url}/on`, flags: { [flag]: true } });
      // Every other flag on, this one off: must receive every event but this one.
      const others = Object.fromEntries(Object.keys(NO_FLAGS).map((k) => [k, k !== flag]));
      addHook(db, { url: `${receiver.url}/off`, flags: others });
      const hooks = dispatcher(db);

      for (const name of Object.keys(HOOK_FLAG) as HookEventName[]) hooks.emit(1, name, { name });
      await hooks.idle();

      const on = receiver.received.filter((r) => r.path === '/on').map((r) => r.headers['x-gitlab-event']);
      const off = receiver.received.filter((r) => r.path === '/off').map((r) => r.headers['x-gitlab-event']);
      expect(on).toEqual([event]);
      expect(off.sort()).toEqual(
        Object.keys(HOOK_FLAG)
          .filter((name) => name !== event)
          .sort(),
      );
    },
  );

  it("sends nothing to another project's hooks", async () => {
    const receiver = await startReceiver();
    const db = newDb();
    addHook(db, { url: `${receiver.url}/project-2`, project_id: 2 });
    const hooks = dispatcher(db);

    hooks.emit(1, 'Push Hook', { object_kind: 'push' });
    await hooks.idle();

    expect(receiver.received).toEqual([]);
    expect(hooks.recent()).toEqual([]);
  });

  it('records the answer status and ignores it: a 500 is not retried', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(500).end('boom'));
    const db = newDb();
    const hook = addHook(db, { url: `${receiver.url}/hook` });
    const hooks = dispatcher(db, { retryTimeouts: 3, retryDelayMs: 1 });
    const payload = { object_kind: 'push' };

    hooks.emit(1, 'Push Hook', payload);
    await hooks.idle();

    expect(receiver.received).toHaveLength(1);
    expect(hooks.recent()).toEqual([
      expect.objectContaining({
        hookId: hook.id,
        url: `${receiver.url}/hook`,
        event: 'Push Hook',
        payload,
        status: 500,
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        durationMs: expect.any(Number),
      }),
    ]);
    expect(hooks.recent()[0]).not.toHaveProperty('error');
  });

  it('sends the payload as it was at emission, even if the object changes later', async () => {
    const receiver = await startReceiver();
    const db = newDb();
    addHook(db, { url: `${receiver.url}/hook` });
    const hooks = dispatcher(db);
    const payload: Record<string, unknown> = { title: 'before' };

    hooks.emit(1, 'Push Hook', payload);
    payload.title = 'after';
    await hooks.idle();

    expect(receiver.received.map((r) => JSON.parse(r.body))).toEqual([{ title: 'before' }]);
  });
});

describe('hook dispatcher: failures', () => {
  it('times out a slow receiver without ever blocking emit', async () => {
    const held: ServerResponse[] = [];
    const receiver = await startReceiver((_req, res) => held.push(res));
    cleanups.push(() => held.forEach((res) => res.destroy()));
    const db = newDb();
    addHook(db, { url: `${receiver.url}/slow` });
    const hooks = dispatcher(db, { timeoutMs: 150 });

    const returned = hooks.emit(1, 'Push Hook', { object_kind: 'push' });
    // emit has returned before the delivery even left: it only queued it.
    expect(returned).toBeUndefined();
    expect(receiver.received).toHaveLength(0);
    await hooks.idle();

    expect(receiver.received).toHaveLength(1);
    expect(hooks.recent()).toEqual([
      expect.objectContaining({ status: undefined, error: 'timed out after 150 ms' }),
    ]);
  });

  it('retries a timed-out delivery only when retryTimeouts is set, with the same payload', async () => {
    const held: ServerResponse[] = [];
    const receiver = await startReceiver((_req, res) => held.push(res));
    cleanups.push(() => held.forEach((res) => res.destroy()));
    const db = newDb();
    addHook(db, { url: `${receiver.url}/slow` });
    const hooks = dispatcher(db, { timeoutMs: 100, retryTimeouts: 2, retryDelayMs: 5 });

    hooks.emit(1, 'Push Hook', { n: 1 });
    await hooks.idle();

    expect(receiver.received.map((r) => r.body)).toEqual(['{"n":1}', '{"n":1}', '{"n":1}']);
    expect(hooks.recent().map((d) => d.error)).toEqual([
      'timed out after 100 ms',
      'timed out after 100 ms',
      'timed out after 100 ms',
    ]);
  });

  it('drops a refused connection without retry, even with retryTimeouts set', async () => {
    const db = newDb();
    const url = await closedPortUrl();
    addHook(db, { url });
    const hooks = dispatcher(db, { retryTimeouts: 3, retryDelayMs: 1 });

    hooks.emit(1, 'Push Hook', { object_kind: 'push' });
    await hooks.idle();

    expect(hooks.recent()).toHaveLength(1);
    expect(hooks.recent()[0]).toMatchObject({
      url,
      status: undefined,
      error: expect.stringMatching(/ECONNREFUSED/),
    });
  });
});

describe('hook dispatcher: ordering and concurrency', () => {
  it('delivers to one hook in order of emission, one at a time', async () => {
    let active = 0;
    let maxActive = 0;
    const receiver = await startReceiver((_req, res, entry) => {
      active += 1;
      maxActive = Math.max(maxActive, active);
      // Answer later requests faster than earlier ones: order can only come from the dispatcher.
      const n = (JSON.parse(entry.body) as { n: number }).n;
      setTimeout(
        () => {
          active -= 1;
          res.end('ok');
        },
        30 - n * 3,
      );
    });
    const db = newDb();
    addHook(db, { url: `${receiver.url}/ordered` });
    const hooks = dispatcher(db);

    for (let n = 1; n <= 8; n += 1) hooks.emit(1, 'Push Hook', { n });
    await hooks.idle();

    expect(receiver.received.map((r) => (JSON.parse(r.body) as { n: number }).n)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8,
    ]);
    expect(maxActive).toBe(1);
  });

  it('serves different hooks in parallel: one held delivery does not hold the others', async () => {
    let releaseSlow: (() => void) | undefined;
    const receiver = await startReceiver((req, res) => {
      if (req.url === '/slow') releaseSlow = () => res.end('ok');
      else res.end('ok');
    });
    const db = newDb();
    addHook(db, { url: `${receiver.url}/slow` });
    addHook(db, { url: `${receiver.url}/fast` });
    const hooks = dispatcher(db);

    hooks.emit(1, 'Push Hook', { n: 1 });
    // The slow hook's answer is held until the fast hook has received its delivery.
    await receiver.arrived(2);
    releaseSlow?.();
    await hooks.idle();

    expect(receiver.received.map((r) => r.path).sort()).toEqual(['/fast', '/slow']);
    expect(hooks.recent().map((d) => d.status)).toEqual([200, 200]);
  });

  it('keeps at most `concurrency` deliveries in flight over all hooks', async () => {
    let active = 0;
    let maxActive = 0;
    let held: ServerResponse[] = [];
    const receiver = await startReceiver((_req, res) => {
      active += 1;
      maxActive = Math.max(maxActive, active);
      held.push(res);
      if (held.length < 2) return;
      // Two are in flight: leave room for a third to show up if the bound were broken, then answer both.
      const batch = held;
      held = [];
      setTimeout(() => {
        for (const r of batch) {
          active -= 1;
          r.end('ok');
        }
      }, 50);
    });
    const db = newDb();
    for (const name of ['a', 'b', 'c', 'd']) addHook(db, { url: `${receiver.url}/${name}` });
    const hooks = dispatcher(db, { concurrency: 2 });

    hooks.emit(1, 'Push Hook', { n: 1 });
    await hooks.idle();

    expect(receiver.received.map((r) => r.path).sort()).toEqual(['/a', '/b', '/c', '/d']);
    expect(maxActive).toBe(2);
  });
});

describe('hook dispatcher: idle, recent, close', () => {
  it('resolves idle at once when nothing is queued', async () => {
    const hooks = dispatcher(newDb());
    await expect(hooks.idle()).resolves.toBeUndefined();
  });

  it('keeps only the most recent deliveries, newest last', async () => {
    const receiver = await startReceiver();
    const db = newDb();
    addHook(db, { url: `${receiver.url}/hook` });
    const hooks = dispatcher(db, { logSize: 3 });

    for (let n = 1; n <= 5; n += 1) hooks.emit(1, 'Push Hook', { n });
    await hooks.idle();

    expect(receiver.received).toHaveLength(5);
    expect(hooks.recent().map((d) => d.payload.n)).toEqual([3, 4, 5]);
  });

  it('close waits for the delivery in flight, drops the queued ones and accepts no more', async () => {
    const held: ServerResponse[] = [];
    const receiver = await startReceiver((_req, res) => held.push(res));
    const db = newDb();
    addHook(db, { url: `${receiver.url}/first` });
    addHook(db, { url: `${receiver.url}/second` });
    const hooks = createHookDispatcher(db, { timeoutMs: 5_000, concurrency: 1 });

    hooks.emit(1, 'Push Hook', { n: 1 });
    await receiver.arrived(1);
    let closed = false;
    const closing = hooks.close().then(() => {
      closed = true;
    });
    hooks.emit(1, 'Push Hook', { n: 2 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);

    held[0]!.end('ok');
    await closing;

    expect(receiver.received.map((r) => [r.path, r.body])).toEqual([['/first', '{"n":1}']]);
    expect(hooks.recent()).toEqual([expect.objectContaining({ url: `${receiver.url}/first`, status: 200 })]);
    await expect(hooks.idle()).resolves.toBeUndefined();
  });
});
