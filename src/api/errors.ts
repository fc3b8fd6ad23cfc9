/**
 * One error type for everything the server (or the way to it) can answer badly.
 * It names the call (method, route, status) and the server's own words, never a token.
 */

/** The body of a v3 error: `{"message": "..."}`, `{"error": "title is missing"}` or per-field `{"message": {"color": ["..."]}}`. */
export type ServerMessage = string | Record<string, unknown>;

export type ApiErrorKind =
  | 'bad_request' // 400: missing or invalid parameter
  | 'unauthorized' // 401
  | 'forbidden' // 403
  | 'not_found' // 404
  | 'not_allowed' // 405: e.g. merging a closed, merged or WIP merge request
  | 'not_acceptable' // 406: e.g. cancel-merge on an MR not set to merge when build succeeds
  | 'conflict' // 409: e.g. a label that exists, a sha that does not match the head
  | 'unprocessable' // 422
  | 'rate_limited' // 429
  | 'server' // 5xx
  | 'network' // no answer at all: refused, reset, DNS
  | 'timeout' // no answer in time
  | 'invalid_response' // an answer we could not understand (not JSON, wrong shape)
  | 'too_large' // an answer longer than the call's byte bound (`maxBytes`): not read past it
  | 'http'; // anything else

export interface ApiErrorDetails {
  status: number | undefined;
  method: string;
  /** The route template, e.g. `/projects/:id/merge_requests/:merge_request_id/merge`. */
  route: string;
  /** The concrete path that was called (no query string, so never a token). */
  path: string;
  serverMessage?: ServerMessage | undefined;
  kind: ApiErrorKind;
  /** True when the request may have taken effect although we saw no success (timeout or 5xx on a non-idempotent call). */
  ambiguous?: boolean;
  cause?: unknown;
  /** Values to blank out of the message wherever they appear (the client's token). */
  secrets?: readonly string[];
  /** The answer's headers, for callers that must tell a missing route from a missing item (`Allow`). */
  responseHeaders?: Record<string, string | string[] | undefined>;
  /** Which key held the server's words: grape's unknown-route answer uses `error`, the API's own errors `message`. */
  messageKey?: 'message' | 'error';
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number | undefined;
  readonly method: string;
  readonly route: string;
  readonly path: string;
  readonly serverMessage: ServerMessage | undefined;
  readonly kind: ApiErrorKind;
  readonly ambiguous: boolean;
  readonly responseHeaders: Record<string, string | string[] | undefined>;
  readonly messageKey: 'message' | 'error' | undefined;

  constructor(details: ApiErrorDetails) {
    super(
      redactSecrets(describe(details), details.secrets),
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.status = details.status;
    this.method = details.method;
    this.route = details.route;
    this.path = details.path;
    this.serverMessage =
      typeof details.serverMessage === 'string'
        ? redactSecrets(details.serverMessage, details.secrets)
        : details.serverMessage;
    this.kind = details.kind;
    this.ambiguous = details.ambiguous ?? false;
    this.responseHeaders = details.responseHeaders ?? {};
    this.messageKey = details.messageKey;
  }

  /** Per-field validation messages (`{"message": {"color": ["must be a valid color code"]}}`), if any. */
  get fieldErrors(): Record<string, string[]> | undefined {
    const m = this.serverMessage;
    if (m === undefined || typeof m === 'string') return undefined;
    const fields: Record<string, string[]> = {};
    for (const [key, value] of Object.entries(m)) {
      fields[key] = Array.isArray(value)
        ? value.map(String)
        : [typeof value === 'string' ? value : JSON.stringify(value)];
    }
    return fields;
  }

  /** The server's message as one line of text. */
  get serverText(): string | undefined {
    return messageText(this.serverMessage);
  }

  /** Is it worth trying the same call again later (outbox retries)? */
  get retryable(): boolean {
    return (
      ['rate_limited', 'network', 'timeout'].includes(this.kind) ||
      (this.kind === 'server' && this.status !== 500)
    );
  }
}

export function kindOfStatus(status: number): ApiErrorKind {
  switch (status) {
    case 400:
      return 'bad_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 405:
      return 'not_allowed';
    case 406:
      return 'not_acceptable';
    case 409:
      return 'conflict';
    case 422:
      return 'unprocessable';
    case 429:
      return 'rate_limited';
    default:
      return status >= 500 ? 'server' : 'http';
  }
}

/** Pulls the server's words out of an error body: `message` first, then `error` (grape's parameter errors). */
export function serverMessageOf(body: unknown): ServerMessage | undefined {
  if (body === null || typeof body !== 'object')
    return typeof body === 'string' && body.length > 0 ? body.slice(0, 500) : undefined;
  const record = body as Record<string, unknown>;
  for (const key of ['message', 'error']) {
    const value = record[key];
    if (typeof value === 'string') return value;
    if (value !== null && typeof value === 'object') return value as Record<string, unknown>;
  }
  return undefined;
}

export function messageText(message: ServerMessage | undefined): string | undefined {
  if (message === undefined) return undefined;
  if (typeof message === 'string') return message;
  return Object.entries(message)
    .map(
      ([field, errors]) => `${field} ${Array.isArray(errors) ? errors.join(', ') : JSON.stringify(errors)}`,
    )
    .join('; ');
}

function describe(d: ApiErrorDetails): string {
  const what = `${d.method} ${d.path}`;
  const status = d.status === undefined ? d.kind : String(d.status);
  const text = messageText(d.serverMessage);
  const ambiguous = d.ambiguous ? ' (outcome unknown: re-read before acting again)' : '';
  return `${what} failed: ${status}${text ? `: ${text}` : ''}${ambiguous}`;
}

const SECRET_PATTERNS: RegExp[] = [
  /((?:private_token|access_token|token|secret)=)[^&\s"']+/gi,
  /((?:PRIVATE-TOKEN|X-Gitlab-Token|Authorization)["']?\s*[:=]\s*["']?(?:Bearer\s+)?)[^\s"',}]+/gi,
];

/** Removes token values from a text that might end up in a log or an error message. */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let result = text;
  for (const pattern of SECRET_PATTERNS) result = result.replace(pattern, '$1[REDACTED]');
  for (const secret of secrets) if (secret.length >= 4) result = result.split(secret).join('[REDACTED]');
  return result;
}
