/**
 * One HTTP server, two paths: `POST <hookPath>` goes straight to the lean hook handler; every other
 * request (health, readiness, explain, metrics, status page) goes to an express app.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceiverServerOptions {
  hookPath: string;
  hookHandler: (req: IncomingMessage, res: ServerResponse) => void;
  /** Everything else (an express app is such a function). */
  app: (req: IncomingMessage, res: ServerResponse) => void;
}

export function createReceiverServer(options: ReceiverServerOptions): Server {
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const path = url.includes('?') ? url.slice(0, url.indexOf('?')) : url;
    if (path === options.hookPath && req.method === 'POST') options.hookHandler(req, res);
    else options.app(req, res);
  });
  // Real servers wait 10 s for an answer; nothing we do should take longer than a fraction of that.
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;
  return server;
}

export async function listen(
  server: Server,
  port: number,
  host: string,
): Promise<{ url: string; port: number }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { url: `http://${shown}:${address.port}`, port: address.port };
}
