/**
 * A tiny HTTP proxy in front of the sandbox that misbehaves on request: it answers 503 without
 * forwarding (an outage), or forwards and then loses the answer (502, a reset connection, or no
 * answer at all until the client times out). It counts what arrived and what reached the sandbox,
 * so tests can prove a write happened exactly once.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type FaultMode =
  /** Answer 503 without forwarding: the call never reaches the server. */
  | 'reply-503'
  /** Answer 503 with a body that echoes the request's token (a careless server): redaction must hold. */
  | 'reply-503-echo-token'
  /** Forward, let the server act, then answer 502: the client cannot know it happened. */
  | 'forward-then-502'
  /** Forward, then reset the connection instead of answering. */
  | 'forward-then-reset'
  /** Forward, then never answer: the client times out. */
  | 'forward-then-hang';

export interface Fault {
  method: string;
  /** Matched against the path (without the query). */
  path: RegExp;
  mode?: FaultMode;
  /** How many matching requests misbehave; default 1. */
  times?: number;
  /** Matching requests let through untouched before the fault starts; default 0. */
  skip?: number;
  /** Runs before the request is handled (e.g. push a commit in the last instant). */
  before?: () => Promise<void>;
}

export interface FaultyProxy {
  url: string;
  fail(fault: Fault): void;
  /** Requests that arrived at the proxy, by method and path pattern. */
  arrived(method: string, path: RegExp): number;
  /** Requests that reached the sandbox. */
  forwarded(method: string, path: RegExp): number;
  close(): Promise<void>;
}

interface Seen {
  method: string;
  path: string;
  forwarded: boolean;
}

export async function startFaultyProxy(target: string): Promise<FaultyProxy> {
  const upstream = new URL(target);
  const faults: (Fault & { left: number; toSkip: number })[] = [];
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();

  function forward(
    req: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const headers = { ...req.headers, host: upstream.host };
      const out = request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const plain: Record<string, string> = {};
            for (const [key, value] of Object.entries(res.headers))
              if (
                typeof value === 'string' &&
                !['connection', 'transfer-encoding', 'content-length'].includes(key)
              )
                plain[key] = value;
            resolve({ status: res.statusCode ?? 502, headers: plain, body: Buffer.concat(chunks) });
          });
        },
      );
      out.on('error', reject);
      out.end(body);
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const record: Seen = { method, path, forwarded: false };
    seen.push(record);
    let fault = faults.find((f) => f.left > 0 && f.method === method && f.path.test(path));
    if (fault && fault.toSkip > 0) {
      fault.toSkip--;
      fault = undefined;
    }
    if (fault) {
      fault.left--;
      await fault.before?.();
    }
    const mode = fault?.mode;
    if (mode === 'reply-503' || mode === 'reply-503-echo-token') {
      const token = req.headers['private-token'];
      const message =
        mode === 'reply-503'
          ? '503 Service Unavailable'
          : `503 down; you sent private_token=${token} and token ${token}`;
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ message }));
      return;
    }
    record.forwarded = true;
    const answer = await forward(req, body);
    if (mode === 'forward-then-502') {
      res
        .writeHead(502, { 'content-type': 'application/json' })
        .end(JSON.stringify({ message: '502 Bad Gateway' }));
      return;
    }
    if (mode === 'forward-then-reset') {
      req.socket.destroy();
      return;
    }
    if (mode === 'forward-then-hang') return; // closed by close(), or by the client giving up
    res.writeHead(answer.status, answer.headers).end(answer.body);
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks)).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(error));
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const count = (method: string, path: RegExp, onlyForwarded: boolean): number =>
    seen.filter((s) => s.method === method && path.test(s.path) && (!onlyForwarded || s.forwarded)).length;

  return {
    url: `http://127.0.0.1:${port}`,
    fail(fault) {
      faults.push({ ...fault, left: fault.times ?? 1, toSkip: fault.skip ?? 0 });
    },
    arrived: (method, path) => count(method, path, false),
    forwarded: (method, path) => count(method, path, true),
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
