/**
 * The benchmarks' load generator: wrk's report read right, and its request scripts (bench/wrk/*.lua)
 * driven for real against a recording server (wrk comes from scripts/install-wrk.sh, which npm test
 * runs when wrk is missing).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { hasWrk, parseWrkOutput, wrkLoad } from '../../bench/wrk.ts';

const REPORT = `Running 1s test @ http://127.0.0.1:37029/
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   193.14us  564.45us   9.24ms   93.70%
    Req/Sec    64.01k    27.39k   92.27k    72.73%
  Latency Distribution
     50%   50.00us
     75%   78.00us
     90%  274.00us
     99%    3.04ms
  69852 requests in 1.10s, 10.21MB read
  Non-2xx or 3xx responses: 23284
Requests/sec:  63522.49
Transfer/sec:      9.29MB
`;

describe('parseWrkOutput', () => {
  it('reads the rate, the answered requests, the percentiles in milliseconds and the failures', () => {
    expect(parseWrkOutput(REPORT)).toEqual({
      rps: 63522.49,
      answered: 69852 - 23284,
      p50: 0.05,
      p99: 3.04,
      non2xx: 23284,
    });
  });

  it('counts socket errors as failures and reads latencies in seconds', () => {
    const report = REPORT.replace('     99%    3.04ms', '     99%    1.20s')
      .replace('  Non-2xx or 3xx responses: 23284\n', '')
      .replace(
        '  69852 requests',
        '  Socket errors: connect 0, read 2, write 1, timeout 4\n  69852 requests',
      );
    expect(parseWrkOutput(report)).toMatchObject({ answered: 69852, p99: 1200, non2xx: 7 });
  });

  it('names what is missing from a report it cannot read', () => {
    expect(() => parseWrkOutput('unable to connect to 127.0.0.1:1 Connection refused')).toThrow(
      /requests in/,
    );
  });
});

interface Seen {
  headers: IncomingHttpHeaders;
  body: string;
}

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server that records every request and answers `status`. */
async function recording(status = 202): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      res.writeHead(status).end('{}');
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, seen };
}

/**
 * Called first by each test that drives wrk. Not a skip: a missing wrk is a broken setup (npm test
 * installs it), and each such test fails saying how to fix it (a hook failure would mark them skipped).
 */
function needWrk(): void {
  if (!hasWrk)
    throw new Error(
      'wrk is missing: this test drives it for real. npm test installs it (scripts/install-wrk.sh, ' +
        "Debian's apt-get, as root); without root run `sudo sh scripts/install-wrk.sh`.",
    );
}

describe('wrkLoad', () => {
  it('sends a distinct body per request, from the template, with the given headers', async () => {
    needWrk();
    const { url, seen } = await recording();
    const template = '{"object_kind":"merge_request","title":"bench [<id>]"}';
    const headers = { 'content-type': 'application/json', 'x-gitlab-token': 'secret' };
    const load = await wrkLoad({
      url,
      connections: 2,
      seconds: 1,
      requests: { distinct: { template, headers } },
    });

    expect(seen.length).toBeGreaterThan(10);
    expect(load.answered).toBeGreaterThan(0);
    expect(load.answered).toBeLessThanOrEqual(seen.length);
    expect(load.non2xx).toBe(0);
    expect(new Set(seen.map((s) => s.body)).size).toBe(seen.length);
    for (const { headers: got, body } of seen) {
      expect(body).toMatch(/^\{"object_kind":"merge_request","title":"bench \d+-\d+-\d+-\d+"\}$/);
      expect(got['x-gitlab-token']).toBe('secret');
      expect(got['content-type']).toBe('application/json');
      expect(Number(got['content-length'])).toBe(Buffer.byteLength(body));
    }
  });

  it('takes prepared requests from the pool in turn, each with its own headers', async () => {
    needWrk();
    const { url, seen } = await recording();
    const pool = ['a', 'b', 'c'].map((id) => ({
      headers: { 'x-github-delivery': id, 'x-hub-signature-256': `sha256=${id}` },
      body: `{"id":"${id}"}`,
    }));
    await wrkLoad({ url, connections: 1, seconds: 1, requests: { pool } });

    expect(seen.length).toBeGreaterThan(6);
    // wrk asks for one request before the load starts: the first one seen may be any of the pool's.
    const first = pool.findIndex((request) => request.body === seen[0]!.body);
    expect(first).not.toBe(-1);
    seen.forEach(({ headers, body }, i) => {
      const expected = pool[(first + i) % pool.length]!;
      expect(body).toBe(expected.body);
      expect(headers['x-github-delivery']).toBe(expected.headers['x-github-delivery']);
      expect(headers['x-hub-signature-256']).toBe(expected.headers['x-hub-signature-256']);
      expect(headers.host).toBe(new URL(url).host);
    });
  });

  it('reports answers other than 2xx as failures, not as answered deliveries', async () => {
    needWrk();
    const { url, seen } = await recording(503);
    const load = await wrkLoad({
      url,
      connections: 1,
      seconds: 1,
      requests: { distinct: { template: '{"n":"[<id>]"}', headers: {} } },
    });
    expect(seen.length).toBeGreaterThan(0);
    expect(load.answered).toBe(0);
    expect(load.non2xx).toBeGreaterThan(0);
  });
});
