/**
 * From raw bytes to a delivery the bot can keep: valid UTF-8, a JSON object, an `X-Gitlab-Event`
 * header and an `object_kind`. Every refusal names its reason; the handler turns it into a 400.
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';

export type ParsedDelivery =
  | {
      ok: true;
      event: string;
      kind: string;
      body: Record<string, unknown>;
      /** The body's bytes as received, a leading byte order mark dropped (they parse to `body`). */
      bytes: Buffer;
      key: string;
    }
  | { ok: false; message: string };

export function parseDelivery(event: string | undefined, raw: Buffer): ParsedDelivery {
  // Checked natively, then decoded: cheaper than a fatal TextDecoder on the hook route.
  if (!isUtf8(raw)) return { ok: false, message: 'body is not valid UTF-8' };
  // A byte order mark is dropped, as a decoder does by default (it is not part of the JSON).
  const bom = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf;
  const bytes = bom ? raw.subarray(3) : raw;
  const text = bytes.toString('utf8');
  // Real payloads nest a few levels; a body nested deeper cannot be stored (serialising it again would
  // exhaust the stack), so it is refused here as bad input rather than failing later as a 503.
  if (nestedTooDeep(text)) return { ok: false, message: `body is nested more than ${MAX_DEPTH} levels deep` };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, message: 'body is not valid JSON' };
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, message: 'body must be a JSON object' };
  }
  if (!event) return { ok: false, message: 'missing X-Gitlab-Event header' };
  const kind = (body as Record<string, unknown>).object_kind;
  if (typeof kind !== 'string' || kind.length === 0) return { ok: false, message: 'missing object_kind' };
  return {
    ok: true,
    event,
    kind,
    body: body as Record<string, unknown>,
    bytes,
    key: deliveryKey(event, bytes),
  };
}

/**
 * Real servers send no delivery id, and retry a slow delivery with the same body: the content is the
 * identity. Same event header and same bytes mean the same delivery. Hashed from the received bytes
 * (the UTF-8 of the text), not the decoded text: hashing a string encodes it to UTF-8 again.
 */
export function deliveryKey(event: string, body: Buffer | string): string {
  return createHash('sha256').update(event).update('\0').update(body).digest('hex');
}

export const MAX_DEPTH = 64;

/** Whether `[` and `{` nest deeper than MAX_DEPTH outside strings. */
function nestedTooDeep(text: string): boolean {
  // Nesting deeper than MAX_DEPTH needs more than MAX_DEPTH opening brackets: counting them with
  // indexOf (native) settles a real payload (a few dozen) without the character-by-character scan.
  return openingBrackets(text, MAX_DEPTH + 1) > MAX_DEPTH && nestingDepth(text) > MAX_DEPTH;
}

/** The deepest nesting of `[` and `{` outside strings, stopping as soon as it passes the limit. */
function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) max = depth;
      if (max > MAX_DEPTH) return max;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** How many `{` and `[` the text holds, counting no further than `stopAt`. */
function openingBrackets(text: string, stopAt: number): number {
  let count = 0;
  for (const bracket of ['{', '[']) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1))
      if (++count >= stopAt) return count;
  }
  return count;
}
