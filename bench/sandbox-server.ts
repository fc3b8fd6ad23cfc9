/**
 * A server for the sandbox benchmark, in its own process (pinned to the server's core by the
 * benchmark): `sandbox <checkout>` runs the sandbox of that checkout (this one, or an older one beside
 * it for a side-by-side run) in memory, as the tests do; `noop` answers every request with `{}` after
 * reading its body: the ceiling of this load generator. Prints `READY <url> <import ms> <start ms>`
 * once listening; SIGTERM closes it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [mode = 'sandbox', checkout = path.resolve(import.meta.dirname, '..')] = process.argv.slice(2);

if (mode === 'noop') {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  server.listen(0, '127.0.0.1', () => {
    console.log(`READY http://127.0.0.1:${(server.address() as AddressInfo).port} 0 0`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
} else {
  const t0 = performance.now();
  const module = (await import(pathToFileURL(path.join(checkout, 'src/sandbox/index.ts')).href)) as {
    startSandbox(options: Record<string, unknown>): Promise<{ url: string; close(): Promise<void> }>;
  };
  const t1 = performance.now();
  const sandbox = await module.startSandbox({ adminToken: 'bench-admin-token', seed: 'empty' });
  const t2 = performance.now();
  console.log(`READY ${sandbox.url} ${(t1 - t0).toFixed(1)} ${(t2 - t1).toFixed(1)}`);
  process.on('SIGTERM', () => {
    void sandbox.close().then(() => process.exit(0));
  });
}
