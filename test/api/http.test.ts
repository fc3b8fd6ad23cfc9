import nock from 'nock';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ApiError, redactSecrets } from '../../src/api/errors.ts';
import { createHttp, type ApiCall } from '../../src/api/http.ts';
import issue from '../fixtures/api/issue.json' with { type: 'json' };
import { API, BASE, TOKEN, api, collect, testClient, useNock } from '../helpers/nock.ts';

const page = (n: number, size = 2) => Array.from({ length: size }, (_, i) => ({ ...issue, id: n * 100 + i }));

describe('HTTP core: authentication and addressing', () => {
  useNock();

  it('sends PRIVATE-TOKEN by default and never a token in the URL', async () => {
    api().get('/user').reply(200, { id: 1 });
    const http = createHttp({ baseUrl: BASE, token: TOKEN });
    expect(await http.request({ method: 'GET', route: '/user' })).toEqual({ id: 1 });
  });

  it('sends OAuth tokens as Authorization: Bearer', async () => {
    nock(API, { reqheaders: { authorization: `Bearer ${TOKEN}` }, badheaders: ['private-token'] })
      .get('/user')
      .reply(200, { id: 1 });
    await createHttp({ baseUrl: BASE, token: TOKEN, tokenType: 'oauth' }).request({
      method: 'GET',
      route: '/user',
    });
  });

  it('accepts a base URL that already ends in /api/v3', async () => {
    api().get('/user').reply(200, {});
    await createHttp({ baseUrl: `${API}/`, token: TOKEN }).request({ method: 'GET', route: '/user' });
  });

  it('sends the client sudo on every call, a per-call sudo over it, and none when a call says null', async () => {
    nock(API, { reqheaders: { sudo: 'alice' } })
      .get('/a')
      .reply(200, {});
    nock(API, { reqheaders: { sudo: '7' } })
      .get('/b')
      .reply(200, {});
    nock(API, { badheaders: ['sudo'] })
      .get('/c')
      .reply(200, {});
    const http = createHttp({ baseUrl: BASE, token: TOKEN, sudo: 'alice' });
    await http.request({ method: 'GET', route: '/a' });
    await http.request({ method: 'GET', route: '/b', sudo: 7 });
    await http.request({ method: 'GET', route: '/c', sudo: null });
  });

  it('encodes route parameters: namespace%2Fproject and branch names with slashes', async () => {
    api().get('/projects/acme%2Fweb/repository/branches/feature%2Fx').reply(200, {});
    await createHttp({ baseUrl: BASE, token: TOKEN }).request({
      method: 'GET',
      route: '/projects/:id/repository/branches/:branch',
      params: { id: 'acme/web', branch: 'feature/x' },
    });
  });
});

describe('HTTP core: errors', () => {
  useNock();
  const http = () =>
    createHttp({ baseUrl: BASE, token: TOKEN, retry: { limit: 2, baseDelayMs: 1, maxDelayMs: 2 } });

  it.each([
    [
      400,
      { message: '400 (Bad request) "title" not given' },
      'bad_request',
      '400 (Bad request) "title" not given',
    ],
    [400, { error: 'title is missing' }, 'bad_request', 'title is missing'],
    [401, { message: '401 Unauthorized' }, 'unauthorized', '401 Unauthorized'],
    [403, { message: '403 Forbidden' }, 'forbidden', '403 Forbidden'],
    [404, { message: '404 Project Not Found' }, 'not_found', '404 Project Not Found'],
    [405, { message: '405 Method Not Allowed' }, 'not_allowed', '405 Method Not Allowed'],
    [406, { message: '406 Not Acceptable' }, 'not_acceptable', '406 Not Acceptable'],
    [409, { message: 'Label already exists' }, 'conflict', 'Label already exists'],
    [422, { message: 'Unprocessable' }, 'unprocessable', 'Unprocessable'],
    [500, { message: '500 Internal Server Error' }, 'server', '500 Internal Server Error'],
  ] as const)('maps %i %j to kind %s with the server message', async (status, body, kind, text) => {
    api().post('/projects/1/labels').reply(status, body);
    const error = await http()
      .request({ method: 'POST', route: '/projects/:id/labels', params: { id: 1 } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status,
      kind,
      method: 'POST',
      path: '/projects/1/labels',
      route: '/projects/:id/labels',
    });
    expect((error as ApiError).serverText).toBe(text);
    expect((error as ApiError).message).toBe(
      `POST /projects/1/labels failed: ${status}: ${text}${status >= 500 ? ' (outcome unknown: re-read before acting again)' : ''}`,
    );
  });

  it('keeps per-field validation messages', async () => {
    api()
      .post('/projects/1/labels')
      .reply(400, { message: { color: ['must be a valid color code'] } });
    const error = (await http()
      .request({ method: 'POST', route: '/projects/:id/labels', params: { id: 1 } })
      .catch((e: unknown) => e)) as ApiError;
    expect(error.fieldErrors).toEqual({ color: ['must be a valid color code'] });
    expect(error.message).toContain('color must be a valid color code');
  });

  it('names an answer that is not JSON', async () => {
    api().get('/user').reply(200, '<html>login</html>');
    await expect(http().request({ method: 'GET', route: '/user' })).rejects.toMatchObject({
      kind: 'invalid_response',
    });
  });

  it('never puts the token in an error message', async () => {
    api()
      .get('/user')
      .reply(401, { message: `401 Unauthorized for ${TOKEN}` });
    const error = (await createHttp({ baseUrl: BASE, token: TOKEN })
      .request({ method: 'GET', route: '/user' })
      .catch((e: unknown) => e)) as ApiError;
    expect(error.message).not.toContain(TOKEN);
  });

  it('redacts token-looking values in any text', () => {
    expect(redactSecrets('GET /x?private_token=abc123&x=1 PRIVATE-TOKEN: abc123')).toBe(
      'GET /x?private_token=[REDACTED]&x=1 PRIVATE-TOKEN: [REDACTED]',
    );
    expect(redactSecrets('the secret is s3cr3t-value', ['s3cr3t-value'])).toBe('the secret is [REDACTED]');
  });
});

describe('HTTP core: retries', () => {
  useNock();
  const calls: ApiCall[] = [];
  const http = () =>
    createHttp({
      baseUrl: BASE,
      token: TOKEN,
      retry: { limit: 3, baseDelayMs: 1, maxDelayMs: 2 },
      onCall: (c) => calls.push(c),
    });

  it.each([429, 502, 503, 504])('retries an idempotent call after %i and succeeds', async (status) => {
    calls.length = 0;
    api().get('/user').reply(status, { message: 'busy' });
    api().get('/user').reply(200, { id: 1 });
    expect(await http().request({ method: 'GET', route: '/user' })).toEqual({ id: 1 });
    expect(calls.map((c) => [c.status, c.attempt])).toEqual([
      [status, 1],
      [200, 2],
    ]);
  });

  it('retries a network error (connection reset)', async () => {
    // nock cannot reset a socket the way got sees it, so a real loopback server does: the first
    // request's socket is destroyed, the second is answered.
    nock.enableNetConnect('127.0.0.1');
    let seen = 0;
    const server = createServer((req, res) => {
      seen++;
      if (seen === 1) req.socket.destroy();
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":1}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const h = createHttp({
        baseUrl: `http://127.0.0.1:${port}`,
        token: TOKEN,
        retry: { limit: 2, baseDelayMs: 1 },
      });
      expect(await h.request({ method: 'GET', route: '/user' })).toEqual({ id: 1 });
      expect(seen).toBe(2);
    } finally {
      server.close();
    }
  });

  it('does not retry a 500 (a server bug is not transient) nor a 4xx', async () => {
    api().get('/user').reply(500, { message: '500 Internal Server Error' });
    api().get('/other').reply(404, { message: '404 Not found' });
    await expect(http().request({ method: 'GET', route: '/user' })).rejects.toMatchObject({ status: 500 });
    await expect(http().request({ method: 'GET', route: '/other' })).rejects.toMatchObject({ status: 404 });
  });

  it('gives up after the retry limit with the last error', async () => {
    api().get('/user').times(4).reply(503, { message: 'down' });
    await expect(http().request({ method: 'GET', route: '/user' })).rejects.toMatchObject({
      status: 503,
      kind: 'server',
    });
  });

  it('never retries a POST, and calls a failed POST ambiguous', async () => {
    api().post('/projects/1/issues/2/notes').reply(503, { message: 'down' });
    const error = (await http()
      .request({
        method: 'POST',
        route: '/projects/:id/issues/:issue_id/notes',
        params: { id: 1, issue_id: 2 },
        body: { body: 'x' },
      })
      .catch((e: unknown) => e)) as ApiError;
    expect(error).toMatchObject({ status: 503, ambiguous: true });
  });

  it('calls a timed-out non-idempotent call ambiguous and does not retry it', async () => {
    api().put('/projects/1/merge_requests/2/merge').delay(200).reply(200, {});
    const error = (await createHttp({ baseUrl: BASE, token: TOKEN, timeoutMs: 50 })
      .request({
        method: 'PUT',
        route: '/projects/:id/merge_requests/:merge_request_id/merge',
        params: { id: 1, merge_request_id: 2 },
        idempotent: false,
      })
      .catch((e: unknown) => e)) as ApiError;
    expect(error).toMatchObject({ kind: 'timeout', ambiguous: true });
  });

  it('counts every attempt for benchmarks', async () => {
    api().get('/user').reply(503, {});
    api().get('/user').reply(200, {});
    const h = http();
    await h.request({ method: 'GET', route: '/user' });
    expect(h.stats.calls).toBe(2);
    expect(h.stats.byRoute.get('GET /user')).toBe(2);
  });
});

describe('HTTP core: pagination', () => {
  useNock();

  it('follows Link rel="next" across pages with per_page=100', async () => {
    const link = (n: number) => `<${API}/projects/8/issues?page=${n}&per_page=100>`;
    api()
      .get('/projects/8/issues')
      .query({ per_page: '100', state: 'opened' })
      .reply(200, page(1), {
        Link: `${link(2)}; rel="next", ${link(1)}; rel="first", ${link(3)}; rel="last"`,
      });
    api()
      .get('/projects/8/issues')
      .query({ page: '2', per_page: '100' })
      .reply(200, page(2), {
        Link: `${link(1)}; rel="prev", ${link(3)}; rel="next", ${link(1)}; rel="first", ${link(3)}; rel="last"`,
      });
    api()
      .get('/projects/8/issues')
      .query({ page: '3', per_page: '100' })
      .reply(200, page(3, 1), {
        Link: `${link(2)}; rel="prev", ${link(1)}; rel="first", ${link(3)}; rel="last"`,
      });
    const items = await collect(testClient().issues.list(8, { state: 'opened' }));
    expect(items.map((i) => i.id)).toEqual([100, 101, 200, 201, 300]);
  });

  it('falls back to X-Next-Page when there is no Link header', async () => {
    api().get('/projects/8/issues').query({ per_page: '100' }).reply(200, page(1), { 'X-Next-Page': '2' });
    api()
      .get('/projects/8/issues')
      .query({ per_page: '100', page: '2' })
      .reply(200, page(2), { 'X-Next-Page': '' });
    expect(await collect(testClient().issues.list(8))).toHaveLength(4);
  });

  it('reads a list without any pagination headers as one page (labels, branches on real servers)', async () => {
    api().get('/projects/8/issues').query({ per_page: '100' }).reply(200, page(1, 3));
    expect(await collect(testClient().issues.list(8))).toHaveLength(3);
  });

  it('keeps the token on our origin when a Link points elsewhere (proxies)', async () => {
    api().get('/projects/8/issues').query({ per_page: '100' }).reply(200, page(1), {
      Link: '<https://inner-host:8443/api/v3/projects/8/issues?page=2&per_page=100>; rel="next"',
    });
    api().get('/projects/8/issues').query({ page: '2', per_page: '100' }).reply(200, page(2));
    expect(await collect(testClient().issues.list(8))).toHaveLength(4);
  });

  it('stops at the page cap with a clear error', async () => {
    api().get('/projects/8/issues').query({ per_page: '100' }).reply(200, page(1), { 'X-Next-Page': '2' });
    await expect(collect(testClient().issues.list(8, {}, { maxPages: 1 }))).rejects.toThrow(
      /stopped after 1 pages \(page cap\)/,
    );
  });

  it('refuses a list answer that is not a list', async () => {
    api().get('/projects/8/issues').query({ per_page: '100' }).reply(200, { message: 'nope' });
    await expect(collect(testClient().issues.list(8))).rejects.toMatchObject({ kind: 'invalid_response' });
  });
});
