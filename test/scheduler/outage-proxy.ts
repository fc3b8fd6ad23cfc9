/**
 * A small HTTP proxy in front of the sandbox that can play an outage: while `fail(request)` says
 * so it answers 503 without passing the request on (`down`), or passes it on and answers 503
 * anyway (`lost`: the server acted, the answer never arrived). Listens on 127.0.0.1, port 0.
 */
import { createServer, request as forward, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Failure = 'down' | 'lost' | undefined;

export interface OutageProxy {
  url: string;
  /** Decides per request; undefined passes it through. */
  fail: (request: { method: string; path: string }) => Failure;
  /** Requests answered 503 so far. */
  failed: { method: string; path: string; failure: Failure }[];
  close(): Promise<void>;
}

export async function startOutageProxy(target: string): Promise<OutageProxy> {
  const upstream = new URL(target);
  const proxy: OutageProxy = { url: '', fail: () => undefined, failed: [], close: async () => undefined };
  const server: Server = createServer((req: IncomingMessage, res) => {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const failure = proxy.fail({ method, path });
    const unavailable = () => {
      proxy.failed.push({ method, path, failure });
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: '503 Service Unavailable' }));
    };
    if (failure === 'down') {
      req.resume();
      req.on('end', unavailable);
      return;
    }
    const out = forward(
      {
        host: upstream.hostname,
        port: upstream.port,
        method,
        path,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        if (failure === 'lost') {
          answer.resume();
          answer.on('end', unavailable);
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => {
      res.writeHead(502);
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
