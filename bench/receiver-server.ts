/**
 * A receiver for the benchmark, run in its own process so the load generator does not share its
 * core: `hookbot` (the real hook handler and server), `bare` (node:http doing the same token check,
 * JSON parse and durable persist by hand: the baseline), `noop` (reads the body and answers: the
 * ceiling of this machine and load generator), `floor` (answers without reading: node:http's own
 * cost per request) or `probot` (a minimal Probot 14 app behind
 * `createNodeMiddleware`, verifying `X-Hub-Signature-256` with the same secret, its handler doing
 * nothing: the framework most bots are built on) or `durable-floor` (the least any durable intake
 * does: durable-floor.ts). Prints `PORT <n>` once listening.
 */
import { createServer, type Server } from 'node:http';
import { timingSafeEqual, createHash } from 'node:crypto';
import express from 'express';
import { createHookHandler } from '../src/receiver/hook-handler.ts';
import { createReceiverServer, listen } from '../src/receiver/server.ts';
import pg from 'pg';
import { createFileStore } from '../src/state/file/file-store.ts';
import { createPostgresStore } from '../src/state/postgres/postgres-store.ts';
import { percentile } from './receiver-driver.ts';
import { durableFloorServer } from './durable-floor.ts';

const [mode, dir] = process.argv.slice(2);
const SECRET = 'bench-secret';
// Default bounds; each delivery is marked processed right after it is accepted, as a pipeline that
// keeps up would, so the inbox stays small in both servers alike.
// The duration of each group commit (from its write until the fdatasync is seen done: what every ack
// waits for) and the process's CPU time. SIGUSR2 starts both afresh (after the warm-up); SIGTERM
// prints `COMMIT_MS <p50> <p99> <count>` and `CPU_US <user + system>`.
let commitMs: number[] = [];
let cpuFrom = process.cpuUsage();
// `hookbot-pg`: the same hook route on the PostgreSQL store (BENCH_DATABASE_URL, a schema of its
// own, dropped at the end); its batches are timed from the statement sent to the commit seen.
const pgSchema = `bench_${process.pid}`;
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const store =
  mode === 'hookbot-pg'
    ? createPostgresStore({ url: databaseUrl, schema: pgSchema, replicaId: 'bench' })
    : createFileStore({
        path: `${dir}/hookbot.json`,
        onCommit: ({ ms }) => void commitMs.push(ms),
      });
process.on('SIGUSR2', () => {
  commitMs = [];
  cpuFrom = process.cpuUsage();
});
await store.open();
// Set on SIGTERM: deliveries still in flight then must not touch the store being closed.
let stopping = false;

if (mode === 'probot') {
  await startProbot();
} else if (mode === 'durable-floor') {
  const server = durableFloorServer(`${dir}/journal`, SECRET);
  announce(server);
} else if (mode === 'floor') {
  // The floor: answers 202 without reading the body (node discards it). What node:http alone costs.
  const server = createServer((_req, res) => {
    res.writeHead(202, { 'content-type': 'application/json' }).end('{"message":"accepted"}');
  });
  announce(server);
} else if (mode === 'noop') {
  // The ceiling: reads the body and answers 202, nothing else. What autocannon and node:http reach
  // on this machine with no work at all; no server that does work can answer faster.
  const server = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () =>
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"message":"accepted"}'),
    );
  });
  announce(server);
} else if (mode === 'hookbot' || mode === 'hookbot-pg') {
  const handler = createHookHandler({
    verify: { token: SECRET },
    inbox: store,
    onAccepted: (delivery) => {
      if (!stopping) void store.markProcessed(delivery.id);
    },
  });
  const server = createReceiverServer({ hookPath: '/hooks', hookHandler: handler, app: express() });
  const { port } = await listen(server, 0, '127.0.0.1');
  console.log(`PORT ${port}`);
} else {
  const expected = createHash('sha256').update(SECRET).digest();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const given = createHash('sha256')
        .update(String(req.headers['x-gitlab-token'] ?? ''))
        .digest();
      if (!timingSafeEqual(given, expected)) {
        res.writeHead(401).end();
        return;
      }
      const bytes = Buffer.concat(chunks);
      const text = bytes.toString('utf8');
      const body = JSON.parse(text) as { object_kind: string };
      const key = createHash('sha256')
        .update(String(req.headers['x-gitlab-event']))
        .update('\0')
        .update(bytes)
        .digest('hex');
      // The received bytes too, as the hook route passes them: the same persist work in both.
      store
        .accept({ key, kind: body.object_kind, receivedAt: Date.now(), headers: {}, body, bodyJson: bytes })
        .then(
          (r) => {
            res
              .writeHead(202, { 'content-type': 'application/json' })
              .end(JSON.stringify({ message: 'accepted', id: r.id }));
            if (!stopping) void store.markProcessed(r.id);
          },
          () => res.writeHead(503).end(),
        );
    });
  });
  announce(server);
}
/**
 * Probot needs an app id and a private key to construct, though receiving a webhook never uses them
 * (no installation in the payload: no token is fetched). Its log level is `warn`, so it logs nothing
 * per delivery, as hookbot at `info` logs nothing per delivery either.
 */
async function startProbot(): Promise<void> {
  const { generateKeyPairSync } = await import('node:crypto');
  const { Probot, createNodeMiddleware } = await import('probot');
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const probot = new Probot({ appId: 1, privateKey, secret: SECRET, logLevel: 'warn' });
  const middleware = await createNodeMiddleware(
    (app) => {
      app.on('pull_request', async () => undefined);
    },
    { probot, webhooksPath: '/hooks' },
  );
  const server = createServer((req, res) => {
    void middleware(req, res, () => {
      res.writeHead(404).end();
    });
  });
  announce(server);
}

process.on('SIGTERM', () => {
  stopping = true;
  const sorted = [...commitMs].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length === 0 ? 0 : percentile(sorted, q)).toFixed(2);
  console.log(`COMMIT_MS ${at(0.5)} ${at(0.99)} ${sorted.length}`);
  const cpu = process.cpuUsage(cpuFrom);
  console.log(`CPU_US ${cpu.user + cpu.system}`);
  console.log(`CPU_SPLIT ${cpu.user} ${cpu.system}`);
  void store
    .close({ compact: false })
    .then(async () => {
      if (mode !== 'hookbot-pg') return;
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${pgSchema}" CASCADE`);
      await client.end();
    })
    .finally(() => process.exit(0));
});

/** Listens on a free port of the loopback and prints `PORT <n>`, which the driver waits for. */
function announce(server: Server): void {
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    console.log(`PORT ${typeof address === 'object' && address ? address.port : 0}`);
  });
}
