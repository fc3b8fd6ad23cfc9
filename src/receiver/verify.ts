/**
 * Is a delivery from our server? Real servers send the hook's secret in plain text in
 * `X-Gitlab-Token` (no signature, server-facts.md). Deployments behind a signing proxy (and the
 * sandbox, optionally) add an HMAC-SHA256 of the raw body, verified with @octokit/webhooks-methods.
 * Every configured check must pass; the caller answers one 401 whichever failed.
 */
import { verify as verifyHmac } from '@octokit/webhooks-methods';
import { createHash, timingSafeEqual } from 'node:crypto';

export interface VerifyOptions {
  /** The shared secret expected in `X-Gitlab-Token`. Undefined only when running open (explicitly). */
  token?: string | undefined;
  /** HMAC-SHA256 of the raw body, `sha256=<hex>` in `header` (default `x-hookbot-signature-256`). */
  signature?: { secret: string; header?: string } | undefined;
}

export const DEFAULT_SIGNATURE_HEADER = 'x-hookbot-signature-256';

/** Compares in constant time whatever the lengths (hashing first hides the length too). */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), digestOfExpected(expected));
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

// The expected secret is the same on every delivery: its digest is computed once, not per request.
let cachedSecret: string | undefined;
let cachedDigest: Buffer = Buffer.alloc(0);
function digestOfExpected(expected: string): Buffer {
  if (expected !== cachedSecret) {
    cachedDigest = sha256(expected);
    cachedSecret = expected;
  }
  return cachedDigest;
}

export async function verifyDelivery(
  header: (name: string) => string | undefined,
  rawBody: string | (() => string),
  options: VerifyOptions,
): Promise<boolean> {
  let ok = true;
  if (options.token !== undefined) {
    ok = sameSecret(header('x-gitlab-token') ?? '', options.token) && ok;
  }
  if (options.signature) {
    const given = header((options.signature.header ?? DEFAULT_SIGNATURE_HEADER).toLowerCase());
    let valid = false;
    if (given && /^sha256=[0-9a-f]{64}$/i.test(given)) {
      try {
        const text = typeof rawBody === 'string' ? rawBody : rawBody();
        valid = await verifyHmac(options.signature.secret, text, given);
      } catch {
        valid = false;
      }
    }
    ok = valid && ok;
  }
  return ok;
}
