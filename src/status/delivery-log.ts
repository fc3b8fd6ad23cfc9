/**
 * The last deliveries the receiver answered, for the status page: a fixed-size ring in memory. The
 * inbox keeps only what is not processed yet and drops credentials; this keeps the outcome of every
 * answer (refused and ignored ones too), which is what an operator checks first ("do hooks arrive?").
 * Lost on restart on purpose: it is a window on the present, not a record.
 */

export interface DeliveryInfo {
  /** When the answer was sent (ms since the epoch). */
  at: number;
  /** The hook kind, when the delivery got far enough to tell (`merge_request`, `push`...). */
  kind?: string;
  /** `accepted`, `duplicate`, `ignored`, `unauthorized`, `bad_request`, `too_large`, `inbox_full`, `overloaded`, `error`. */
  outcome: string;
  /** The HTTP status answered. */
  status: number;
  /** Time to answer (ms). */
  ackMs: number;
}

/** What the hook handler's `onOutcome` reports (start-bot.ts `onDelivery`). */
export interface DeliveryOutcomeInfo {
  kind?: string;
  status: number;
  ackMs: number;
}

export interface DeliveryLog {
  record(outcome: string, info: DeliveryOutcomeInfo): void;
  /** Newest first. */
  list(): DeliveryInfo[];
}

export const DEFAULT_DELIVERY_LOG_SIZE = 50;

export function createDeliveryLog(
  size: number = DEFAULT_DELIVERY_LOG_SIZE,
  now: () => number = Date.now,
): DeliveryLog {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`delivery log size must be ≥ 1, got ${size}`);
  const ring: DeliveryInfo[] = [];
  let next = 0;
  return {
    record(outcome, info) {
      const entry: DeliveryInfo = { at: now(), outcome, status: info.status, ackMs: info.ackMs };
      if (info.kind !== undefined) entry.kind = info.kind;
      ring[next] = entry;
      next = (next + 1) % size;
    },
    list() {
      const out: DeliveryInfo[] = [];
      for (let i = 1; i <= ring.length; i++) {
        const entry = ring[(next - i + size) % size];
        if (entry) out.push({ ...entry });
      }
      return out;
    },
  };
}
