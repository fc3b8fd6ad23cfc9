/**
 * The ops app's answers to a caller's mistakes in the path, over real HTTP: a malformed
 * percent-encoding in a route parameter is the caller's mistake (400 with a JSON `message`), never
 * the bot's (500). Express decodes `:project`, `:kind` and `:number` before the route runs and throws
 * a URIError; the review found `GET /explain/%E0%A4%A/...` answered 500.
 */
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpsApp } from '../../src/receiver/ops-app.ts';

interface Answer {
  status: number;
  type: string;
  body: string;
}

/** Sends the path exactly as written (fetch's URL parser would leave it, but this says so). */
function send(
  port: number,
  method: string,
  rawPath: string,
  headers: Record<string, string> = {},
  body?: string,
) {
  return new Promise<Answer>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path: rawPath, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: text }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

function listen(app: express.Express): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as AddressInfo).port }),
    );
  });
}

describe('ops app: bad paths are the caller’s mistake', () => {
  let open: { server: Server; port: number };
  let guarded: { server: Server; port: number };
  const explained: unknown[] = [];

  beforeAll(async () => {
    const explain = (query: unknown) => {
      explained.push(query);
      return { found: false as const, message: 'no decision recorded for that item' };
    };
    open = await listen(
      createOpsApp({
        ready: async () => true,
        explain,
        extend: (app) => {
          app.post('/echo', express.json(), (req, res) => void res.json(req.body));
          app.get('/broken', () => {
            throw new Error('a bug of ours, with a secret-looking detail: hunter2');
          });
        },
      }),
    );
    guarded = await listen(
      createOpsApp({
        ready: async () => true,
        explain,
        protect: [
          (req, res, next) => {
            if (req.headers.authorization === 'Basic b3A6cHc=') return next();
            res.status(401).json({ message: 'authentication required' });
          },
        ],
      }),
    );
  });
  afterAll(async () => {
    for (const { server } of [open, guarded]) await new Promise((resolve) => server.close(resolve));
  });

  it.each([
    ['/explain/%E0%A4%A/issue/1', 'a truncated escape in :project (the review)'],
    ['/explain/acme%2Fweb/%ZZ/1', 'not hex, in :kind'],
    ['/explain/acme%2Fweb/issue/%FF', 'a byte that is not UTF-8, in :number'],
    ['/explain/%/issue/1', 'a lone %'],
  ])('GET %s (%s) answers 400 with a JSON message', async (path) => {
    const before = explained.length;
    const answer = await send(open.port, 'GET', path);
    expect(answer.status).toBe(400);
    expect(answer.type).toMatch(/^application\/json/);
    expect(JSON.parse(answer.body)).toEqual({
      message: expect.stringContaining('not valid percent-encoding'),
    });
    // Refused before the route: explain was never asked.
    expect(explained.length).toBe(before);
  });

  it('a well-formed path still reaches explain (404: nothing recorded)', async () => {
    const answer = await send(open.port, 'GET', '/explain/acme%2Fweb/issue/1');
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body)).toEqual({ message: 'no decision recorded for that item' });
  });

  it('authentication comes first: a stranger gets 401 whatever the encoding', async () => {
    const stranger = await send(guarded.port, 'GET', '/explain/%E0%A4%A/issue/1');
    expect(stranger.status).toBe(401);
    const operator = await send(guarded.port, 'GET', '/explain/%E0%A4%A/issue/1', {
      authorization: 'Basic b3A6cHc=',
    });
    expect(operator.status).toBe(400);
  });

  it("keeps the status of a client error express's parsers raise (malformed JSON: 400)", async () => {
    const answer = await send(open.port, 'POST', '/echo', { 'content-type': 'application/json' }, '{"a":');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ message: expect.any(String) });
  });

  it('an error of ours is still 500, with nothing of it in the answer', async () => {
    const answer = await send(open.port, 'GET', '/broken');
    expect(answer.status).toBe(500);
    expect(JSON.parse(answer.body)).toEqual({ message: 'internal error' });
  });
});
