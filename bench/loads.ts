/**
 * The saturated loads of the receiver, Probot and PostgreSQL benchmarks: 64 connections, each sending
 * its next request as soon as its answer arrives. Driven by wrk where it is installed (wrk.ts says
 * why), else by autocannon; every result names the one used (`load_generator`).
 */
import autocannon from './autocannon.ts';
import { loadOf, payloadTemplate, type Load } from './receiver-driver.ts';
import { hasWrk, wrkLoad } from './wrk.ts';

export const LOAD_GENERATOR: 'wrk' | 'autocannon' = hasWrk ? 'wrk' : 'autocannon';

const CONNECTIONS = 64;

/** Every request a distinct body from `payloadTemplate()`: each delivery is new, none a duplicate. */
export async function distinctBodiesLoad(
  port: number,
  seconds: number,
  headers: Record<string, string>,
): Promise<Load> {
  const url = `http://127.0.0.1:${port}/hooks`;
  const template = payloadTemplate();
  if (hasWrk)
    return wrkLoad({ url, connections: CONNECTIONS, seconds, requests: { distinct: { template, headers } } });
  const options = { url, connections: CONNECTIONS, duration: seconds, method: 'POST' as const };
  return loadOf(await autocannon({ ...options, headers, body: template, idReplacement: true }));
}

/** Prepared requests taken in turn (bodies signed beforehand, for a server that verifies each). */
export async function pooledLoad(
  port: number,
  seconds: number,
  pool: { headers: Record<string, string>; body: string }[],
): Promise<Load> {
  const url = `http://127.0.0.1:${port}/hooks`;
  if (hasWrk) return wrkLoad({ url, connections: CONNECTIONS, seconds, requests: { pool } });
  const options = { url, connections: CONNECTIONS, duration: seconds, method: 'POST' as const };
  return loadOf(await autocannon({ ...options, requests: pool }));
}
