import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { pacedLoad } from '../../bench/paced-load.ts';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server that answers after `delayMs(n)` for its n-th request (1-based), recording the bodies. */
async function start(delayMs: (n: number) => number, status = 202) {
  const bodies: string[] = [];
  let n = 0;
  server = createServer((req, res) => {
    const own = ++n;
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      bodies.push(body);
      setTimeout(() => res.writeHead(status).end('{}'), delayMs(own));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, bodies };
}

const options = (port: number) => ({
  port,
  path: '/hooks',
  rate: 200,
  seconds: 0.5,
  connections: 4,
  headers: { 'content-type': 'application/json' },
  body: (n: number) => `{"n":${n}}`,
});

describe('pacedLoad', () => {
  it('sends rate x seconds requests, each body once, and reports their latencies', async () => {
    const { port, bodies } = await start(() => 0);
    const load = await pacedLoad(options(port));
    expect(load.answered).toBe(100);
    expect(load.non2xx).toBe(0);
    expect(bodies.map((b) => (JSON.parse(b) as { n: number }).n).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    expect(load.p50).toBeGreaterThanOrEqual(0);
    expect(load.p99).toBeGreaterThanOrEqual(load.p50);
  });

  it('charges the requests queued behind a slow answer for their wait (no coordinated omission)', async () => {
    // Every answer takes 60 ms over 4 connections: at most 4 answers per 60 ms (67/s) against a
    // schedule of 200/s, so the queue grows and later requests wait far longer than 60 ms from their
    // scheduled time. A closed-loop load would report about 60 ms for every one of them.
    const { port } = await start(() => 60);
    const load = await pacedLoad(options(port));
    expect(load.answered).toBe(100);
    expect(load.p50).toBeGreaterThan(200);
    expect(load.p99).toBeGreaterThan(load.p50);
  });

  it('counts answers outside 2xx apart from the latencies', async () => {
    const { port } = await start(() => 0, 401);
    const load = await pacedLoad(options(port));
    expect(load.non2xx).toBe(100);
    expect(load.answered).toBe(0);
  });
});
