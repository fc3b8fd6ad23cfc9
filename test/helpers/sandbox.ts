/**
 * End-to-end helpers: a real sandbox on a random loopback port, and a plain `fetch` caller that
 * shows exactly what went over the wire (status, headers, parsed body).
 */
import { afterAll, beforeAll } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/server.ts';

export interface CallOptions {
  token?: string | null;
  query?: Record<string, string | number | boolean>;
  /** Sent as JSON unless `form` is set. */
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** Raw body text (e.g. malformed JSON); sent with `Content-Type: application/json`. */
  raw?: string;
}

export interface CallResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export type Caller = <T = any>(method: string, path: string, options?: CallOptions) => Promise<CallResult<T>>;

export function caller(sb: Sandbox, defaultToken: string): Caller {
  return async (method, path, options = {}) => {
    const url = new URL(`${sb.apiUrl}${path}`);
    for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token === undefined ? defaultToken : options.token;
    if (token !== null) headers['private-token'] = token;
    let body: string | undefined;
    if (options.raw !== undefined) {
      headers['content-type'] = 'application/json';
      body = options.raw;
    } else if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    } else if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const response = await fetch(url, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text.length ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed as never, text };
  };
}

/** Starts one sandbox for a test file; `ctx().call` talks to it as root. */
export function useSandbox(options: SandboxOptions = {}) {
  let sb: Sandbox | undefined;
  let call: Caller | undefined;
  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'root-token-for-tests', hookTimeoutMs: 2_000, ...options });
    call = caller(sb, sb.adminToken);
  });
  afterAll(async () => {
    await sb?.close();
  });
  return () => ({ sb: sb!, call: call!, db: sb!.ctx.db, ctx: sb!.ctx });
}
