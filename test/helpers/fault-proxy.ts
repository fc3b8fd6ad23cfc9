/**
 * The one fault-injecting HTTP proxy of the tests: it sits between the bot and the sandbox and
 * misbehaves on request. It can answer 503 without passing the request on (`down`: the server is
 * away), answer 503 with a body that echoes the caller's token (`echo-token`: a careless server, for
 * the redaction checks), or pass the request on, let the server act, and then lose the answer
 * (`lost`: 503, `forward-then-502`, `forward-then-reset`, `forward-then-hang` until the client gives
 * up). It counts what arrived and what reached the sandbox, so tests can prove a write happened
 * exactly once. Listens on 127.0.0.1, port 0.
 *
 * What misbehaves is said two ways, checked in this order: rules (`fail({ method, path, mode })`,
 * each for a number of matching requests), and a `decide` function the test may replace at any time
 * (an outage that starts and ends).
 *
 * `startTcpFaultProxy` below is its sibling for a protocol that is not HTTP (PostgreSQL's): plain TCP,
 * with a black hole instead of fault modes.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';

export type FaultMode =
  /** Answer 503 without forwarding: the call never reaches the server. */
  | 'down'
  /** Answer 503 with a body that echoes the request's token (a careless server): redaction must hold. */
  | 'echo-token'
  /** Forward, let the server act, then answer 503: the server acted, the answer never arrived. */
  | 'lost'
  /** Forward, let the server act, then answer 502. */
  | 'forward-then-502'
  /** Forward, then reset the connection instead of answering. */
  | 'forward-then-reset'
  /** Forward, then never answer: the client times out. */
  | 'forward-then-hang';

export interface Fault {
  method: string;
  /** Matched against the path (without the query). */
  path: RegExp;
  /** Without a mode the request passes (after `before`). */
  mode?: FaultMode;
  /** How many matching requests misbehave; default 1. */
  times?: number;
  /** Matching requests let through untouched before the fault starts; default 0. */
  skip?: number;
  /** Runs before the request is handled (e.g. push a commit in the last instant). */
  before?: () => Promise<void>;
}

export interface FaultProxy {
  url: string;
  /** Adds a rule. */
  fail(fault: Fault): void;
  /**
   * Decides for each request no rule matched; `path` is as sent, with its query. Undefined passes the
   * request through. Replace it to start or end an outage.
   */
  decide: (request: { method: string; path: string }) => FaultMode | undefined;
  /** Requests that arrived at the proxy, by method and path pattern (the path without the query). */
  arrived(method: string, path: RegExp): number;
  /** Requests that reached the sandbox, by method and path pattern (the path without the query). */
  forwarded(method: string, path: RegExp): number;
  /** Requests by what became of them: `passed`, a fault mode, or `error` (the sandbox was unreachable). */
  counts: Record<string, number>;
  /** Drops every rule not yet used up. */
  clear(): void;
  /**
   * Called for each request once its body is read and its fate decided, before it is forwarded or
   * answered: a test can change the sandbox at that very instant (a race placed at a read).
   */
  onArrive?: (request: ProxiedRequest) => void;
  /** Called when the sandbox's answer to a forwarded request is back (`status` set). */
  onForwarded?: (request: ProxiedRequest) => void;
  /** Called when the request has been answered (or dropped: reset, hang). */
  onDone?: (request: ProxiedRequest) => void;
  close(): Promise<void>;
}

/** One request through the proxy, and what became of it. */
export interface ProxiedRequest {
  /** 1, 2, ... in order of arrival. */
  seq: number;
  method: string;
  /** Without the query. */
  path: string;
  body: Buffer;
  /** The fault it met, if any. */
  mode?: FaultMode;
  forwarded: boolean;
  /** The sandbox's answer, when it was forwarded (before a fault replaced it). */
  status?: number;
  /** The answer the caller got; undefined when it got none (reset, hang). */
  answered?: number;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const upstream = new URL(target);
  const faults: (Fault & { left: number; toSkip: number })[] = [];
  const seen: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();

  function forward(req: IncomingMessage, body: Buffer): Promise<Answer> {
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

  /** The rule that applies to this request, if any (counting it down). */
  async function ruleFor(method: string, path: string): Promise<FaultMode | undefined> {
    const fault = faults.find((f) => f.left > 0 && f.method === method && f.path.test(path));
    if (!fault) return undefined;
    if (fault.toSkip > 0) {
      fault.toSkip--;
      return undefined;
    }
    fault.left--;
    await fault.before?.();
    return fault.mode;
  }

  const json = (res: ServerResponse, status: number, message: string): void =>
    void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ message }));

  async function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const url = req.url ?? '/';
    const path = url.split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const record: ProxiedRequest = { seq: seen.length + 1, method, path, body, forwarded: false };
    seen.push(record);
    const mode = (await ruleFor(method, path)) ?? proxy.decide({ method, path: url });
    if (mode) record.mode = mode;
    count(mode ?? 'passed');
    proxy.onArrive?.(record);
    res.on('finish', () => {
      record.answered = res.statusCode;
      proxy.onDone?.(record);
    });
    res.on('close', () => {
      if (!res.writableFinished) proxy.onDone?.(record);
    });
    if (mode === 'down') return json(res, 503, '503 Service Unavailable');
    if (mode === 'echo-token') {
      const token = String(req.headers['private-token'] ?? req.headers.authorization ?? '');
      return json(res, 503, `503 down for maintenance; you sent private_token=${token} (token ${token})`);
    }
    record.forwarded = true;
    let answer: Answer;
    try {
      answer = await forward(req, body);
    } catch {
      count('error');
      return void res.writeHead(502).end();
    }
    record.status = answer.status;
    proxy.onForwarded?.(record);
    if (mode === 'lost') return json(res, 503, '503 Service Unavailable');
    if (mode === 'forward-then-502') return json(res, 502, '502 Bad Gateway');
    if (mode === 'forward-then-reset') return void req.socket.destroy();
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

  const countSeen = (method: string, path: RegExp, onlyForwarded: boolean): number =>
    seen.filter((s) => s.method === method && path.test(s.path) && (!onlyForwarded || s.forwarded)).length;
  const count = (what: string) => (proxy.counts[what] = (proxy.counts[what] ?? 0) + 1);

  const proxy: FaultProxy = {
    url: `http://127.0.0.1:${port}`,
    fail(fault) {
      faults.push({ ...fault, left: fault.times ?? 1, toSkip: fault.skip ?? 0 });
    },
    decide: () => undefined,
    arrived: (method, path) => countSeen(method, path, false),
    forwarded: (method, path) => countSeen(method, path, true),
    counts: {},
    clear() {
      faults.length = 0;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

/**
 * A TCP proxy in front of a server that does not speak HTTP (PostgreSQL). `blackHole()` stops
 * forwarding in both directions without closing or resetting a socket: what a firewall or a network
 * partition that drops packets looks like from both ends (no error, no reset, no answer, ever).
 * Bytes sent meanwhile wait in the proxy and go on once healed, as TCP's retransmissions would
 * deliver them once the path is back, unless an end gave up on its connection first.
 */
export interface TcpFaultProxy {
  /** 127.0.0.1 */
  host: string;
  port: number;
  /** `url` (e.g. `postgres://user@127.0.0.1:5432/db`) with its host and port replaced by the proxy's. */
  through(url: string): string;
  /**
   * From now on nothing goes through. `newConnections`: `hold` (a partition: a connection opened
   * meanwhile is accepted and hears nothing either) or `pass` (only the connections open now die
   * silently: a NAT or a stateful firewall that forgot them; new ones work).
   */
  blackHole(options?: { newConnections?: 'hold' | 'pass' }): void;
  /** Everything held goes on, in order, and new bytes pass again. */
  heal(): void;
  /** Connections open now (client side). */
  connections(): number;
  /** Connections opened through the proxy since it started. */
  opened(): number;
  close(): Promise<void>;
}

interface Pipe {
  client: Socket;
  upstream: Socket;
  held: boolean;
  toUpstream: Buffer[];
  toClient: Buffer[];
  /** One end closed while held: the other is closed at the heal. */
  closing?: boolean;
  end?: () => void;
}

export async function startTcpFaultProxy(target: { host: string; port: number }): Promise<TcpFaultProxy> {
  const pipes = new Set<Pipe>();
  let holdNew = false;
  let opened = 0;

  const flush = (pipe: Pipe) => {
    for (const chunk of pipe.toUpstream.splice(0)) pipe.upstream.write(chunk);
    for (const chunk of pipe.toClient.splice(0)) pipe.client.write(chunk);
  };

  const server = createTcpServer((client) => {
    opened++;
    const upstream = connect(target.port, target.host);
    const pipe: Pipe = { client, upstream, held: holdNew, toUpstream: [], toClient: [] };
    pipes.add(pipe);
    client.on('data', (chunk: Buffer) => {
      if (pipe.held) pipe.toUpstream.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (pipe.held) pipe.toClient.push(chunk);
      else client.write(chunk);
    });
    // An end that gives up (or a real reset upstream) closes the other side; while held, not before
    // the path is back (its FIN or RST is dropped too).
    const end = () => {
      if (pipe.held) return void (pipe.closing = true);
      pipes.delete(pipe);
      client.destroy();
      upstream.destroy();
    };
    pipe.end = end;
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    host: '127.0.0.1',
    port,
    through(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    blackHole(options = {}) {
      holdNew = (options.newConnections ?? 'hold') === 'hold';
      for (const pipe of pipes) pipe.held = true;
    },
    heal() {
      holdNew = false;
      for (const pipe of [...pipes]) {
        pipe.held = false;
        if (pipe.closing) pipe.end?.();
        else flush(pipe);
      }
    },
    connections: () => [...pipes].filter((pipe) => !pipe.closing).length,
    opened: () => opened,
    close() {
      for (const pipe of pipes) {
        pipe.client.destroy();
        pipe.upstream.destroy();
      }
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
