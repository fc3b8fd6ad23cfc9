/**
 * How big each scenario is. Full sizes are issue 8's; `RELIABILITY_SMALL=1` gives the configuration
 * CI runs (a few minutes on two cores). Each figure can be set on its own by its variable.
 */

export interface Sizes {
  small: boolean;
  /** Crash: distinct issue deliveries in the burst, and kill -9s. */
  crashDeliveries: number;
  crashKills: number;
  /** Replicas: distinct deliveries spread over three replicas, and kill -9s of random replicas. */
  replicaDeliveries: number;
  replicaKills: number;
  /** Train replicas: merge requests queued on a merge train (`depth: 3`), and the most kill -9s made. */
  trainMergeRequests: number;
  trainKills: number;
  /** Outage: deliveries, and how long the sandbox answers 503. */
  outageDeliveries: number;
  outageMs: number;
  /** Bad input: bad deliveries, and one good delivery per this many bad ones. */
  badDeliveries: number;
  badPerGood: number;
  /** Concurrent requests of the senders. */
  concurrency: number;
  /** Give up waiting for a scenario's bot to finish after this long. */
  settleTimeoutMs: number;
}

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got ${raw}`);
  return value;
}

export function readSizes(): Sizes {
  const small = process.env.RELIABILITY_SMALL === '1';
  return {
    small,
    crashDeliveries: int('RELIABILITY_CRASH_DELIVERIES', small ? 300 : 5_000),
    crashKills: int('RELIABILITY_CRASH_KILLS', small ? 2 : 5),
    replicaDeliveries: int('RELIABILITY_REPLICA_DELIVERIES', small ? 300 : 5_000),
    replicaKills: int('RELIABILITY_REPLICA_KILLS', small ? 2 : 5),
    trainMergeRequests: int('RELIABILITY_TRAIN_MERGE_REQUESTS', small ? 8 : 16),
    trainKills: int('RELIABILITY_TRAIN_KILLS', small ? 8 : 16),
    outageDeliveries: int('RELIABILITY_OUTAGE_DELIVERIES', small ? 150 : 1_000),
    outageMs: int('RELIABILITY_OUTAGE_MS', small ? 6_000 : 20_000),
    badDeliveries: int('RELIABILITY_BAD_DELIVERIES', small ? 1_000 : 10_000),
    badPerGood: int('RELIABILITY_BAD_PER_GOOD', 20),
    concurrency: int('RELIABILITY_CONCURRENCY', 32),
    settleTimeoutMs: int('RELIABILITY_SETTLE_MS', small ? 90_000 : 300_000),
  };
}
