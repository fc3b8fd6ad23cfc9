import { sign } from '@octokit/webhooks-methods';
import express from 'express';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHookHandler, type DeliveryOutcome, type Inbox } from '../../src/receiver/hook-handler.ts';
import { createReceiverServer, listen } from '../../src/receiver/server.ts';
import { HOOK_FIXTURES, fixtureText } from '../events/fixtures.ts';

const SECRET = 'hook-secret-for-tests';

/** An inbox that keeps deliveries in memory and knows duplicates by key, like the store does. */
interface Kept {
  id: string;
  key: string;
  kind: string;
  body: unknown;
  /** The received bytes, as text (the store keeps the bytes as they are). */
  bodyText?: string;
  headers: Record<string, string>;
}

function memoryInbox(): Inbox & { entries: Kept[]; fail: boolean; full: boolean } {
  const entries: Kept[] = [];
  return {
    entries,
    fail: false,
    full: false,
    async accept(delivery) {
      if (this.fail) throw new Error('disk full');
      if (this.full)
        throw Object.assign(new Error('the inbox holds 2 unprocessed deliveries (the limit, maxPending)'), {
          code: 'inbox_full',
        });
      const seen = entries.find((e) => e.key === delivery.key);
      if (seen) return { id: seen.id, duplicate: true };
      const id = `d${entries.length + 1}`;
      entries.push({
        id,
        key: delivery.key,
        kind: delivery.kind,
        body: delivery.body,
        bodyText: delivery.bodyJson?.toString(),
        headers: delivery.headers,
      });
      return { id, duplicate: false };
    },
  };
}

function start(
  options: { signature?: boolean; limitBytes?: number; readingLimitBytes?: number; open?: boolean } = {},
) {
  const inbox = memoryInbox();
  const outcomes: DeliveryOutcome[] = [];
  const reasons: string[] = [];
  const woken: string[] = [];
  const again: string[] = [];
  const handler = createHookHandler({
    verify: {
      token: options.open ? undefined : SECRET,
      signature: options.signature ? { secret: 'sign-secret' } : undefined,
    },
    inbox,
    limitBytes: options.limitBytes,
    readingLimitBytes: options.readingLimitBytes,
    onAccepted: (delivery) => woken.push(delivery.id),
    onDuplicate: (delivery) => again.push(delivery.id),
    onOutcome: (outcome, info) => {
      outcomes.push(outcome);
      if (info.reason !== undefined) reasons.push(info.reason);
    },
  });
  const server = createReceiverServer({ hookPath: '/hooks', hookHandler: handler, app: express() });
  return { server, inbox, outcomes, woken, again, reasons, handler };
}

describe('POST /hooks intake', () => {
  let s: ReturnType<typeof start>;
  let url = '';
  let server: Server;
  beforeAll(async () => {
    s = start({ limitBytes: 64 * 1024 });
    server = s.server;
    url = `${(await listen(server, 0, '127.0.0.1')).url}/hooks`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    s.inbox.entries.length = 0;
    s.inbox.fail = false;
    s.inbox.full = false;
    s.reasons.length = 0;
    s.outcomes.length = 0;
    s.woken.length = 0;
  });

  const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gitlab-token': SECRET, ...headers },
      body,
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

  it.each(HOOK_FIXTURES.filter(([name]) => name !== 'wiki_page.json'))(
    'accepts %s sent as %s and persists it first',
    async (name, event) => {
      const res = await post(fixtureText(name), { 'x-gitlab-event': event });
      expect(res).toEqual({ status: 202, body: { message: 'accepted', id: 'd1' } });
      expect(s.inbox.entries).toHaveLength(1);
      expect(s.inbox.entries[0]?.headers).toEqual({ 'x-gitlab-event': event });
      expect(s.woken).toEqual(['d1']);
    },
  );

  it('answers a kind the bot does not handle 202 ignored and keeps nothing', async () => {
    const res = await post(fixtureText('wiki_page.json'), { 'x-gitlab-event': 'Wiki Page Hook' });
    expect(res).toEqual({ status: 202, body: { message: 'ignored', kind: 'wiki_page' } });
    expect(s.inbox.entries).toHaveLength(0);
  });

  it('answers the same delivery twice as duplicate, stores it once, and hands the copy on as a re-run hint', async () => {
    const first = await post(fixtureText('issue.json'), { 'x-gitlab-event': 'Issue Hook' });
    const again = await post(fixtureText('issue.json'), { 'x-gitlab-event': 'Issue Hook' });
    expect(first.body).toEqual({ message: 'accepted', id: 'd1' });
    expect(again).toEqual({ status: 202, body: { message: 'duplicate', id: 'd1' } });
    expect(s.inbox.entries).toHaveLength(1);
    expect(s.woken).toEqual(['d1']);
    // The same bytes may be a second event (v3 hooks: whole seconds, no labels): the items run again.
    expect(s.again).toEqual(['d1']);
  });

  it.each([
    ['a missing token', { 'x-gitlab-token': '' }],
    ['a wrong token', { 'x-gitlab-token': 'guess' }],
    ['a token of another length', { 'x-gitlab-token': `${SECRET}x` }],
  ])('refuses %s with 401 and a message that does not say which check failed', async (_name, headers) => {
    const res = await post(fixtureText('issue.json'), { 'x-gitlab-event': 'Issue Hook', ...headers });
    expect(res).toEqual({ status: 401, body: { message: 'unauthorized' } });
    expect(s.inbox.entries).toHaveLength(0);
  });

  it.each([
    ['malformed JSON', '{"object_kind": ', { 'x-gitlab-event': 'Issue Hook' }, 'body is not valid JSON'],
    ['a JSON array', '[1,2]', { 'x-gitlab-event': 'Issue Hook' }, 'body must be a JSON object'],
    ['a JSON string', '"hello"', { 'x-gitlab-event': 'Issue Hook' }, 'body must be a JSON object'],
    ['no X-Gitlab-Event', '{"object_kind":"issue"}', {}, 'missing X-Gitlab-Event header'],
    ['no object_kind', '{"object_attributes":{}}', { 'x-gitlab-event': 'Issue Hook' }, 'missing object_kind'],
    [
      'a body nested too deeply to store',
      `{"object_kind":"issue","x":${'['.repeat(5000)}${']'.repeat(5000)}}`,
      { 'x-gitlab-event': 'Issue Hook' },
      'body is nested more than 64 levels deep',
    ],
    [
      'invalid UTF-8',
      Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      { 'x-gitlab-event': 'Issue Hook' },
      'body is not valid UTF-8',
    ],
  ] as const)('answers %s with 400 and a message', async (_name, body, headers, message) => {
    const res = await post(body, headers);
    expect(res).toEqual({ status: 400, body: { message } });
    expect(s.inbox.entries).toHaveLength(0);
  });

  it('accepts a body with many brackets that nests shallowly (the depth limit counts nesting, not brackets)', async () => {
    const body = JSON.stringify({
      object_kind: 'issue',
      commits: Array.from({ length: 300 }, (_, i) => ({ id: i, tags: [] })),
    });
    const res = await post(body, { 'x-gitlab-event': 'Issue Hook' });
    expect(res.status).toBe(202);
    expect(s.inbox.entries).toHaveLength(1);
    // The received text goes to the store as is (it keeps it rather than serialising the body again).
    expect(s.inbox.entries[0]?.bodyText).toBe(body);
    expect(s.inbox.entries[0]?.body).toEqual(JSON.parse(body));
  });

  it('accepts a body that starts with a UTF-8 byte order mark (dropped, as decoders do)', async () => {
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('{"object_kind":"issue","x":1}'),
    ]);
    const res = await post(body, { 'x-gitlab-event': 'Issue Hook' });
    expect(res.status).toBe(202);
    expect(s.inbox.entries.at(-1)?.bodyText).toBe('{"object_kind":"issue","x":1}');
  });

  it('knows a body sent again with a byte order mark as the same delivery (the key is of the JSON text)', async () => {
    const text = '{"object_kind":"issue","y":2}';
    const first = await post(text, { 'x-gitlab-event': 'Issue Hook' });
    const again = await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), {
      'x-gitlab-event': 'Issue Hook',
    });
    expect(again).toEqual({ status: 202, body: { message: 'duplicate', id: first.body.id } });
  });

  it('answers a body over the limit with 413', async () => {
    const big = JSON.stringify({ object_kind: 'issue', pad: 'x'.repeat(70 * 1024) });
    const res = await post(big, { 'x-gitlab-event': 'Issue Hook' });
    expect(res).toEqual({ status: 413, body: { message: 'body too large (limit 65536 bytes)' } });
  });

  it('answers 503 when the delivery cannot be persisted, and does not wake processing', async () => {
    s.inbox.fail = true;
    const res = await post(fixtureText('issue.json'), { 'x-gitlab-event': 'Issue Hook' });
    expect(res).toEqual({ status: 503, body: { message: 'could not persist the delivery; try again' } });
    expect(s.woken).toEqual([]);
  });

  it('answers a full inbox 503 with the reason and Retry-After, and does not wake processing', async () => {
    s.inbox.full = true;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'x-gitlab-token': SECRET, 'x-gitlab-event': 'Issue Hook' },
      body: fixtureText('issue.json'),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('30');
    expect(await res.json()).toEqual({
      message: 'inbox full: the inbox holds 2 unprocessed deliveries (the limit, maxPending)',
    });
    expect(s.outcomes).toEqual(['inbox_full']);
    expect(s.reasons).toEqual([
      'inbox full: the inbox holds 2 unprocessed deliveries (the limit, maxPending)',
    ]);
    expect(s.woken).toEqual([]);
  });

  it('reports every outcome for metrics', async () => {
    await post(fixtureText('issue.json'), { 'x-gitlab-event': 'Issue Hook' });
    await post(fixtureText('issue.json'), { 'x-gitlab-event': 'Issue Hook' });
    await post('{', { 'x-gitlab-event': 'Issue Hook' });
    await post('{}', { 'x-gitlab-token': 'no' });
    expect(s.outcomes).toEqual(['accepted', 'duplicate', 'bad_request', 'unauthorized']);
  });
});

describe('POST /hooks with an HMAC signature (signing proxy)', () => {
  let s: ReturnType<typeof start>;
  let url = '';
  beforeAll(async () => {
    s = start({ signature: true });
    url = `${(await listen(s.server, 0, '127.0.0.1')).url}/hooks`;
  });
  afterAll(() => new Promise<void>((resolve) => s.server.close(() => resolve())));

  const post = (body: string, headers: Record<string, string>) =>
    fetch(url, {
      method: 'POST',
      headers: { 'x-gitlab-event': 'Issue Hook', 'x-gitlab-token': SECRET, ...headers },
      body,
    }).then(async (r) => ({ status: r.status, body: await r.json() }));

  it('accepts a valid signature of the raw body', async () => {
    const body = fixtureText('issue.json');
    const res = await post(body, { 'x-hookbot-signature-256': await sign('sign-secret', body) });
    expect(res.status).toBe(202);
  });

  it.each([
    ['no signature', {}],
    ['a signature of other bytes', { 'x-hookbot-signature-256': 'sha256=' + '0'.repeat(64) }],
    ['a malformed signature', { 'x-hookbot-signature-256': 'md5=abc' }],
  ])('refuses %s with the same 401', async (_name, headers) => {
    expect(await post(fixtureText('issue.json'), headers)).toEqual({
      status: 401,
      body: { message: 'unauthorized' },
    });
  });
});

/** A raw HTTP exchange: headers and part of a body sent, the rest held back until `finish`. */
function heldRequest(url: string, headers: Record<string, string | number>, sent: string) {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.setEncoding('utf8');
  let received = '';
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined); // the server may close while we still write: that is the point
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  socket.write(`POST ${pathname} HTTP/1.1\r\nhost: ${hostname}\r\n${lines.join('\r\n')}\r\n\r\n${sent}`);
  return {
    /** The server's whole answer, once it closed the connection. */
    answer: async () => {
      await closed;
      return received;
    },
    /** Resolves once the server answered (at least its status line and headers). */
    answered: () =>
      new Promise<string>((resolve) => {
        const check = () => (received.includes('\r\n\r\n') ? resolve(received) : undefined);
        socket.on('data', check);
        check();
      }),
    finish: (rest: string) => socket.write(rest),
    destroy: () => socket.destroy(),
  };
}

describe('POST /hooks refuses before reading the body (issue 15)', () => {
  let s: ReturnType<typeof start>;
  let url = '';
  beforeAll(async () => {
    s = start({ limitBytes: 64 * 1024, readingLimitBytes: 100 * 1024 });
    url = `${(await listen(s.server, 0, '127.0.0.1')).url}/hooks`;
  });
  afterAll(() => new Promise<void>((resolve) => s.server.close(() => resolve())));
  beforeEach(() => {
    s.inbox.entries.length = 0;
    s.outcomes.length = 0;
    s.reasons.length = 0;
  });

  const body = (bytes: number) => {
    const head = '{"object_kind":"issue","pad":"';
    return `${head}${'x'.repeat(bytes - head.length - 2)}"}`;
  };

  it('answers a wrong token 401 with Connection: close as soon as the headers arrive, the body unread', async () => {
    const text = body(60 * 1024);
    // The last byte is held back: the answer cannot wait for the body.
    const held = heldRequest(
      url,
      { 'content-length': text.length, 'x-gitlab-token': 'guess', 'x-gitlab-event': 'Issue Hook' },
      text.slice(0, -1),
    );
    const answer = await held.answer();
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer).toContain('{"message":"unauthorized"}');
    expect(s.outcomes).toEqual(['unauthorized']);
    expect(s.inbox.entries).toEqual([]);
  });

  it('answers a missing signature 401 from the headers alone too', async () => {
    const signed = start({ signature: true });
    const signedUrl = `${(await listen(signed.server, 0, '127.0.0.1')).url}/hooks`;
    try {
      const text = body(10 * 1024);
      const held = heldRequest(
        signedUrl,
        { 'content-length': text.length, 'x-gitlab-token': SECRET, 'x-gitlab-event': 'Issue Hook' },
        text.slice(0, -1),
      );
      expect(await held.answer()).toMatch(/^HTTP\/1\.1 401 /);
    } finally {
      await new Promise<void>((resolve) => signed.server.close(() => resolve()));
    }
  });

  it('caps the bytes of bodies being read at once: past it 503 with the reason and Retry-After, unread', async () => {
    const text = body(60 * 1024);
    const headers = {
      'x-gitlab-token': SECRET,
      'x-gitlab-event': 'Issue Hook',
      'content-length': text.length,
    };
    // 60 KB being read (held back by its last byte): a second 60 KB would pass the 100 KB cap.
    const first = heldRequest(url, headers, text.slice(0, -1));
    // The first is counted from its headers on: wait until the server is reading it.
    await until(() => s.handler.readingBytes() > 0);
    const second = heldRequest(url, headers, text.slice(0, -1));
    const refused = await second.answer();
    expect(refused).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused.toLowerCase()).toContain('retry-after: 30');
    expect(refused.toLowerCase()).toContain('connection: close');
    expect(refused).toContain('too many deliveries being read at once (over 102400 bytes); try again later');
    expect(s.outcomes).toEqual(['overloaded']);
    // The first completes, and its bytes are released: the next one is read.
    first.finish(text.slice(-1));
    expect(await first.answered()).toMatch(/^HTTP\/1\.1 202 /);
    first.destroy();
    await until(() => s.handler.readingBytes() === 0);
    const third = await fetch(url, {
      method: 'POST',
      headers: { 'x-gitlab-token': SECRET, 'x-gitlab-event': 'Issue Hook' },
      body: text.replace('pad', 'pad3'),
    });
    expect(third.status).toBe(202);
  });

  it('reads a lone body at the body limit even when the cap is set lower', async () => {
    const low = start({ limitBytes: 64 * 1024, readingLimitBytes: 1024 });
    const lowUrl = `${(await listen(low.server, 0, '127.0.0.1')).url}/hooks`;
    try {
      const res = await fetch(lowUrl, {
        method: 'POST',
        headers: { 'x-gitlab-token': SECRET, 'x-gitlab-event': 'Issue Hook' },
        body: body(60 * 1024),
      });
      expect(res.status).toBe(202);
    } finally {
      await new Promise<void>((resolve) => low.server.close(() => resolve()));
    }
  });

  it('counts a body without a declared length as it arrives, and refuses it past the cap', async () => {
    const text = body(60 * 1024);
    const auth = { 'x-gitlab-token': SECRET, 'x-gitlab-event': 'Issue Hook' };
    const first = heldRequest(url, { ...auth, 'content-length': text.length }, text.slice(0, -1));
    await until(() => s.handler.readingBytes() > 0);
    const chunk = body(50 * 1024);
    // Chunked: no declared length, so it is counted as its bytes come in.
    const chunked = heldRequest(
      url,
      { ...auth, 'transfer-encoding': 'chunked' },
      `${chunk.length.toString(16)}\r\n${chunk}\r\n`,
    );
    const refused = await chunked.answer();
    expect(refused).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused.toLowerCase()).toContain('retry-after: 30');
    expect(s.outcomes).toEqual(['overloaded']);
    first.destroy();
    await until(() => s.handler.readingBytes() === 0);
  });
});

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
