/**
 * nock for the API client's unit tests: no real network, and a test fails on any request that no
 * interceptor expected or any interceptor that no request used.
 */
import nock from 'nock';
import { afterEach, beforeEach, expect } from 'vitest';
import { createClient, type ClientOptions } from '../../src/api/client.ts';

export const BASE = 'http://git.test';
export const API = `${BASE}/api/v3`;
export const TOKEN = 'test-token-0123456789';

export function useNock(): void {
  const unexpected: string[] = [];
  // Requests to loopback are real servers a test started on purpose (nock.enableNetConnect('127.0.0.1')).
  const onNoMatch = (req: { method?: string; path?: string; hostname?: string }) => {
    const host = req.hostname ?? '';
    if (!host.startsWith('127.0.0.1')) unexpected.push(`${req.method} ${req.path}`);
  };
  beforeEach(() => {
    nock.disableNetConnect();
    unexpected.length = 0;
    nock.emitter.on('no match', onNoMatch);
  });
  afterEach(() => {
    nock.emitter.removeListener('no match', onNoMatch);
    const pending = nock.pendingMocks();
    nock.cleanAll();
    nock.enableNetConnect();
    expect(unexpected, 'requests no interceptor expected').toEqual([]);
    expect(pending, 'interceptors no request used').toEqual([]);
  });
}

/** An API scope that insists on the token header, as every client call must send it. */
export function api(headers: Record<string, string> = { 'private-token': TOKEN }) {
  return nock(API, { reqheaders: headers, badheaders: ['sudo'] });
}

/** A scope for calls that must carry `SUDO`. */
export function apiAs(sudo: string) {
  return nock(API, { reqheaders: { 'private-token': TOKEN, sudo } });
}

export function testClient(options: Partial<ClientOptions> = {}) {
  return createClient({
    baseUrl: BASE,
    token: TOKEN,
    retry: { limit: 2, baseDelayMs: 1, maxDelayMs: 5 },
    ...options,
  });
}

/** A helper for list endpoints: drains an async iterable. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
