/**
 * POST /hooks on the lean path: node's own request and response, no middleware stack. Real servers
 * wait only 10 s and retry a slow delivery, so the handler does the least that makes a delivery safe
 * (verify, parse, persist) and answers; it never calls the API. Measured: express with
 * `express.json()` reaches about 0.3x of a bare node:http server on this route (issue 4), so this
 * route bypasses express and everything else stays on express.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { KNOWN_KINDS, type DeliveryOutcome } from '../events/index.ts';
import { parseDelivery } from './parse-delivery.ts';
import { createDeliveryVerifier, type VerifyOptions } from './verify.ts';

/** What the receiver needs of the state store: durable before it resolves. */
export interface Inbox {
  accept(delivery: {
    key: string;
    kind: string;
    receivedAt: number;
    headers: Record<string, string>;
    body: unknown;
    /**
     * The body's bytes as received (they parse to `body`), in a buffer of their own: stored as they
     * are, not serialised again.
     */
    bodyJson?: string | Buffer;
  }): Promise<{ id: string; duplicate: boolean }>;
}

/** What the pipeline needs of a delivery just accepted (the inbox holds the rest). */
export interface AcceptedDelivery {
  id: string;
  kind: string;
  body: unknown;
}

export type { DeliveryOutcome };

export interface HookHandlerOptions {
  verify: VerifyOptions;
  inbox: Inbox;
  /** Body limit in bytes. Default 1 MiB. */
  limitBytes?: number;
  /**
   * Bytes of bodies being read at once, all requests together (declared lengths count from the
   * headers on, until the answer is out). Past it a delivery is answered 503 without being read, so
   * slow or many senders cannot hold more than this in memory. Default 32 MiB.
   */
  readingLimitBytes?: number;
  /** What a 503 tells the sender to wait, in seconds (`Retry-After`). Default 30. */
  retryAfterSeconds?: number;
  /** Kinds the bot acts on; others are answered 202 `ignored`. Default: every kind but `wiki_page`. */
  handledKinds?: readonly string[];
  /** Called after a delivery is durable and answered, to wake the processing pipeline. */
  onAccepted?: (delivery: AcceptedDelivery) => void;
  /**
   * Called after a copy of a delivery already accepted is answered `duplicate` (`id` is the first
   * copy's). The same bytes are not always the same event: a v3 merge request hook carries no labels
   * and gives times in whole seconds, so one user's two edits within a second send identical bodies.
   * The pipeline runs the items again on their fresh state rather than lose the second event.
   */
  onDuplicate?: (delivery: AcceptedDelivery) => void;
  /** Called once per delivery with its outcome and timing, for logs and metrics. */
  onOutcome?: (
    outcome: DeliveryOutcome,
    info: {
      kind?: string;
      status: number;
      ackMs: number;
      id?: string;
      error?: unknown;
      /** Why a refusal (503) happened, as the answer's message says it. */
      reason?: string;
    },
  ) => void;
  now?: () => number;
}

export const DEFAULT_LIMIT_BYTES = 1024 * 1024;
export const DEFAULT_READING_LIMIT_BYTES = 32 * 1024 * 1024;
export const DEFAULT_RETRY_AFTER_SECONDS = 30;
export const DEFAULT_HANDLED_KINDS: readonly string[] = KNOWN_KINDS.filter((k) => k !== 'wiki_page');

type Header = (name: string) => string | undefined;

/** What an answer reports beside its status and outcome. */
interface AnswerExtra {
  kind?: string;
  id?: string;
  error?: unknown;
  reason?: string;
}

const NO_EXTRA: AnswerExtra = {};
const ignore = (): void => undefined;

export function createHookHandler(options: HookHandlerOptions) {
  const limit = options.limitBytes ?? DEFAULT_LIMIT_BYTES;
  // Never below one body at the limit: a lone delivery the body limit admits is always read.
  const readingLimit = Math.max(options.readingLimitBytes ?? DEFAULT_READING_LIMIT_BYTES, limit);
  const retryAfter = String(options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS);
  const handled = new Set(options.handledKinds ?? DEFAULT_HANDLED_KINDS);
  const now = options.now ?? Date.now;
  const verifier = createDeliveryVerifier(options.verify);
  const onOutcome = options.onOutcome;
  /** Bytes of the bodies being read or handled now, all requests together. */
  let reading = 0;

  // The helpers below are made once per route, not per request: every delivery crosses them.
  const answer = (
    res: ServerResponse,
    started: number,
    status: number,
    outcome: DeliveryOutcome,
    json: string,
    extra: AnswerExtra = NO_EXTRA,
  ): void => {
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(json),
    });
    res.end(json);
    onOutcome?.(outcome, { status, ackMs: performance.now() - started, ...extra });
  };
  const message = (text: string): string => JSON.stringify({ message: text });
  /** Answers without reading (the rest of) the body: the connection closes once the answer is out. */
  const refuseUnread = (
    req: IncomingMessage,
    res: ServerResponse,
    started: number,
    status: number,
    outcome: DeliveryOutcome,
    text: string,
  ): void => {
    res.setHeader('connection', 'close');
    if (status === 503) res.setHeader('retry-after', retryAfter);
    answer(res, started, status, outcome, message(text), status === 503 ? { reason: text } : NO_EXTRA);
    res.once('finish', () => req.destroy());
  };
  const tooLarge = (req: IncomingMessage, res: ServerResponse, started: number): void =>
    refuseUnread(req, res, started, 413, 'too_large', `body too large (limit ${limit} bytes)`);
  const overloaded = (req: IncomingMessage, res: ServerResponse, started: number): void =>
    refuseUnread(req, res, started, 503, 'overloaded', overloadedMessage(readingLimit));

  /** Verified, parsed and persisted: the answer once the delivery is durable (or why it is not). */
  async function finish(res: ServerResponse, started: number, header: Header, raw: Buffer): Promise<void> {
    // The signature, when one is configured, needs the body (as text only then). Verified before
    // parsing: an unauthenticated caller learns nothing about what we accept.
    if (verifier.readsBody && !(await verifier.verify(header, () => raw.toString('utf8')))) {
      return answer(res, started, 401, 'unauthorized', message('unauthorized'));
    }
    const parsed = parseDelivery(header('x-gitlab-event'), raw);
    if (!parsed.ok) return answer(res, started, 400, 'bad_request', message(parsed.message));
    const kind = parsed.kind;
    if (!handled.has(kind)) {
      return answer(res, started, 202, 'ignored', JSON.stringify({ message: 'ignored', kind }), { kind });
    }
    let stored: { id: string; duplicate: boolean };
    try {
      stored = await options.inbox.accept({
        key: parsed.key,
        kind,
        receivedAt: now(),
        headers: { 'x-gitlab-event': parsed.event },
        body: parsed.body,
        bodyJson: parsed.bytes,
      });
    } catch (error) {
      // Not persisted means not accepted: say so, so nobody believes it will be processed.
      res.setHeader('retry-after', retryAfter);
      if (isInboxFull(error)) {
        const reason = `inbox full: ${error.message}`;
        return answer(res, started, 503, 'inbox_full', message(reason), { kind, reason });
      }
      return answer(res, started, 503, 'error', message('could not persist the delivery; try again'), {
        kind,
        error,
      });
    }
    const id = stored.id;
    const outcome = stored.duplicate ? 'duplicate' : 'accepted';
    answer(res, started, 202, outcome, JSON.stringify({ message: outcome, id }), { kind, id });
    if (stored.duplicate) options.onDuplicate?.({ id, kind, body: parsed.body });
    else options.onAccepted?.({ id, kind, body: parsed.body });
  }

  const handleHook = (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const headers = req.headers;
    const header: Header = (name) => {
      const value = headers[name];
      return Array.isArray(value) ? value[0] : value;
    };

    // What the headers settle is settled before a byte of the body is read: a caller without the
    // token costs no memory, however large or slow its body.
    if (!verifier.headersPass(header))
      return refuseUnread(req, res, started, 401, 'unauthorized', 'unauthorized');
    const declared = Number(headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return tooLarge(req, res, started);
    let held = Number.isFinite(declared) ? declared : 0;
    if (reading + held > readingLimit) return overloaded(req, res, started);
    reading += held;
    // Released once, when the answer is out or the connection is gone, whichever comes first.
    res.once('close', () => {
      reading -= held;
      held = 0;
    });

    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        return tooLarge(req, res, started);
      }
      // A body without a declared length counts as it arrives.
      if (size > held) {
        reading += size - held;
        held = size;
        if (reading > readingLimit) {
          over = true;
          return overloaded(req, res, started);
        }
      }
      chunks.push(chunk);
    });
    req.on('error', ignore); // a client that goes away mid-body: nothing to answer
    req.on('end', () => {
      if (over) return;
      const raw = chunks.length === 1 ? chunks[0]! : joinChunks(chunks, size);
      finish(res, started, header, raw).catch((error: unknown) => {
        if (!res.headersSent) answer(res, started, 500, 'error', message('internal error'), { error });
      });
    });
  };
  /** Bytes of bodies being read or handled now (for tests and metrics). */
  return Object.assign(handleHook, { readingBytes: () => reading });
}

/**
 * The chunks in one buffer of its own: the store keeps the body's bytes until the delivery is
 * processed, and a small buffer from Buffer.concat would be a slice of a shared pool, holding it all.
 * (A single chunk from node:http already owns its memory.)
 */
function joinChunks(chunks: readonly Buffer[], size: number): Buffer {
  const joined = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for (const chunk of chunks) at += chunk.copy(joined, at);
  return joined;
}

function overloadedMessage(limit: number): string {
  return `too many deliveries being read at once (over ${limit} bytes); try again later`;
}

/** The store's back-pressure (StateError `inbox_full`), told apart from a failed write. */
function isInboxFull(error: unknown): error is Error {
  return error instanceof Error && (error as { code?: unknown }).code === 'inbox_full';
}
