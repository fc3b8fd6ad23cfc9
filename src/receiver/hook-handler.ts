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
    /** The body's text as received (it parses to `body`): stored as is, not serialised again. */
    bodyText?: string;
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

export function createHookHandler(options: HookHandlerOptions) {
  const limit = options.limitBytes ?? DEFAULT_LIMIT_BYTES;
  // Never below one body at the limit: a lone delivery the body limit admits is always read.
  const readingLimit = Math.max(options.readingLimitBytes ?? DEFAULT_READING_LIMIT_BYTES, limit);
  const retryAfter = String(options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS);
  const handled = new Set(options.handledKinds ?? DEFAULT_HANDLED_KINDS);
  const now = options.now ?? Date.now;
  const verifier = createDeliveryVerifier(options.verify);
  /** Bytes of the bodies being read or handled now, all requests together. */
  let reading = 0;

  const handleHook = (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const header: Header = (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const answer = (
      status: number,
      outcome: DeliveryOutcome,
      body: Record<string, unknown>,
      extra: { kind?: string; id?: string; error?: unknown; reason?: string } = {},
    ) => {
      const json = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(json),
      });
      res.end(json);
      options.onOutcome?.(outcome, { status, ackMs: performance.now() - started, ...extra });
    };
    /** Answers without reading (the rest of) the body: the connection closes once the answer is out. */
    const refuseUnread = (status: number, outcome: DeliveryOutcome, message: string) => {
      res.setHeader('connection', 'close');
      if (status === 503) res.setHeader('retry-after', retryAfter);
      answer(status, outcome, { message }, status === 503 ? { reason: message } : {});
      res.once('finish', () => req.destroy());
    };
    const tooLarge = () => refuseUnread(413, 'too_large', `body too large (limit ${limit} bytes)`);

    // What the headers settle is settled before a byte of the body is read: a caller without the
    // token costs no memory, however large or slow its body.
    if (!verifier.headersPass(header)) return refuseUnread(401, 'unauthorized', 'unauthorized');
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return tooLarge();
    let held = Number.isFinite(declared) ? declared : 0;
    if (reading + held > readingLimit)
      return refuseUnread(503, 'overloaded', overloadedMessage(readingLimit));
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
        tooLarge();
        return;
      }
      // A body without a declared length counts as it arrives.
      if (size > held) {
        reading += size - held;
        held = size;
        if (reading > readingLimit) {
          over = true;
          refuseUnread(503, 'overloaded', overloadedMessage(readingLimit));
          return;
        }
      }
      chunks.push(chunk);
    });
    req.on('error', () => undefined); // a client that goes away mid-body: nothing to answer
    req.on('end', () => {
      if (over) return;
      const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      void finish(raw).catch((error: unknown) => {
        if (!res.headersSent) answer(500, 'error', { message: 'internal error' }, { error });
      });
    });

    async function finish(raw: Buffer): Promise<void> {
      // The signature, when one is configured, needs the body (as text only then). Verified before
      // parsing: an unauthenticated caller learns nothing about what we accept.
      if (verifier.readsBody && !(await verifier.verify(header, () => raw.toString('utf8')))) {
        return answer(401, 'unauthorized', { message: 'unauthorized' });
      }
      const event = header('x-gitlab-event');
      const parsed = parseDelivery(event, raw);
      if (!parsed.ok) return answer(400, 'bad_request', { message: parsed.message });
      if (!handled.has(parsed.kind)) {
        return answer(202, 'ignored', { message: 'ignored', kind: parsed.kind }, { kind: parsed.kind });
      }
      let stored: { id: string; duplicate: boolean };
      try {
        stored = await options.inbox.accept({
          key: parsed.key,
          kind: parsed.kind,
          receivedAt: now(),
          headers: { 'x-gitlab-event': parsed.event },
          body: parsed.body,
          bodyText: parsed.text,
        });
      } catch (error) {
        // Not persisted means not accepted: say so, so nobody believes it will be processed.
        res.setHeader('retry-after', retryAfter);
        if (isInboxFull(error)) {
          const reason = `inbox full: ${error.message}`;
          return answer(503, 'inbox_full', { message: reason }, { kind: parsed.kind, reason });
        }
        return answer(
          503,
          'error',
          { message: 'could not persist the delivery; try again' },
          { kind: parsed.kind, error },
        );
      }
      if (stored.duplicate) {
        return answer(
          202,
          'duplicate',
          { message: 'duplicate', id: stored.id },
          { kind: parsed.kind, id: stored.id },
        );
      }
      answer(202, 'accepted', { message: 'accepted', id: stored.id }, { kind: parsed.kind, id: stored.id });
      options.onAccepted?.({ id: stored.id, kind: parsed.kind, body: parsed.body });
    }
  };
  /** Bytes of bodies being read or handled now (for tests and metrics). */
  return Object.assign(handleHook, { readingBytes: () => reading });
}

function overloadedMessage(limit: number): string {
  return `too many deliveries being read at once (over ${limit} bytes); try again later`;
}

/** The store's back-pressure (StateError `inbox_full`), told apart from a failed write. */
function isInboxFull(error: unknown): error is Error {
  return error instanceof Error && (error as { code?: unknown }).code === 'inbox_full';
}
