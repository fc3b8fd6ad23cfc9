/**
 * Hook deliveries as a real server sends them (docs/server-behaviour.md#hook-delivery): `POST` of one JSON object with
 * `X-Gitlab-Event` and the plain-text secret in `X-Gitlab-Token`. Sent with node:http, not fetch, so
 * that every odd case can be produced (invalid UTF-8, a body larger than declared, no content
 * type) and every failure is told apart: an answer, a refused connection, a reset.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

const ISSUE_FIXTURE = JSON.parse(
  readFileSync(new URL('../fixtures/hooks/issue.json', import.meta.url), 'utf8'),
) as Record<string, unknown> & { object_attributes: Record<string, unknown> };

/** The fixture's `Issue Hook` payload, pointed at one issue of the sandbox. */
export function issuePayload(issue: { id: number; iid: number; projectId: number; title?: string }): string {
  const body = structuredClone(ISSUE_FIXTURE);
  body.object_attributes = {
    ...body.object_attributes,
    id: issue.id,
    iid: issue.iid,
    project_id: issue.projectId,
    title: issue.title ?? `Reliability issue ${issue.iid}`,
    action: 'open',
  };
  return JSON.stringify(body);
}

export interface RawDelivery {
  body: Buffer | string;
  headers: Record<string, string>;
  method?: string;
  path?: string;
  /** Send this Content-Length instead of the real one (a lying client); the body is then cut short. */
  declaredLength?: number;
  /** Send the body chunked (no Content-Length). */
  chunked?: boolean;
}

export type SendResult =
  | { kind: 'answer'; status: number; body: string }
  /** Nothing listens: the bot is down. */
  | { kind: 'refused' }
  /** The connection went away before an answer (killed mid-request, or it cut us off). */
  | { kind: 'reset'; code: string };

export function goodHeaders(secret: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-gitlab-event': 'Issue Hook',
    'x-gitlab-token': secret,
  };
}

export function send(
  url: string,
  delivery: RawDelivery,
  agent?: Agent,
  timeoutMs = 15_000,
): Promise<SendResult> {
  const target = new URL(url);
  const body = typeof delivery.body === 'string' ? Buffer.from(delivery.body, 'utf8') : delivery.body;
  const headers: Record<string, string | number> = { ...delivery.headers };
  if (delivery.chunked) headers['transfer-encoding'] = 'chunked';
  else headers['content-length'] = delivery.declaredLength ?? body.length;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: SendResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        method: delivery.method ?? 'POST',
        path: delivery.path ?? target.pathname,
        headers,
        agent: agent ?? false,
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          settle({
            kind: 'answer',
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', (error: NodeJS.ErrnoException) =>
          settle({ kind: 'reset', code: error.code ?? 'error' }),
        );
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') settle({ kind: 'refused' });
      else settle({ kind: 'reset', code: error.code ?? 'error' });
    });
    if (delivery.declaredLength !== undefined && delivery.declaredLength > body.length) {
      // Send less than declared, then hang up: a client that dies mid-body.
      req.write(body, () => req.destroy());
      return;
    }
    req.end(body);
  });
}

export function keepAliveAgent(sockets = 32): Agent {
  return new Agent({ keepAlive: true, maxSockets: sockets });
}

/** The JSON `message` of an answer, or the raw text when it is not JSON. */
export function messageOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    return typeof parsed.message === 'string' ? parsed.message : body;
  } catch {
    return body;
  }
}
