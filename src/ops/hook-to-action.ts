/**
 * `hookbot_hook_to_action_seconds`: how long after a delivery was accepted the bot acted on it.
 *
 * One sample per action that took effect (the executor's `done`) in an item run of the pipeline:
 * from the acceptance of the delivery (the moment its 202 went out: it was durable) to the moment
 * the executor settled the action. A run serves every delivery coalesced into it, so its actions
 * count from the earliest of them: the wait a person sees, debounce and retries included. Not
 * samples: actions whose effect already held (`skipped`), failures, actions of sweeps (their runs
 * serve no delivery), and a redelivery of a delivery already accepted (it is a hint with an id of
 * its own, never stored).
 *
 * The acceptance times are remembered here as deliveries are answered, a bounded number of them
 * (the inbox's own bound by default), oldest forgotten first. A delivery accepted before a restart,
 * or by another replica that gave it up, is found in the store's inbox instead (`receivedAt`).
 */
import { currentLogContext } from './log-context.ts';

export interface HookToActionOptions {
  /** Called with each sample, in seconds. */
  observe(seconds: number): void;
  /** The inbox's deliveries, for those accepted before this process remembered them. */
  pending?: () => readonly { id: string; receivedAt: number }[];
  /** Acceptance times remembered at most. Default 10,000 (state.max_pending's default). */
  limit?: number;
  now?: () => number;
}

export interface HookToAction {
  /** A delivery was accepted (answered 202) now. */
  accepted(id: string): void;
  /** An action took effect: a sample when the current item run serves deliveries. */
  acted(): void;
}

export const DEFAULT_REMEMBERED = 10_000;

export function createHookToAction(options: HookToActionOptions): HookToAction {
  const now = options.now ?? Date.now;
  const limit = options.limit ?? DEFAULT_REMEMBERED;
  /** Delivery id -> acceptance time, in order of acceptance (a Map keeps insertion order). */
  const acceptedAt = new Map<string, number>();

  function earliest(ids: readonly string[]): number | undefined {
    let first: number | undefined;
    let missing = false;
    for (const id of ids) {
      const at = acceptedAt.get(id);
      if (at === undefined) missing = true;
      else if (first === undefined || at < first) first = at;
    }
    if (missing && options.pending) {
      const wanted = new Set(ids);
      for (const entry of options.pending())
        if (wanted.has(entry.id) && (first === undefined || entry.receivedAt < first))
          first = entry.receivedAt;
    }
    return first;
  }

  return {
    accepted(id) {
      acceptedAt.delete(id);
      acceptedAt.set(id, now());
      if (acceptedAt.size > limit) acceptedAt.delete(acceptedAt.keys().next().value!);
    },
    acted() {
      const deliveries = currentLogContext()?.deliveries;
      if (deliveries === undefined || deliveries.length === 0) return;
      const at = earliest(deliveries);
      if (at !== undefined) options.observe(Math.max(0, now() - at) / 1000);
    },
  };
}
