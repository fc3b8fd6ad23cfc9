/**
 * The load generator of the receiver and Probot benchmarks: wrk (C, one thread, its per-request work
 * a LuaJIT string concatenation), pinned to the load generator's core like this process. autocannon,
 * used before, rewrites or picks each request in JavaScript: on the same machine its do-nothing server
 * reached only 1.9x Probot's rate (issue 15 asks for 2.5x before a run counts), so the ratios
 * measured it rather than the servers; wrk's reached 4.3x. Where wrk is not installed
 * (`scripts/install-wrk.sh`), the benchmarks fall back to autocannon and say so in their results.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Load } from './receiver-driver.ts';

const run = promisify(execFile);

export const hasWrk: boolean = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    // wrk prints its version and exits 1; only a missing binary is a missing wrk.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
})();

const SCRIPTS = new URL('./wrk/', import.meta.url);

/** What each request is: a distinct body per request, or a pool of prepared requests taken in turn. */
export type WrkRequests =
  | { distinct: { template: string; headers: Record<string, string> } }
  | { pool: { headers: Record<string, string>; body: string }[] };

let runs = 0;

/** `connections` connections for `seconds` against `url`; the figures as the benchmarks report them. */
export async function wrkLoad(options: {
  url: string;
  connections: number;
  seconds: number;
  requests: WrkRequests;
}): Promise<Load> {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-bench-wrk-'));
  try {
    const env: Record<string, string> = { ...process.env } as Record<string, string>;
    let script: string;
    if ('distinct' in options.requests) {
      const { template, headers } = options.requests.distinct;
      env.HOOKBOT_WRK_TEMPLATE = path.join(dir, 'template');
      env.HOOKBOT_WRK_HEADERS = path.join(dir, 'headers');
      env.HOOKBOT_WRK_RUN = `${process.pid}-${++runs}-${Date.now()}`;
      writeFileSync(env.HOOKBOT_WRK_TEMPLATE, template);
      writeFileSync(env.HOOKBOT_WRK_HEADERS, headerLines(headers).join('\n'));
      script = new URL('distinct-bodies.lua', SCRIPTS).pathname;
    } else {
      env.HOOKBOT_WRK_POOL = path.join(dir, 'pool');
      const lines = options.requests.pool.map(
        ({ headers, body }) => `${headerLines(headers).join('\t')}\t\t${body.replace(/[\r\n]/g, ' ')}`,
      );
      writeFileSync(env.HOOKBOT_WRK_POOL, `${lines.join('\n')}\n`);
      script = new URL('request-pool.lua', SCRIPTS).pathname;
    }
    const args = ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--timeout', '10s'];
    const { stdout } = await run('wrk', [...args, '--latency', '-s', script, options.url], {
      env,
      maxBuffer: 1 << 20,
    });
    return parseWrkOutput(stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function headerLines(headers: Record<string, string>): string[] {
  return Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
}

/**
 * wrk's report as a Load. Requests that failed at the socket (connect, read, write, timeout) count
 * with the non-2xx answers: neither is an answered delivery.
 */
export function parseWrkOutput(text: string): Load {
  const number = (pattern: RegExp): number => {
    const match = pattern.exec(text);
    if (!match) throw new Error(`wrk's output has no ${pattern.source}:\n${text}`);
    return Number(match[1]);
  };
  const total = number(/(\d+) requests in /);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1];
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const failed =
    Number(non2xx ?? 0) + (socket ? socket.slice(1).reduce((sum, count) => sum + Number(count), 0) : 0);
  return {
    rps: number(/Requests\/sec:\s+([\d.]+)/),
    answered: total - Number(non2xx ?? 0),
    p50: latencyMs(text, '50%'),
    p99: latencyMs(text, '99%'),
    non2xx: failed,
  };
}

/** A percentile of wrk's latency distribution (`--latency`), in milliseconds. */
function latencyMs(text: string, quantile: string): number {
  const match = new RegExp(`^\\s*${quantile}\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(text);
  if (!match) throw new Error(`wrk's output has no ${quantile} latency:\n${text}`);
  const value = Number(match[1]);
  const scale = { us: 0.001, ms: 1, s: 1000 }[match[2] as 'us' | 'ms' | 's'];
  return Number((value * scale).toFixed(3));
}
