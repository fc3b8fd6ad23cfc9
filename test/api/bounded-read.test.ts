/**
 * A call with `maxBytes` never holds more than about that much of an answer (issue 28, item 5: a
 * 200 MB `.hookbot.yml` was downloaded whole, then measured). Over real HTTP against a server that
 * streams without end (no Content-Length), and one that declares a length past the bound.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.ts';
import { createHttp } from '../../src/api/http.ts';
import { waitFor } from '../helpers/wait-for.ts';

const CHUNK = Buffer.alloc(64 * 1024, 0x61);
/** What the server writes at most before it stops by itself (the test's own bound). */
const SERVER_LIMIT = 64 * 1024 * 1024;

interface Streamer {
  url: string;
  /** Bytes written before the client went away (or the server's own limit). */
  written(): number;
  closed(): boolean;
  headers(): Record<string, string | string[] | undefined>;
  server: Server;
}

async function streamer(declare?: number): Promise<Streamer> {
  let written = 0;
  let closed = false;
  let seen: Record<string, string | string[] | undefined> = {};
  const server = createServer((req, res) => {
    seen = req.headers;
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(declare === undefined ? {} : { 'content-length': String(declare) }),
    });
    res.on('close', () => {
      closed = true;
    });
    res.write('{"content":"');
    const pump = () => {
      while (!closed && written < SERVER_LIMIT) {
        written += CHUNK.length;
        if (!res.write(CHUNK)) return void res.once('drain', pump);
      }
      if (!closed) res.end('"}');
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    written: () => written,
    closed: () => closed,
    headers: () => seen,
    server,
  };
}

describe('HTTP core: a bounded read', () => {
  let current: Streamer | undefined;
  afterEach(async () => {
    current?.server.closeAllConnections();
    await new Promise((resolve) => current?.server.close(resolve));
  });

  it('an answer without end is aborted past maxBytes: too_large, not retried, the connection closed early', async () => {
    current = await streamer();
    const http = createHttp({ baseUrl: current.url, token: 't', retry: { limit: 3, baseDelayMs: 1 } });
    const max = 512 * 1024;
    const failure = await http
      .request({ method: 'GET', route: '/projects/1/repository/files', maxBytes: max })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ApiError).kind).toBe('too_large');
    expect((failure as ApiError).retryable).toBe(false);
    expect((failure as ApiError).message).toContain(`passed ${max} bytes`);
    expect(http.stats.calls).toBe(1);
    // The client hung up: the server stops far short of what it would have sent.
    await waitFor(() => current!.closed(), 10_000, 'the server to see the client go');
    expect(current.written()).toBeLessThan(SERVER_LIMIT / 4);
    // No compression was asked for: the bytes counted are the bytes held.
    expect(current.headers()['accept-encoding'] ?? '').not.toMatch(/gzip|br|deflate/);
  });

  it('a declared length past maxBytes is refused before the body is read', async () => {
    current = await streamer(SERVER_LIMIT + 14);
    const http = createHttp({ baseUrl: current.url, token: 't' });
    const failure = await http
      .request({ method: 'GET', route: '/x', maxBytes: 1024 })
      .catch((error: unknown) => error);
    expect((failure as ApiError).kind).toBe('too_large');
    expect((failure as ApiError).message).toContain(`(${SERVER_LIMIT + 14} seen)`);
  });

  it('an answer within maxBytes is read as any other', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    current = { server } as Streamer;
    const { port } = server.address() as AddressInfo;
    const http = createHttp({ baseUrl: `http://127.0.0.1:${port}`, token: 't' });
    expect(await http.request({ method: 'GET', route: '/x', maxBytes: 100 })).toEqual({ ok: true });
  });
});
