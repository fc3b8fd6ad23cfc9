/**
 * Refusals logged once per burst. A full inbox refuses every delivery until some are processed: a
 * line (with a stack) per refusal buried the log under hundreds of copies of one fact. The first
 * refusal of a burst is logged with its reason; the burst ends with the next delivery accepted that
 * arrived after the burst began (one already in flight, answered once its write is durable, says
 * nothing about room in the inbox), logged with how many were refused meanwhile. No timer: the burst
 * is over when intake is.
 */
export interface RefusalLogTarget {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface RefusalLog {
  /** A delivery refused with 503 for `reason` (inbox full, too much being read at once). */
  refused(outcome: string, reason: string): void;
  /**
   * A delivery accepted, that arrived at `arrivedAt` (`performance.now()` time): ends a burst of
   * refusals, if one is under way and began before it arrived.
   */
  accepted(arrivedAt: number): void;
}

export function createRefusalLog(log: RefusalLogTarget): RefusalLog {
  let refused = 0;
  let since = 0;
  return {
    refused(outcome, reason) {
      if (refused++ === 0) {
        since = performance.now();
        log.warn(
          { outcome, reason },
          'refusing deliveries with 503 (logged once until one is accepted again)',
        );
      }
    },
    accepted(arrivedAt) {
      if (refused === 0 || arrivedAt < since) return;
      log.info(
        { refused, sinceMs: Math.round(performance.now() - since) },
        `accepting deliveries again after refusing ${refused}`,
      );
      refused = 0;
    },
  };
}
