/**
 * Sends a burst of good deliveries the way a real server's retries would: concurrently, each until
 * it is answered 202. A delivery that finds nobody listening (connection refused: the bot is down,
 * being restarted on the same port) or loses its connection before the answer (the bot was killed
 * mid-request) is sent again 200 ms later, until the bot is back; it counts as sent, not accepted,
 * until a 202 comes. Other answers (a 503 when the bot could not
 * persist) are counted and retried too, so they show in the figures.
 */
import { keepAliveAgent, messageOf, send, type RawDelivery } from './deliveries.ts';
import { sleep } from './bot-process.ts';

export interface SenderFigures {
  /** POSTs made, retries included. */
  attempts: number;
  refused: number;
  resets: number;
  /** Distinct deliveries answered 202 `accepted` (first answer). */
  accepted: number;
  /** Distinct deliveries whose first 202 said `duplicate` (their earlier copy was persisted, its answer lost). */
  acceptedAsDuplicate: number;
  /** Other answers, by `status message`. */
  otherAnswers: Record<string, number>;
}

export interface Sender {
  /** Resolves once every delivery was answered 202. */
  done: Promise<void>;
  /** Deliveries answered 202 so far. */
  answered(): number;
  figures(): SenderFigures;
}

export function startSender(options: {
  /** Where to send; a function to spread deliveries over several replicas (it picks each time). */
  url: string | (() => string);
  deliveries: readonly RawDelivery[];
  concurrency: number;
  /** Stop trying after this long (the run then reports what never got a 202). */
  timeoutMs: number;
}): Sender {
  const { deliveries } = options;
  const pick = typeof options.url === 'function' ? options.url : () => options.url as string;
  const queue = deliveries.map((_, i) => i);
  const answered = new Set<number>();
  const figures: SenderFigures = {
    attempts: 0,
    refused: 0,
    resets: 0,
    accepted: 0,
    acceptedAsDuplicate: 0,
    otherAnswers: {},
  };
  const agent = keepAliveAgent(options.concurrency);
  const deadline = Date.now() + options.timeoutMs;

  async function worker(): Promise<void> {
    while (answered.size < deliveries.length && Date.now() < deadline) {
      const i = queue.shift();
      if (i === undefined) {
        await sleep(20); // others are in flight; one of them may come back for a retry
        continue;
      }
      figures.attempts++;
      const result = await send(pick(), deliveries[i]!, agent);
      if (result.kind === 'answer' && result.status === 202) {
        const message = messageOf(result.body);
        if (!answered.has(i)) {
          answered.add(i);
          if (message === 'duplicate') figures.acceptedAsDuplicate++;
          else figures.accepted++;
        }
        continue;
      }
      if (result.kind === 'refused') figures.refused++;
      else if (result.kind === 'reset') figures.resets++;
      else {
        const key = `${result.status} ${messageOf(result.body)}`.slice(0, 120);
        figures.otherAnswers[key] = (figures.otherAnswers[key] ?? 0) + 1;
      }
      // A real server retries later; so do we (the bot may be down for a restart: keep knocking).
      await sleep(200);
      queue.push(i);
    }
  }

  const done = Promise.all(Array.from({ length: options.concurrency }, worker)).then(() => {
    agent.destroy();
  });
  return {
    done,
    answered: () => answered.size,
    figures: () => ({ ...figures, otherAnswers: { ...figures.otherAnswers } }),
  };
}
