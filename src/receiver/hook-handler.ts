/**
 * POST /hooks on the lean path: node's own request and response, no middleware stack. Real servers
 * wait only 10 s and retry a slow delivery, so the handler does the least that makes a delivery safe
 * (verify, parse, persist) and answers; it never calls the API. Measured: express with
 * `express.json()` reaches about 0.3x of a bare node:http server on this route (issue 4), so this
 * route bypasses express and everything else stays on express.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseDelivery, KNOWN_KINDS } from './parse-delivery.ts';
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

export type DeliveryOutcome =
  'accepted' | 'duplicate' | 'ignored' | 'unauthorized' | 'bad_request' | 'too_large' | 'error';

export interface HookHandlerOptions {
  verify: VerifyOptions;
  inbox: Inbox;
  /** Body limit in bytes. Default 1 MiB. */
  limitBytes?: number;
  /** Kinds the bot acts on; others are answered 202 `ignored`. Default: every kind but `wiki_page`. */
  handledKinds?: readonly string[];
  /** Called after a delivery is durable and answered, to wake the processing pipeline. */
  onAccepted?: (delivery: AcceptedDelivery) => void;
  /** Called once per delivery with its outcome and timing, for logs and metrics. */
  onOutcome?: (
    outcome: DeliveryOutcome,
    info: { kind?: string; status: number; ackMs: number; id?: string; error?: unknown },
  ) => void;
  now?: () => number;
}

export const DEFAULT_LIMIT_BYTES = 1024 * 1024;
export const DEFAULT_HANDLED_KINDS: readonly string[] = KNOWN_KINDS.filter((k) => k !== 'wiki_page');

export function createHookHandler(options: HookHandlerOptions) {
  const limit = options.limitBytes ?? DEFAULT_LIMIT_BYTES;
  const handled = new Set(options.handledKinds ?? DEFAULT_HANDLED_KINDS);
  const now = options.now ?? Date.now;
  const verifyDelivery = createDeliveryVerifier(options.verify);

  return function handleHook(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    const answer = (
      status: number,
      outcome: DeliveryOutcome,
      body: Record<string, unknown>,
      extra: { kind?: string; id?: string; error?: unknown } = {},
    ) => {
      const json = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(json),
      });
      res.end(json);
      options.onOutcome?.(outcome, { status, ackMs: performance.now() - started, ...extra });
    };
    const tooLarge = () => {
      res.setHeader('connection', 'close');
      answer(413, 'too_large', { message: `body too large (limit ${limit} bytes)` });
      // Stop reading an oversized body: the connection closes once the answer is out.
      res.once('finish', () => req.destroy());
    };

    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return tooLarge();

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
      const header = (name: string) => {
        const value = req.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      // Verify before parsing: an unauthenticated caller learns nothing about what we accept.
      // The body as text only when a signature is checked (the token check does not read it).
      const rawText = () => raw.toString('utf8');
      if (!(await verifyDelivery(header, rawText))) {
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
}
