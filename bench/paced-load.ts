/**
 * An open-loop load at a fixed rate: requests leave on a schedule (`rate` per second, evenly spaced)
 * over at most `connections` keep-alive sockets, whether or not earlier answers came back, and each
 * latency is measured from the request's scheduled time, so a server that falls behind is charged
 * for the wait too (no coordinated omission).
 *
 * Why not autocannon's `overallRate`: it lets each connection send its per-second quota back to back
 * at the start of every second and then idle, so the server sees a saturating burst each second, and
 * it back-fills the histogram as if one request were due every millisecond; both measure the burst,
 * not a steady rate.
 */
import { Agent, request, type AgentOptions } from 'node:http';
import { percentile, type Load } from './receiver-driver.ts';

export interface PacedLoadOptions {
  port: number;
  path: string;
  rate: number;
  seconds: number;
  connections: number;
  headers: Record<string, string>;
  /** The body of request `n` (1, 2, ...). */
  body: (n: number) => string;
}

export async function pacedLoad(options: PacedLoadOptions): Promise<Load> {
  const agent = new Agent({
    keepAlive: true,
    maxSockets: options.connections,
    noDelay: true,
  } as AgentOptions);
  const latencies: number[] = [];
  let non2xx = 0;
  let sent = 0;
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  const total = Math.round(options.rate * options.seconds);

  const send = (n: number, due: number) => {
    const body = options.body(n);
    const done = new Promise<void>((resolve) => {
      const req = request(
        {
          agent,
          host: '127.0.0.1',
          port: options.port,
          path: options.path,
          method: 'POST',
          headers: { ...options.headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) non2xx++;
            else latencies.push(performance.now() - due);
            resolve();
          });
        },
      );
      req.on('error', () => {
        non2xx++;
        resolve();
      });
      req.end(body);
    });
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };

  // Every millisecond, send whatever the schedule says is due by now (timers fire late, never early).
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - started;
      // Request n is due at (n - 1) / rate seconds: those due by now number floor(elapsed * rate) + 1.
      const due = Math.min(total, Math.floor((elapsed / 1000) * options.rate) + 1);
      while (sent < due) {
        sent++;
        send(sent, started + ((sent - 1) / options.rate) * 1000);
      }
      if (sent >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  await Promise.all(inFlight);
  agent.destroy();

  const elapsedS = (performance.now() - started) / 1000;
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => Number(percentile(sorted, q).toFixed(2));
  return {
    rps: latencies.length / elapsedS,
    answered: latencies.length,
    p50: at(0.5),
    p99: at(0.99),
    non2xx,
  };
}
