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
      const response = await fetch(job.url, {
        method: 'POST',
        headers,
        body: job.body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = response.status;
      // Read (and ignore) the answer: a receiver that stalls its body times out like one that never answers.
      await response.arrayBuffer();
    } catch (caught) {
      timedOut = isTimeout(caught);
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

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

/** `fetch failed` says nothing; the cause (`connect ECONNREFUSED 127.0.0.1:9`) says what happened. */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error) return cause.message || error.message;
    return error.message;
  }
  return String(error);
}
