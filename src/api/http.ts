/**
 * The HTTP core of the v3 client: options normalised once, then every resource file calls
 * `request`, `requestChange` or `paginate` with a route template. Here and only here live
 * authentication, sudo, retries, timeouts, the concurrency limit, error mapping and call logging.
 */
import got, { HTTPError, RequestError, type Got, type OptionsInit, type Response } from 'got';
import pLimit from 'p-limit';
import type { ZodType } from 'zod';
import { ApiError, kindOfStatus, redactSecrets, serverMessageOf } from './errors.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';
export type QueryValue = string | number | boolean | undefined | null | readonly (string | number)[];
export type Sudo = string | number;

/** One finished call, for logs and metrics. `route` is the template, so it is safe as a metric label. */
export interface ApiCall {
  method: HttpMethod;
  route: string;
  path: string;
  status: number | undefined;
  durationMs: number;
  /** 1 for the first try, 2 for the first retry, ... */
  attempt: number;
  error?: string;
}

export interface HttpOptions {
  /** The server's base URL, e.g. `https://git.example.com` (a trailing `/api/v3` is accepted too). */
  baseUrl: string;
  token: string;
  /** `private` sends `PRIVATE-TOKEN` (default); `oauth` sends `Authorization: Bearer`. Never a query parameter. */
  tokenType?: 'private' | 'oauth';
  /** Act as this user (admin tokens only): header `SUDO` on every call unless a call says otherwise. */
  sudo?: Sudo;
  /** Per-attempt timeout. Default 10 s. */
  timeoutMs?: number;
  retry?: {
    /** Retries after the first attempt, for idempotent calls only. Default 3. */
    limit?: number;
    /** First backoff; doubles each retry, with full jitter between half and all of it. Default 500 ms. */
    baseDelayMs?: number;
    maxDelayMs?: number;
  };
  /** Calls in flight at once. Default 8. */
  concurrency?: number;
  /** Items per page asked for when listing. Default 100 (the server's maximum). */
  perPage?: number;
  /** Pages read at most by one listing before it stops (and says so). Default 1000. */
  maxPages?: number;
  /** Called after every attempt: the logging and metrics hook. Paths never contain a token. */
  onCall?: (call: ApiCall) => void;
  userAgent?: string;
}

export interface RequestSpec<T = unknown> {
  method: HttpMethod;
  /** Route template; `:name` segments are filled from `params` and URL-encoded (`group/project` becomes `group%2Fproject`). */
  route: string;
  params?: Record<string, string | number>;
  query?: Record<string, QueryValue>;
  /** Sent as JSON, or as multipart when it is a FormData. */
  body?: Record<string, unknown> | FormData;
  /** Overrides the client's sudo for this call; `null` turns it off. */
  sudo?: Sudo | null;
  /**
   * Whether repeating the call is harmless. Default: true for GET, PUT and DELETE, false for POST.
   * A non-idempotent call is never retried; if it times out or gets a 5xx its error is `ambiguous`.
   */
  idempotent?: boolean;
  /** Validates the answer at the boundary; a mismatch is an `invalid_response` ApiError, not a crash later. */
  schema?: ZodType<T>;
  /**
   * The most bytes of answer read. A longer answer (by its `Content-Length`, or counted as it
   * arrives) is aborted there, never held whole, and is a `too_large` ApiError. Such a call asks for
   * no compression, so the bytes counted are the bytes held.
   */
  maxBytes?: number;
}

/** What a call that may find nothing to do answers: subscribe, star and the like (304 means "already so"). */
export type Change<T> = { changed: true; value: T } | { changed: false };

export interface PageOptions {
  perPage?: number;
  maxPages?: number;
}

export interface RawResponse<T> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
}

export interface Http {
  request<T>(spec: RequestSpec<T>): Promise<T>;
  /** Like `request`, but also hands back the status and headers. */
  requestRaw<T>(spec: RequestSpec<T>): Promise<RawResponse<T>>;
  /** 304 becomes `{ changed: false }` instead of an error. */
  requestChange<T>(spec: RequestSpec<T>): Promise<Change<T>>;
  /** Every item of a list, page by page, following `Link: rel="next"` (or `X-Next-Page`). */
  paginate<T>(spec: RequestSpec<T> & PageOptions): AsyncIterable<T>;
  /** All items of a list collected into an array (bounded by `maxPages`). */
  all<T>(spec: RequestSpec<T> & PageOptions): Promise<T[]>;
  readonly stats: CallStats;
  /** The base API URL, e.g. `http://127.0.0.1:8929/api/v3`. */
  readonly apiUrl: string;
}

export interface CallStats {
  /** Attempts made (a retry counts again): what a benchmark reports as API calls. */
  calls: number;
  byRoute: Map<string, number>;
  reset(): void;
}

const RETRY_STATUSES = new Set([429, 502, 503, 504]);

/** got's promise of a call, as far as a bounded read uses it. */
type BoundedCall = Promise<Response<string>> & {
  on(event: string, listener: (value: never) => void): unknown;
  cancel(): void;
};

export function apiUrlOf(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith('/api/v3') ? trimmed : `${trimmed}/api/v3`;
}

export function fillRoute(route: string, params: Record<string, string | number> = {}): string {
  return route.replace(/:([a-z_]+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined || value === '') throw new TypeError(`route ${route} needs parameter ${name}`);
    // Not encoded by encodeURIComponent, and read as path steps by URL parsers and servers alike:
    // `/projects/.` would ask for the project list, `/projects/..` for something else again.
    if (value === '.' || value === '..')
      throw new TypeError(`route ${route}: parameter ${name} cannot be "${value}"`);
    return encodeURIComponent(String(value));
  });
}

export function createHttp(options: HttpOptions): Http {
  const apiUrl = apiUrlOf(options.baseUrl);
  const origin = new URL(apiUrl).origin;
  const apiPath = new URL(apiUrl).pathname;
  const retryLimit = options.retry?.limit ?? 3;
  const baseDelay = options.retry?.baseDelayMs ?? 500;
  const maxDelay = options.retry?.maxDelayMs ?? 30_000;
  const limit = pLimit(options.concurrency ?? 8);
  const secrets = [options.token];
  const stats: CallStats = {
    calls: 0,
    byRoute: new Map(),
    reset() {
      this.calls = 0;
      this.byRoute.clear();
    },
  };

  const authHeaders: Record<string, string> =
    options.tokenType === 'oauth'
      ? { authorization: `Bearer ${options.token}` }
      : { 'private-token': options.token };

  const client: Got = got.extend({
    prefixUrl: `${apiUrl}/`,
    headers: { ...authHeaders, 'user-agent': options.userAgent ?? 'hookbot', accept: 'application/json' },
    timeout: { request: options.timeoutMs ?? 10_000 },
    responseType: 'text',
    followRedirect: false,
    throwHttpErrors: true,
  });

  function backoff(attempt: number, retryAfterMs: number | undefined): number {
    const exp = Math.min(maxDelay, baseDelay * 2 ** (attempt - 1));
    const jittered = exp / 2 + Math.random() * (exp / 2);
    return Math.min(maxDelay, Math.max(jittered, retryAfterMs ?? 0));
  }

  async function send<T>(spec: RequestSpec<T>, url: string, path: string): Promise<RawResponse<T>> {
    const idempotent = spec.idempotent ?? spec.method !== 'POST';
    const sudo = spec.sudo === null ? undefined : (spec.sudo ?? options.sudo);
    const init: OptionsInit = {
      method: spec.method,
      headers: sudo === undefined ? {} : { sudo: String(sudo) },
      retry: { limit: 0 }, // retries are ours: we decide per call and count every attempt
    };
    const query = toSearchParams(spec.query);
    if (query) init.searchParams = query;
    if (spec.body instanceof FormData) init.body = spec.body;
    else if (spec.body !== undefined) init.json = spec.body;

    if (spec.maxBytes !== undefined) init.decompress = false;

    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      let response: Response<string> | undefined;
      let failure: ApiError | undefined;
      /** Set when the answer passed `maxBytes`: what was seen of its size. */
      let oversize: number | undefined;
      try {
        // got's overloads infer a union here (stream or promise); this call is always the promise of text.
        const call = () => {
          const pending = (url.startsWith('http')
            ? client(url, { ...init, prefixUrl: '' })
            : client(url, init)) as unknown as BoundedCall;
          const max = spec.maxBytes;
          if (max !== undefined) {
            const stop = (seen: number) => {
              oversize ??= seen;
              pending.cancel();
            };
            // The first report comes with the answer's head: `total` is its Content-Length, if any.
            pending.on('downloadProgress', (progress: { transferred: number; total?: number }) => {
              if (progress.total !== undefined && progress.total > max) stop(progress.total);
              else if (progress.transferred > max) stop(progress.transferred);
            });
          }
          return pending;
        };
        response = await limit(call);
      } catch (error) {
        failure =
          oversize === undefined
            ? toApiError(error, spec, path, idempotent)
            : new ApiError({
                status: undefined,
                method: spec.method,
                route: spec.route,
                path,
                kind: 'too_large',
                serverMessage: `the answer passed ${spec.maxBytes} bytes (${oversize} seen), the bound of this call: not read further`,
              });
        response = error instanceof HTTPError ? (error.response as Response<string>) : undefined;
      }
      stats.calls++;
      stats.byRoute.set(
        `${spec.method} ${spec.route}`,
        (stats.byRoute.get(`${spec.method} ${spec.route}`) ?? 0) + 1,
      );
      options.onCall?.({
        method: spec.method,
        route: spec.route,
        path,
        status: response?.statusCode,
        durationMs: performance.now() - started,
        attempt,
        ...(failure ? { error: failure.message } : {}),
      });
      if (!failure && response)
        return {
          status: response.statusCode,
          headers: response.headers,
          body: parseBody(response, spec, path),
        };
      if (!failure)
        throw new ApiError({
          status: undefined,
          method: spec.method,
          route: spec.route,
          path,
          kind: 'network',
        });
      const retryable =
        idempotent &&
        attempt <= retryLimit &&
        (failure.kind === 'network' || failure.kind === 'timeout' || RETRY_STATUSES.has(failure.status ?? 0));
      if (!retryable) throw failure;
      await sleep(backoff(attempt, retryAfterMs(response)));
    }
  }

  function parseBody<T>(response: Response<string>, spec: RequestSpec<T>, path: string): T {
    const text = response.body ?? '';
    let value: unknown = undefined;
    if (text.length > 0) {
      try {
        value = JSON.parse(text);
      } catch {
        throw new ApiError({
          status: response.statusCode,
          method: spec.method,
          route: spec.route,
          path,
          kind: 'invalid_response',
          serverMessage: `answer is not JSON: ${redactSecrets(text.slice(0, 80), secrets)}`,
        });
      }
    }
    if (!spec.schema || response.statusCode === 304) return value as T;
    const parsed = spec.schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const problems = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw new ApiError({
      status: response.statusCode,
      method: spec.method,
      route: spec.route,
      path,
      kind: 'invalid_response',
      serverMessage: `unexpected answer: ${problems}`,
    });
  }

  function toApiError(error: unknown, spec: RequestSpec, path: string, idempotent: boolean): ApiError {
    const base = { method: spec.method, route: spec.route, path, secrets };
    if (error instanceof HTTPError) {
      const status = error.response.statusCode;
      let body: unknown = error.response.body;
      try {
        body = JSON.parse(String(error.response.body));
      } catch {
        // not JSON: keep the text (shortened) as the message
      }
      return new ApiError({
        ...base,
        status,
        kind: kindOfStatus(status),
        serverMessage: serverMessageOf(body),
        ambiguous: !idempotent && status >= 500,
        responseHeaders: error.response.headers,
        messageKey: messageKeyOf(body),
      });
    }
    if (error instanceof RequestError) {
      const timeout = error.name === 'TimeoutError' || error.code === 'ETIMEDOUT';
      // Anything but a timeout or an unreadable answer is the way to the server failing: worth a retry.
      const kind = timeout ? 'timeout' : error.name === 'ParseError' ? 'invalid_response' : 'network';
      // A refused connection never reached the server; anything else on a non-idempotent call may have.
      const ambiguous = !idempotent && error.code !== 'ECONNREFUSED' && error.code !== 'ENOTFOUND';
      return new ApiError({
        ...base,
        status: undefined,
        kind,
        serverMessage: redactSecrets(error.message, secrets),
        ambiguous,
      });
    }
    return new ApiError({
      ...base,
      status: undefined,
      kind: 'network',
      serverMessage: String(error),
      ambiguous: !idempotent,
    });
  }

  async function requestRaw<T>(spec: RequestSpec<T>): Promise<RawResponse<T>> {
    const path = `/${fillRoute(spec.route, spec.params).replace(/^\/+/, '')}`;
    return send(spec, path.slice(1), path);
  }

  async function* paginate<T>(spec: RequestSpec<T> & PageOptions): AsyncIterable<T> {
    const maxPages = spec.maxPages ?? options.maxPages ?? 1000;
    const firstPath = `/${fillRoute(spec.route, spec.params).replace(/^\/+/, '')}`;
    // Either a relative path with our query, or an absolute `Link` URL that carries its own query.
    let target: { url: string; query: Record<string, QueryValue> | undefined } | undefined = {
      url: firstPath.slice(1),
      query: { per_page: spec.perPage ?? options.perPage ?? 100, ...spec.query },
    };
    for (let page = 1; target !== undefined; page++) {
      if (page > maxPages) {
        throw new ApiError({
          status: undefined,
          method: spec.method,
          route: spec.route,
          path: firstPath,
          kind: 'http',
          serverMessage: `stopped after ${maxPages} pages (page cap); narrow the query or raise maxPages`,
        });
      }
      // Paths in errors and call logs are relative to /api/v3 on every page, like the first one.
      const path = target.url.startsWith('http')
        ? new URL(target.url).pathname.slice(apiPath.length)
        : firstPath;
      const pageSpec = { ...spec, query: target.query, schema: undefined } as RequestSpec<unknown>;
      const response = await send<unknown>(pageSpec, target.url, path);
      if (!Array.isArray(response.body)) {
        throw new ApiError({
          status: response.status,
          method: spec.method,
          route: spec.route,
          path,
          kind: 'invalid_response',
          serverMessage: 'expected a list',
        });
      }
      for (const item of response.body) yield spec.schema ? checkItem(spec, path, item) : (item as T);
      const next = nextPage(response.headers, origin);
      if (next === undefined) target = undefined;
      else if (typeof next === 'string') target = { url: next, query: undefined };
      else target = { url: firstPath.slice(1), query: { ...target.query, page: next.page } };
    }
  }

  function checkItem<T>(spec: RequestSpec<T>, path: string, item: unknown): T {
    const parsed = spec.schema!.safeParse(item);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    throw new ApiError({
      status: 200,
      method: spec.method,
      route: spec.route,
      path,
      kind: 'invalid_response',
      serverMessage: `unexpected list item: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}`,
    });
  }

  return {
    apiUrl,
    stats,
    requestRaw,
    async request<T>(spec: RequestSpec<T>): Promise<T> {
      return (await requestRaw(spec)).body;
    },
    async requestChange<T>(spec: RequestSpec<T>): Promise<Change<T>> {
      const response = await requestRaw(spec);
      return response.status === 304 ? { changed: false } : { changed: true, value: response.body };
    },
    paginate,
    async all<T>(spec: RequestSpec<T> & PageOptions): Promise<T[]> {
      const items: T[] = [];
      for await (const item of paginate(spec)) items.push(item);
      return items;
    },
  };
}

/**
 * The next page: the `Link rel="next"` URL when the server sends one (only on our own origin, so a
 * token never follows a link elsewhere), else `X-Next-Page` as a page number, else nothing. Real servers
 * answer some lists (labels, branches) without any pagination headers: that is one page.
 */
function nextPage(
  headers: Record<string, string | string[] | undefined>,
  origin: string,
): string | { page: number } | undefined {
  const link = headers.link;
  const linkText = Array.isArray(link) ? link.join(', ') : link;
  if (linkText) {
    for (const part of linkText.split(',')) {
      const match = /<([^>]+)>\s*;\s*rel="?([^";]+)"?/.exec(part.trim());
      if (match?.[2]?.split(/\s+/).includes('next') && match[1]) {
        // Behind a proxy a server may advertise another origin (http vs https, inner host name). The
        // token must never go there: keep the link's path and query, on the origin we were configured with.
        const url = new URL(match[1], origin);
        return `${origin}${url.pathname}${url.search}`;
      }
    }
    return undefined;
  }
  const nextHeader = headers['x-next-page'];
  const value = Array.isArray(nextHeader) ? nextHeader[0] : nextHeader;
  return value && /^\d+$/.test(value) ? { page: Number(value) } : undefined;
}

function toSearchParams(query: Record<string, QueryValue> | undefined): URLSearchParams | undefined {
  if (!query) return undefined;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) params.set(key, value.join(','));
    else params.set(key, String(value));
  }
  return [...params.keys()].length > 0 ? params : undefined;
}

function retryAfterMs(response: Response<string> | undefined): number | undefined {
  const value = response?.headers['retry-after'];
  if (typeof value !== 'string') return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? Math.min(seconds * 1000, 60_000) : undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function messageKeyOf(body: unknown): 'message' | 'error' | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  if ('message' in body) return 'message';
  return 'error' in body ? 'error' : undefined;
}
