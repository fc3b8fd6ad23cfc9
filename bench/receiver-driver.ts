/**
 * What the receiver and Probot benchmarks share: the ~4 KB merge request payload, a server of
 * bench/receiver-server.ts in its own process on its own core (pinning.ts), and one measured round
 * against it (a warm-up, then the load, then the server's own figures, printed as it stops).
 */
import type autocannon from 'autocannon';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onServerCore } from './pinning.ts';

export type ServerMode = 'hookbot' | 'hookbot-pg' | 'bare' | 'durable-floor' | 'noop' | 'floor' | 'probot';

/** Where each request's distinct part goes: autocannon's `idReplacement` placeholder. */
export const ID_PLACEHOLDER = '[<id>]';

/**
 * The merge request fixture padded to about 4 KB, its title holding `ID_PLACEHOLDER`. autocannon
 * (`idReplacement`) puts a distinct id there in each request: every body is distinct, so every
 * delivery is persisted, at a cost to the load generator of one native replace per request. The
 * earlier loads rewrote each body in a `setupRequest` callback, which made the load generator the
 * limit (issue 15).
 */
export function payloadTemplate(): string {
  const base = JSON.parse(
    readFileSync(new URL('../test/fixtures/hooks/merge_request.json', import.meta.url), 'utf8'),
  );
  base.object_attributes.title = `bench ${ID_PLACEHOLDER}`;
  base.object_attributes.description = 'x'.repeat(4096 - JSON.stringify(base).length - 40);
  return JSON.stringify(base);
}

/** Request `n`'s body, for loads that build their own (paced load, pre-signed Probot bodies). */
export function payloadFor(template: string, n: number): string {
  return template.replace(ID_PLACEHOLDER, `n${n}`);
}

/** autocannon's figures of one load, as the benchmarks report them. */
export interface Load {
  rps: number;
  answered: number;
  p50: number;
  p99: number;
  non2xx: number;
}

export function loadOf(result: autocannon.Result): Load {
  return {
    rps: result.requests.average,
    answered: result['2xx'],
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
  };
}

/** Where tsconfig.bench.json puts the compiled receiver server (and what it imports). */
const COMPILED_SERVER = 'node_modules/.cache/hookbot-bench/bench/receiver-server.js';
let compiled = false;

/**
 * The receiver server as production runs code: compiled by tsc (the image runs `dist/`), not
 * through tsx, whose transform adds work per request (a `__name` call for each closure it creates:
 * about 2% of the hook route's CPU in a profile). Compiled once per benchmark run, fresh from the
 * sources (about 15 s).
 */
function compiledServer(): string {
  if (!compiled) {
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.bench.json'], {
      stdio: 'inherit',
    });
    compiled = true;
  }
  return COMPILED_SERVER;
}

/**
 * One round: starts the server, warms it up for 2 s, has it start its own counts afresh (SIGUSR2),
 * runs `load` for `seconds`, stops it (SIGTERM) and returns the load's figures with everything the
 * server printed (its commit timings and CPU time: receiver-server.ts).
 */
export async function measureRound(
  mode: ServerMode,
  load: (port: number, seconds: number) => Promise<Load>,
  seconds: number,
): Promise<{ load: Load; output: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), `hookbot-bench-${mode}-`));
  const [command, args] = onServerCore(process.execPath, [
    ...(process.env.BENCH_SERVER_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
    compiledServer(),
    mode,
    dir,
  ]);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let text = '';
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = /PORT (\d+)/.exec(text);
        if (match) resolve(Number(match[1]));
      });
      child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
    });
    await load(port, 2); // warm-up: JIT, file handles, journal
    child.kill('SIGUSR2');
    const result = await load(port, seconds);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    return { load: result, output: text };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The value at quantile `q` (0.5, 0.99) of ascending `sorted`; NaN when it is empty. */
export const percentile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN;
