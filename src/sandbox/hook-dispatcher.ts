/**
 * Hook deliveries the way the real v3-era servers send them (docs/server-behaviour.md#hook-delivery):
 * `POST` of one JSON object with `Content-Type: application/json`, `X-Gitlab-Event` and, only when the
 * hook has a secret, `X-Gitlab-Token`; no signature, no delivery id. Sent in the background (the API
 * call that caused it never waits), 10 s timeout, answer status and body ignored, a refused or reset
 * connection dropped without retry.
 *
 * Ordering: deliveries to one hook leave in the order they were emitted (one at a time per hook), and
 * different hooks are served in parallel, round-robin, under one overall concurrency bound. Real servers
 * give no ordering guarantee at all (Sidekiq jobs); a receiver must not rely on this one.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Db, HookRec } from './db.ts';
import { HOOK_FLAG, type HookDelivery, type HookDispatcher, type HookEventName } from './context.ts';

export interface HookDispatcherOptions {
  /** How long one delivery may take, answer body included. Real servers wait 10 s. */
  timeoutMs?: number;
  /** Deliveries in flight at once, over all hooks. */
  concurrency?: number;
  /** How many deliveries `recent()` keeps. */
  logSize?: number;
  /**
   * Retries after a timeout, off (0) by default. Real servers retry a read timeout (the job raises and
   * Sidekiq retries it, 4 to 25 times, minutes apart), so a slow receiver gets the same payload again;
   * turn this on to reproduce that. Refused or reset connections are never retried, as on real servers.
   */
  retryTimeouts?: number;
  /** Wait before each retry (real servers: minutes; default one minute). */
  retryDelayMs?: number;
}

interface Job {
  hookId: number;
  url: string;
  token: string | null;
  event: HookEventName;
  payload: Record<string, unknown>;
  /** Serialised once at emission, so later changes to the records never leak into a queued delivery. */
  body: string;
  attempt: number;
}

export function createHookDispatcher(db: Db, options: HookDispatcherOptions = {}): HookDispatcher {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const logSize = Math.max(1, options.logSize ?? 500);
  const retryTimeouts = Math.max(0, options.retryTimeouts ?? 0);
  const retryDelayMs = options.retryDelayMs ?? 60_000;

  /** Waiting deliveries per hook, FIFO; the map's order is the round-robin order of the hooks. */
  const queues = new Map<number, Job[]>();
  /** Hooks with a delivery in flight: at most one each, which keeps a hook's deliveries in order. */
  const busy = new Set<number>();
  const inFlight = new Set<Promise<void>>();
  const retryTimers = new Set<NodeJS.Timeout>();
  const log: HookDelivery[] = [];
  let waiters: (() => void)[] = [];
  let closed = false;

  const isIdle = () => queues.size === 0 && inFlight.size === 0 && retryTimers.size === 0;

  function settle(): void {
    if (!isIdle() || waiters.length === 0) return;
    const done = waiters;
    waiters = [];
    for (const resolve of done) resolve();
  }

  function record(entry: HookDelivery): void {
    log.push(entry);
    if (log.length > logSize) log.splice(0, log.length - logSize);
  }

  function enqueue(job: Job): void {
    const queue = queues.get(job.hookId);
    if (queue) queue.push(job);
    else queues.set(job.hookId, [job]);
  }

  function pump(): void {
    while (inFlight.size < concurrency) {
      let next: Job | undefined;
      for (const [hookId, queue] of queues) {
        if (busy.has(hookId)) continue;
        next = queue.shift();
        // Re-inserting moves the hook to the back: the next free slot goes to another hook first.
        queues.delete(hookId);
        if (queue.length > 0) queues.set(hookId, queue);
        break;
      }
      if (!next) return;
      start(next);
    }
  }

  function start(job: Job): void {
    busy.add(job.hookId);
    const running: Promise<void> = deliver(job).finally(() => {
      busy.delete(job.hookId);
      inFlight.delete(running);
      if (!closed) pump();
      settle();
    });
    inFlight.add(running);
  }

  async function deliver(job: Job): Promise<void> {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'X-Gitlab-Event': job.event,
    };
    if (job.token) headers['X-Gitlab-Token'] = job.token;
    const at = new Date().toISOString();
    const started = performance.now();
    let status: number | undefined;
    let error: string | undefined;
    let timedOut = false;
    try {
      status = await post(job.url, headers, job.body, timeoutMs);
    } catch (caught) {
      timedOut = caught instanceof DeliveryTimeout;
      error = timedOut ? `timed out after ${timeoutMs} ms` : describe(caught);
    }
    record({
      hookId: job.hookId,
      url: job.url,
      event: job.event,
      payload: job.payload,
      status,
      ...(error === undefined ? {} : { error }),
      durationMs: Math.round(performance.now() - started),
      at,
    });
    if (timedOut && job.attempt < retryTimeouts && !closed) scheduleRetry(job);
  }

  function scheduleRetry(job: Job): void {
    const timer = setTimeout(() => {
      retryTimers.delete(timer);
      if (!closed) {
        // A retry joins the back of its hook's queue: later deliveries may overtake it, as on real servers.
        enqueue({ ...job, attempt: job.attempt + 1 });
        pump();
      }
      settle();
    }, retryDelayMs);
    retryTimers.add(timer);
  }

  return {
    emit(projectId, event, payload) {
      if (closed) return;
      const flag = HOOK_FLAG[event];
      const hooks = db.data.hooks.filter((h: HookRec) => h.project_id === projectId && h[flag] === true);
      if (hooks.length === 0) return;
      const body = JSON.stringify(payload);
      for (const hook of hooks)
        enqueue({ hookId: hook.id, url: hook.url, token: hook.token, event, payload, body, attempt: 0 });
      // Start on a later tick: the caller (an API request) never waits for a delivery to begin.
      queueMicrotask(() => {
        if (!closed) pump();
      });
    },
    idle() {
      if (isIdle()) return Promise.resolve();
      return new Promise<void>((resolve) => waiters.push(resolve));
    },
    recent: () => log.slice(),
    async close() {
      closed = true;
      // Deliveries not yet started and pending retries are dropped; those in flight end within the timeout.
      queues.clear();
      for (const timer of retryTimers) clearTimeout(timer);
      retryTimers.clear();
      await Promise.allSettled([...inFlight]);
      settle();
    },
  };
}

class DeliveryTimeout extends Error {}

/** Connections to receivers are kept open between deliveries, as real servers' HTTP clients did. */
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/** Redirects followed at most (fetch's and HTTParty's limit alike is about this). */
const MAX_REDIRECTS = 5;

/**
 * One POST, answered with its status once the whole answer body has arrived (and been dropped); the
 * timeout counts from the start to the end of the last answer's body, so a receiver that stalls its
 * body times out like one that never answers. Redirects are followed as fetch (used before) and
 * real servers' HTTP client did: 301, 302 and 303 again as a GET without the body, 307 and 308 as
 * they were. node:http rather than fetch: a delivery costs a fraction of the CPU.
 */
function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  const attempt = (
    target: string,
    method: string,
    payload: string | undefined,
    hops: number,
  ): Promise<number> =>
    new Promise((resolve, reject) => {
      let address: URL;
      try {
        address = new URL(target);
      } catch {
        reject(new Error(`invalid URL ${target}`));
        return;
      }
      const secure = address.protocol === 'https:';
      if (!secure && address.protocol !== 'http:') {
        reject(new Error(`unsupported protocol ${address.protocol}`));
        return;
      }
      const send = secure ? httpsRequest : httpRequest;
      const own: Record<string, string> = { ...headers };
      if (payload === undefined) delete own['Content-Type'];
      else own['Content-Length'] = String(Buffer.byteLength(payload));
      const req = send(address, { method, agent: secure ? agents.https : agents.http, headers: own });
      const timer = setTimeout(
        () => req.destroy(new DeliveryTimeout('timeout')),
        Math.max(0, deadline - Date.now()),
      );
      req.on('response', (res) => {
        res.on('data', () => undefined);
        res.on('end', () => {
          clearTimeout(timer);
          const status = res.statusCode ?? 0;
          const location = res.headers.location;
          if (location && [301, 302, 303, 307, 308].includes(status) && hops < MAX_REDIRECTS) {
            const next = new URL(location, address).toString();
            const keep = status === 307 || status === 308;
            attempt(next, keep ? method : 'GET', keep ? payload : undefined, hops + 1).then(resolve, reject);
            return;
          }
          resolve(status);
        });
        res.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
      });
      req.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      req.end(payload);
    });
  return attempt(url, 'POST', body, 0);
}

/** The reason, e.g. `connect ECONNREFUSED 127.0.0.1:9`. */
function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
