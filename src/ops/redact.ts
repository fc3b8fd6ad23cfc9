/**
 * Keeps secrets out of logs (issue 7: "API tokens, hook secrets and private_token values are
 * redacted everywhere, including error messages and request logs"). Three nets, because each
 * misses what another catches: secret-looking key names at any depth, known secret values
 * (the configured token and hook secret) wherever they appear, and `private_token=...`-style
 * patterns in any text.
 */
import { stdSerializers } from 'pino';

export const REDACTED = '[REDACTED]';

/** Shorter values would blank out ordinary words; real tokens and secrets are far longer. */
export const MIN_SECRET_LENGTH = 4;

/**
 * `token`, `private_token`, `x-gitlab-token`, `privateToken`, `secret`, `webhook_secret`, `password`,
 * `authorization`, `cookie`; not `token_type`, `secret_file` or `tokens_used` (they hold no secret).
 */
const SECRET_KEY = /^(?:[a-z0-9]+[_-])*(?:token|secret|password|passwd|authorization|cookie|set-cookie)$/i;
const SECRET_CAMEL_KEY = /^[a-z][a-zA-Z0-9]*(?:Token|Secret|Password)$/;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) || SECRET_CAMEL_KEY.test(key);
}

/**
 * Text patterns that carry a secret whatever its value. The value part never takes a quote or a
 * backslash, so that applied to a JSON line it cannot eat the end of a string or half an escape.
 */
const SECRET_PATTERNS: readonly [RegExp, string][] = [
  // query and form parameters: ?private_token=..., &access_token=..., secret=...
  [/((?:[a-z_]*token|secret|password)=)[^&\s"'\\]+/gi, `$1${REDACTED}`],
  // header lines in messages: `PRIVATE-TOKEN: x`, `Authorization: Bearer x`, `X-Gitlab-Token=x`
  [
    /((?:private-token|x-gitlab-token|authorization)["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token)\s+)?)[^\s"',}\\]+/gi,
    `$1${REDACTED}`,
  ],
  // credentials in URLs: https://user:password@host
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"'\\]+:)[^\s/@"'\\]+@/gi, `$1${REDACTED}@`],
];

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * One regular expression for a set of secrets, in every form they take in a log line: as is,
 * escaped inside a JSON string, and URL-encoded. The look-behind skips a match that starts right
 * after an unpaired backslash (inside a JSON escape), which replacing would corrupt.
 */
export function secretMatcher(secrets: Iterable<string>): RegExp | undefined {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
    forms.add(encodeURIComponent(secret));
  }
  if (forms.size === 0) return undefined;
  // Longest first, so that a secret containing another is replaced whole.
  const alternatives = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp);
  return new RegExp(`(?<=(?:^|[^\\\\])(?:\\\\\\\\)*)(?:${alternatives.join('|')})`, 'g');
}

/** Removes known secret values and secret-carrying patterns from a text (a message, a stack, a URL). */
export function redactText(text: string, secrets: Iterable<string> | RegExp | undefined = []): string {
  const matcher = secrets instanceof RegExp || secrets === undefined ? secrets : secretMatcher(secrets);
  let result = matcher ? text.replace(matcher, REDACTED) : text;
  for (const [pattern, replacement] of SECRET_PATTERNS) result = result.replace(pattern, replacement);
  return result;
}

const MAX_DEPTH = 12;

/**
 * A copy of `value` with secret-named keys blanked and every string passed through redactText.
 * Errors become plain objects (pino's err serializer shape) so their message and stack are
 * scrubbed too. The caller's objects are never modified.
 */
export function redactValue(
  value: unknown,
  matcher: RegExp | undefined,
  seen = new WeakSet<object>(),
  depth = 0,
): unknown {
  if (typeof value === 'string') return redactText(value, matcher);
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Too deep]';
  seen.add(value);
  try {
    // pino's err serializer gives type, message (with causes), stack and the error's own fields.
    if (value instanceof Error) return copyOf(stdSerializers.err(value), matcher, seen, depth);
    if (Array.isArray(value)) return value.map((item) => redactValue(item, matcher, seen, depth + 1));
    const prototype: unknown = Object.getPrototypeOf(value);
    // Dates, Buffers, URLs and the like serialise themselves; the line-level net still scrubs them.
    if (prototype !== Object.prototype && prototype !== null) return value;
    return copyOf(value, matcher, seen, depth);
  } finally {
    // Only ancestors count as circular: an object met twice side by side is printed twice.
    seen.delete(value);
  }
}

function copyOf(value: object, matcher: RegExp | undefined, seen: WeakSet<object>, depth: number) {
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    copy[key] =
      isSecretKey(key) && item !== undefined && item !== null && item !== ''
        ? REDACTED
        : redactValue(item, matcher, seen, depth + 1);
  }
  return copy;
}
