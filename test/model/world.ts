/**
 * The ground the model-based test stands on: the sandbox in this process, the real bot
 * (`startRuntime`) in this process, and three pieces of harness between them, none of them in src:
 *
 * - a shifted clock (`Date.now` plus an offset, the sandbox's clock too), so the retry sweep finds
 *   backed-off actions due without waiting for them;
 * - a relay registered as the project hook: every delivery the sandbox sends lands there first, and
 *   the driver decides what reaches the bot (at once, twice, later than the next step's, or never);
 * - a proxy between the bot and the sandbox API that fails bot writes on request (503 without
 *   forwarding, forward-then-502 = a lost answer) and logs every bot request with the sandbox's
 *   version (a counter bumped on every `db.changed()`) at its arrival and at its answer.
 */
import { accessSync, constants, mkdtempSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/load-config.ts';
import type { Config } from '../../src/config/schema.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import type { UserRec } from '../../src/sandbox/db.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startFaultProxy, type FaultMode } from '../helpers/fault-proxy.ts';

// ---------------------------------------------------------------------------------------------
// Clock

const realNow = Date.now.bind(Date);
let clockOffset = 0;
let clockInstalled = 0;

/** `Date.now()` runs `offset` ms ahead from now on (until `restore`); `new Date()` is untouched. */
export function installClock(): { advance(ms: number): void; restore(): void } {
  if (clockInstalled++ === 0) Date.now = () => realNow() + clockOffset;
  return {
    advance(ms) {
      clockOffset += ms;
    },
    restore() {
      if (--clockInstalled === 0) {
        Date.now = realNow;
        clockOffset = 0;
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Relay (sandbox -> relay -> bot)

export interface Captured {
  event: string;
  token: string | undefined;
  body: string;
}

export type DeliveryMode = 'normal' | 'drop' | 'dup' | 'delay';

export interface Relay {
  url: string;
  /** Deliveries from now on belong to a driver step (until `endStep`). */
  beginStep(): void;
  /** What the step caused goes out per `mode`; deliveries held by the previous step follow it. */
  endStep(mode: DeliveryMode): Captured[];
  /** Everything held goes out now. */
  releaseHeld(): void;
  /** Sends one delivery of our own (a forged one) to the bot, in order with the rest. */
  inject(delivery: Captured): void;
  /** Resolves once every queued delivery has been sent. */
  flush(): Promise<void>;
  /** Deliveries received from the sandbox so far. */
  received(): number;
  /** Deliveries the bot never accepted (it stayed away). */
  errors: string[];
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startRelay(target: () => string | undefined): Promise<Relay> {
  let stepBuffer: Captured[] | undefined;
  let held: Captured[] = [];
  const queue: Captured[] = [];
  let receivedCount = 0;
  const errors: string[] = [];
  let sending: Promise<void> | undefined;
  let paused = false;
  let resumeWaiters: (() => void)[] = [];

  /**
   * Sends one delivery. A failure while the bot restarts is tried again once it is back: the
   * driver decides which deliveries are lost, not the timing of a restart.
   */
  async function send(delivery: Captured): Promise<void> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-gitlab-event': delivery.event,
    };
    if (delivery.token) headers['x-gitlab-token'] = delivery.token;
    for (let attempt = 1; ; attempt++) {
      while (paused) await new Promise<void>((resolve) => resumeWaiters.push(resolve));
      const url = target();
      try {
        if (!url) throw new Error('no bot');
        const res = await fetch(url, { method: 'POST', headers, body: delivery.body });
        await res.arrayBuffer();
        if (res.status < 500) return;
        throw new Error(`answered ${res.status}`);
      } catch (error) {
        if (attempt >= 20) throw new Error(`relay: delivery not accepted by the bot: ${String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  }

  function pump(): void {
    if (sending || queue.length === 0) return;
    const run = async () => {
      // Leaves the caller first: `sending` is set before the loop can clear it.
      await Promise.resolve();
      while (queue.length > 0)
        await send(queue.shift()!).catch((error: unknown) => void errors.push(String(error)));
      sending = undefined;
    };
    sending = run();
  }

  const enqueue = (...items: Captured[]) => {
    queue.push(...items);
    pump();
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receivedCount++;
      const token = req.headers['x-gitlab-token'];
      const delivery: Captured = {
        event: String(req.headers['x-gitlab-event'] ?? ''),
        token: typeof token === 'string' ? token : undefined,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      res.writeHead(200).end('ok');
      if (stepBuffer) stepBuffer.push(delivery);
      else enqueue(delivery);
    });
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/hooks`,
    beginStep() {
      stepBuffer = [];
    },
    endStep(mode) {
      const caught = stepBuffer ?? [];
      stepBuffer = undefined;
      const previous = held;
      held = [];
      if (mode === 'normal') enqueue(...caught);
      else if (mode === 'dup') {
        enqueue(...caught);
        held.push(...caught);
      } else if (mode === 'delay') held.push(...caught);
      enqueue(...previous);
      return caught;
    },
    releaseHeld() {
      const previous = held;
      held = [];
      enqueue(...previous);
    },
    inject(delivery) {
      enqueue(delivery);
    },
    async flush() {
      while (sending) await sending;
    },
    received: () => receivedCount,
    errors,
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      const waiters = resumeWaiters;
      resumeWaiters = [];
      for (const w of waiters) w();
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Proxy (bot -> proxy -> sandbox API)

export type FaultKind = 'reply-503' | 'forward-then-502';

export interface BotRequest {
  seq: number;
  method: string;
  path: string;
  body: unknown;
  /** Sandbox version when it arrived at the proxy. */
  arrivedAt: number;
  forwarded: boolean;
  /** The sandbox's answer (before any fault replaced it); undefined while in flight or not forwarded. */
  status?: number;
  /** The answer the bot got. */
  answered?: number;
  doneAt?: number;
  fault?: FaultKind;
}

export interface Proxy {
  url: string;
  fail(fault: { method: string; path: RegExp; mode: FaultKind; times: number }): void;
  clearFaults(): void;
  log: BotRequest[];
  /** Called synchronously when a request has arrived (body read), before it is forwarded. */
  onArrive?: (entry: BotRequest) => void;
  close(): Promise<void>;
}

const MODES: Record<FaultKind, FaultMode> = { 'reply-503': 'down', 'forward-then-502': 'forward-then-502' };
const KINDS = new Map<FaultMode, FaultKind>(
  Object.entries(MODES).map(([kind, mode]) => [mode, kind as FaultKind]),
);

/**
 * The tests' fault proxy (test/helpers/fault-proxy.ts), with a log the oracle reads: each bot
 * request with its parsed body and the sandbox's version when it arrived and when it was done.
 */
export async function startProxy(target: string, version: () => number): Promise<Proxy> {
  const faults = await startFaultProxy(target);
  const entries = new Map<number, BotRequest>();
  const proxy: Proxy = {
    url: faults.url,
    log: [],
    fail(fault) {
      faults.fail({ method: fault.method, path: fault.path, mode: MODES[fault.mode], times: fault.times });
    },
    clearFaults: () => faults.clear(),
    close: () => faults.close(),
  };
  faults.onArrive = (request) => {
    let body: unknown;
    try {
      body = request.body.length > 0 ? JSON.parse(request.body.toString('utf8')) : undefined;
    } catch {
      body = request.body.toString('utf8');
    }
    const kind = request.mode && KINDS.get(request.mode);
    const entry: BotRequest = {
      seq: request.seq,
      method: request.method,
      path: request.path,
      body,
      arrivedAt: version(),
      forwarded: request.mode !== 'down',
      ...(kind ? { fault: kind } : {}),
    };
    entries.set(request.seq, entry);
    proxy.log.push(entry);
    proxy.onArrive?.(entry);
    if (!entry.forwarded) entry.doneAt = version();
  };
  faults.onForwarded = (request) => {
    const entry = entries.get(request.seq);
    if (!entry) return;
    if (request.status !== undefined) entry.status = request.status;
    entry.doneAt = version();
  };
  faults.onDone = (request) => {
    const entry = entries.get(request.seq);
    if (!entry) return;
    if (request.answered !== undefined) entry.answered = request.answered;
    entries.delete(request.seq);
  };
  return proxy;
}

// ---------------------------------------------------------------------------------------------
// The world

export const RULES = `rules:
  - name: automerge
    on: [merge_request.open, merge_request.update, status.changed, push]
    for: merge_requests
    if:
      - state: opened
      - labels: { all: [automerge], none: [do-not-merge] }
      - statuses: { required: [ci/test], state: success }
    do: [merge]
  - name: policy status
    on: [merge_request.open, merge_request.update, push]
    for: merge_requests
    if:
      - state: opened
    do:
      - status: { name: hookbot/policy, state: success, description: ok }
  - name: thanks
    on: [issue.open, merge_request.open]
    do:
      - comment: 'Thanks for the contribution'
  - name: title echo
    on: [issue.open, issue.update]
    for: issues
    do:
      - comment: 'Tracking: {{ title }}'
  - name: stop auto-merge when blocked
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - labels: { any: [do-not-merge] }
      - merge_when_build_succeeds: true
    do: [cancel_merge]
  - name: triage command
    on: [note.created]
    if:
      - note: { matches: '^/triage' }
      - actor: maint
    do:
      - label: { add: [triaged] }
`;

export const SECRET = 'model-hook-secret-0123456789';
export const BOT_TOKEN = 'model-bot-token-0123456789';
export const MAINT_TOKEN = 'model-maint-token-0123456789';
export const ALICE_TOKEN = 'model-alice-token-0123456789';

export interface World {
  sb: Sandbox;
  relay: Relay;
  proxy: Proxy;
  clock: { advance(ms: number): void };
  runtime(): Runtime;
  bot: UserRec;
  maint: UserRec;
  alice: UserRec;
  projectId: number;
  projectPath: string;
  /** Bumped on every sandbox mutation. */
  version(): number;
  /** Listeners called after every sandbox mutation. */
  onChange: (() => void)[];
  restart(): Promise<void>;
  close(): Promise<void>;
}

let worldCount = 0;

function fastTmp(): string {
  try {
    if (statSync('/dev/shm').isDirectory()) {
      accessSync('/dev/shm', constants.W_OK);
      return '/dev/shm';
    }
  } catch {
    // no shared memory folder: the ordinary one
  }
  return tmpdir();
}

export async function createWorld(options: { debounceMs?: number; logLevel?: string } = {}): Promise<World> {
  const clock = installClock();
  // Git repositories and the state file in memory where the machine has it: the case is about
  // interleavings, not about the disk.
  const scratch = fastTmp();
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
  // startSandbox takes its temporary folder before its first await.
  const starting = startSandbox({
    seed: 'empty',
    clock: () => new Date(Date.now()),
    hookTimeoutMs: 5_000,
  });
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  const sb = await starting;
  const db = sb.ctx.db;
  let version = 0;
  const onChange: (() => void)[] = [];
  const original = db.changed.bind(db);
  db.changed = () => {
    original();
    version++;
    for (const listener of onChange) listener();
  };

  const bot = addUser(db, { username: 'hookbot', private_token: BOT_TOKEN });
  const maint = addUser(db, { username: 'maint', private_token: MAINT_TOKEN });
  const alice = addUser(db, { username: 'alice', private_token: ALICE_TOKEN });
  const n = ++worldCount;
  const group = addGroup(db, {
    name: `model${n}`,
    owner_id: 1,
    members: [
      { user_id: bot.id, access_level: 40 },
      { user_id: maint.id, access_level: 40 },
      { user_id: alice.id, access_level: 30 },
    ],
  });
  const project = await addProject(sb.ctx, {
    name: 'app',
    namespace_id: group.id,
    creator_id: 1,
    initialFiles: { 'README.md': '# app\n' },
  });
  db.changed();
  const projectPath = `${group.path}/${project.path}`;

  const dir = mkdtempSync(path.join(scratch, 'hookbot-model-'));
  const rulesDir = path.join(dir, 'rules');
  mkdirSync(rulesDir, { recursive: true });
  writeFileSync(path.join(rulesDir, 'default.yml'), RULES);
  const statePath = path.join(dir, 'state', 'hookbot.json');

  const loaded = loadConfig({
    env: {
      HOOKBOT_STATE: statePath,
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: rulesDir,
      HOOKBOT_IN_DOCKER: '0',
    },
  });
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  const config: Config = loaded.config;
  config.pipeline.debounce_ms = options.debounceMs ?? 20;
  config.rules.watch = false;
  config.api.retry.base_delay_ms = 5;

  const proxy = await startProxy(sb.url, () => version);
  let runtime: Runtime | undefined;
  const relay = await startRelay(() => runtime?.bot.hookUrl);
  const log = createLogger({ level: (options.logLevel ?? 'silent') as 'silent', format: 'json' });
  const start = () =>
    startRuntime(
      config,
      { log, metrics: createMetrics() },
      { api: { url: proxy.url, token: BOT_TOKEN }, webhookSecret: SECRET, scheduler: false },
    );
  runtime = await start();

  const res = await fetch(`${sb.apiUrl}/projects/${project.id}/hooks`, {
    method: 'POST',
    headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
    body: JSON.stringify({
      url: relay.url,
      token: SECRET,
      push_events: true,
      issues_events: true,
      merge_requests_events: true,
      note_events: true,
      build_events: true,
      pipeline_events: true,
    }),
  });
  if (res.status !== 201) throw new Error(`hook not registered: ${res.status} ${await res.text()}`);

  return {
    sb,
    relay,
    proxy,
    clock,
    runtime: () => runtime!,
    bot,
    maint,
    alice,
    projectId: project.id,
    projectPath,
    version: () => version,
    onChange,
    async restart() {
      relay.pause();
      await runtime!.close();
      runtime = undefined;
      runtime = await start();
      relay.resume();
    },
    async close() {
      relay.resume();
      await runtime?.close();
      runtime = undefined;
      await relay.close();
      await proxy.close();
      await sb.close();
      clock.restore();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
