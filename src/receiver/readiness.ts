/**
 * `/readyz` without cost per request and without detail for strangers: the checks run at most once
 * per `ttlMs` (callers in between, and callers while a run is under way, share its result), and a
 * failing check's reason goes to the log, not to the answer.
 */

export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
}

export interface ReadinessLog {
  warn(obj: object, msg: string): void;
}

export interface ReadinessOptions {
  checks: readonly ReadinessCheck[];
  /** How long a result is reused. */
  ttlMs?: number;
  /** One check may take this long before it counts as failed. */
  timeoutMs?: number;
  log?: ReadinessLog;
  now?: () => number;
}

export const DEFAULT_READINESS_TTL_MS = 5_000;

/** Resolves true when every check passed in the latest run. */
export function createReadiness(options: ReadinessOptions): () => Promise<boolean> {
  const ttlMs = options.ttlMs ?? DEFAULT_READINESS_TTL_MS;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const now = options.now ?? Date.now;
  let last: { at: number; ready: boolean } | undefined;
  let running: Promise<boolean> | undefined;

  const runChecks = async (): Promise<boolean> => {
    const failures = (
      await Promise.all(
        options.checks.map(async ({ name, check }) => {
          try {
            await withTimeout(check(), timeoutMs);
            return undefined;
          } catch (error) {
            return { check: name, reason: error instanceof Error ? error.message : String(error) };
          }
        }),
      )
    ).filter((failure) => failure !== undefined);
    if (failures.length > 0) options.log?.warn({ failures }, 'not ready');
    return failures.length === 0;
  };

  return () => {
    if (last && now() - last.at < ttlMs) return Promise.resolve(last.ready);
    running ??= runChecks().then((ready) => {
      last = { at: now(), ready };
      running = undefined;
      return ready;
    });
    return running;
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
