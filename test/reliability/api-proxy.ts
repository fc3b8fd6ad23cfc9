/**
 * A small HTTP proxy between the bot and the sandbox that can play an outage. For each request a
 * `decide` function says what happens: pass it through, answer 503 without passing it on (`down`:
 * the server is away), pass it on and answer 503 anyway (`lost`: the server acted, the answer never
 * came), or answer 503 with a body that echoes the caller's token (`echo-token`: a careless server,
 * for the secrets check). It counts every request by what became of it.
 */
import { createServer, request as forward, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ProxyFault = 'down' | 'lost' | 'echo-token' | undefined;

export interface ApiProxy {
  url: string;
  decide: (request: { method: string; path: string }) => ProxyFault;
  /** Requests by outcome: `passed`, `down`, `lost`, `echo-token`, `error`. */
  counts: Record<string, number>;
  /** Requests passed on to the sandbox, by `METHOD /path-pattern` (ids replaced by `:id`). */
  forwarded: Map<string, number>;
  close(): Promise<void>;
}

const routeOf = (method: string, path: string): string =>
  `${method} ${(path.split('?')[0] ?? '').replace(/\/\d+(?=\/|$)/g, '/:id')}`;

export async function startApiProxy(target: string): Promise<ApiProxy> {
  const upstream = new URL(target);
  const proxy: ApiProxy = {
    url: '',
    decide: () => undefined,
    counts: {},
    forwarded: new Map(),
    close: async () => undefined,
  };
  const count = (what: string) => (proxy.counts[what] = (proxy.counts[what] ?? 0) + 1);
  const server: Server = createServer((req: IncomingMessage, res) => {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const fault = proxy.decide({ method, path });
    const unavailable = (message: string) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message }));
    };
    if (fault === 'down' || fault === 'echo-token') {
      count(fault);
      const token = String(req.headers['private-token'] ?? req.headers.authorization ?? '');
      req.resume();
      req.on('end', () =>
        unavailable(
          fault === 'down'
            ? '503 Service Unavailable'
            : `503 down for maintenance; you sent private_token=${token} (token ${token})`,
        ),
      );
      return;
    }
    const route = routeOf(method, path);
    proxy.forwarded.set(route, (proxy.forwarded.get(route) ?? 0) + 1);
    const out = forward(
      {
        host: upstream.hostname,
        port: upstream.port,
        method,
        path,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        if (fault === 'lost') {
          count('lost');
          answer.resume();
          answer.on('end', () => unavailable('503 Service Unavailable'));
          return;
        }
        count('passed');
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => {
      count('error');
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  proxy.url = `http://127.0.0.1:${port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return proxy;
}
