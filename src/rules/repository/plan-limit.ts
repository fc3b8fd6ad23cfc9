/**
 * How often the plan of a merge request's `.hookbot.yml` is computed (issue 28: a fork's pushes each
 * cost up to `plan_api_calls` API calls, with no bound per author or per merge request). A plan is
 * computed at most `perAuthor` times per author and `perMergeRequest` times per merge request in any
 * window of an hour (sliding); past either, the review says when the next one will be, and computes
 * it then. The counts are in memory, per process: a restart forgets them, and each replica of a
 * fleet counts its own.
 */

export interface PlanLimits {
  /** Most plans per merge request author in any window. */
  perAuthor: number;
  /** Most plans per merge request in any window. */
  perMergeRequest: number;
  /** The window (default one hour; tests shorten it). */
  windowMs?: number;
}

export const DEFAULT_PLAN_LIMITS: PlanLimits = { perAuthor: 10, perMergeRequest: 4 };

/** Why a plan waits, and until when (ms since the epoch). */
export interface PlanWait {
  by: 'author' | 'merge request';
  limit: number;
  until: number;
}

/** Most authors and merge requests remembered; the ones idle longest go first. */
const MAX_KEYS = 10_000;

export interface PlanLimiter {
  /** Counts one plan for `author` and `mergeRequest` at `now`, or says until when none may be computed. */
  take(author: string, mergeRequest: string, now: number): PlanWait | undefined;
}

export function createPlanLimiter(limits: PlanLimits): PlanLimiter {
  const windowMs = limits.windowMs ?? 3_600_000;
  /** Plans per key, oldest first, within the window (at most the key's limit: older ones are dropped). */
  const times = new Map<string, number[]>();

  const recent = (key: string, now: number): number[] =>
    (times.get(key) ?? []).filter((at) => at > now - windowMs);

  function check(key: string, limit: number, now: number): number | undefined {
    const within = recent(key, now);
    return within.length >= limit ? within[within.length - limit]! + windowMs : undefined;
  }

  function count(key: string, limit: number, now: number): void {
    const within = recent(key, now);
    within.push(now);
    times.delete(key);
    times.set(key, within.slice(-limit));
    while (times.size > MAX_KEYS) times.delete(times.keys().next().value!);
  }

  return {
    take(author, mergeRequest, now) {
      const byAuthor = check(`author:${author}`, limits.perAuthor, now);
      const byMergeRequest = check(`mr:${mergeRequest}`, limits.perMergeRequest, now);
      if (byAuthor !== undefined || byMergeRequest !== undefined) {
        // The later of the two: a plan then passes both.
        if ((byAuthor ?? 0) >= (byMergeRequest ?? 0))
          return { by: 'author', limit: limits.perAuthor, until: byAuthor! };
        return { by: 'merge request', limit: limits.perMergeRequest, until: byMergeRequest! };
      }
      count(`author:${author}`, limits.perAuthor, now);
      count(`mr:${mergeRequest}`, limits.perMergeRequest, now);
      return undefined;
    },
  };
}
