/**
 * Is a delivery from our server? Real servers send the hook's secret in plain text in
 * `X-Gitlab-Token` (no signature, docs/server-behaviour.md#hook-delivery). Deployments behind a signing proxy (and the
 * sandbox, optionally) add an HMAC-SHA256 of the raw body, verified with @octokit/webhooks-methods.
 * Every configured check must pass; the caller answers one 401 whichever failed.
 */
import { verify as verifyHmac } from '@octokit/webhooks-methods';
import { hash, timingSafeEqual } from 'node:crypto';

export interface VerifyOptions {
  /** The shared secret expected in `X-Gitlab-Token`. Undefined only when running open (explicitly). */
  token?: string | undefined;
  /** HMAC-SHA256 of the raw body, `sha256=<hex>` in `header` (default `x-hookbot-signature-256`). */
  signature?: { secret: string; header?: string } | undefined;
}

export const DEFAULT_SIGNATURE_HEADER = 'x-hookbot-signature-256';

/** One-shot (no Hash object per call): every delivery's token goes through it. */
const sha256 = (text: string): Buffer => hash('sha256', text, 'buffer');

/** Checks a delivery against the configured secrets. */
export interface DeliveryVerifier {
  /**
   * What the headers alone settle, before a byte of the body is read: the token, and that a
   * signature is there and well formed. A caller that fails this never gets its body read.
   */
  headersPass(header: (name: string) => string | undefined): boolean;
  /** The whole check, body included (the signature, when one is configured). */
  verify(header: (name: string) => string | undefined, rawBody: string | (() => string)): Promise<boolean>;
  /** Whether `verify` needs the body at all (only a signature does). */
  readonly readsBody: boolean;
}

const SIGNATURE_FORMAT = /^sha256=[0-9a-f]{64}$/i;

/**
 * Made once per hook route: the expected token's digest is computed here, not per delivery. Tokens
 * are compared as SHA-256 digests in constant time, whatever their lengths (hashing first hides the
 * length too). `rawBody` is only read (and, given as a function, only decoded) for a signature.
 */
export function createDeliveryVerifier(options: VerifyOptions): DeliveryVerifier {
  const expected = options.token === undefined ? undefined : sha256(options.token);
  const signature = options.signature;
  const signatureHeader = (signature?.header ?? DEFAULT_SIGNATURE_HEADER).toLowerCase();
  const headersPass = (header: (name: string) => string | undefined): boolean => {
    let ok = true;
    if (expected !== undefined) ok = timingSafeEqual(sha256(header('x-gitlab-token') ?? ''), expected) && ok;
    if (signature) ok = SIGNATURE_FORMAT.test(header(signatureHeader) ?? '') && ok;
    return ok;
  };
  return {
    headersPass,
    readsBody: signature !== undefined,
    async verify(header, rawBody) {
      if (!headersPass(header)) return false;
      if (!signature) return true;
      try {
        const text = typeof rawBody === 'string' ? rawBody : rawBody();
        return await verifyHmac(signature.secret, text, header(signatureHeader) ?? '');
      } catch {
        return false;
      }
    },
  };
}
