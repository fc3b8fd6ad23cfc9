/**
 * Deliveries refused for their secret (401), logged: a project hook with a wrong secret token is
 * otherwise silent on the bot's side (the server ignores the answer), and the bot just never acts.
 * Rate-limited, since anyone who can reach the port can send refused requests: the first refusal of
 * a window is logged at once with its remote address, the others of the window are counted and
 * told in one line when it ends (with the addresses they came from, at most a few).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface RefusalLog {
  warn(obj: object, msg: string): void;
}

export interface RefusalLogOptions {
  /** One line at most per window (default 60 s). */
  windowMs?: number;
  /** What to tell the reader to fix, e.g. which setting holds the secret. */
  hint: string;
}

const MAX_ADDRESSES = 5;

export function createSecretRefusalLog(log: RefusalLog, options: RefusalLogOptions) {
  const windowMs = options.windowMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  let more = 0;
  const addresses = new Set<string>();

  const flush = () => {
    timer = undefined;
    if (more === 0) return;
    log.warn(
      { refused: more, from: [...addresses], windowMs },
      `${more} more deliveries refused for their secret in the last ${windowMs >= 1000 ? `${Math.round(windowMs / 1000)} s` : `${windowMs} ms`}`,
    );
    more = 0;
    addresses.clear();
    // The window goes on while refusals keep coming: the next one is counted, not logged at once.
    timer = setTimeout(flush, windowMs);
    timer.unref();
  };

  return {
    refused(remote: string | undefined): void {
      if (timer === undefined) {
        log.warn(
          { remote: remote ?? 'unknown' },
          `delivery refused (401): wrong or missing secret token from ${remote ?? 'an unknown address'}; ${options.hint}`,
        );
        timer = setTimeout(flush, windowMs);
        timer.unref();
        return;
      }
      more++;
      if (remote !== undefined && addresses.size < MAX_ADDRESSES) addresses.add(remote);
    },
    close(): void {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

/**
 * Wraps the hook route's handler: each answer of 401 is reported with the caller's address. Kept
 * outside the handler, which stays the lean path of every delivery.
 */
export function reportRefusals(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  refused: (remote: string | undefined) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const remote = req.socket.remoteAddress;
    res.once('finish', () => {
      if (res.statusCode === 401) refused(remote);
    });
    handler(req, res);
  };
}
