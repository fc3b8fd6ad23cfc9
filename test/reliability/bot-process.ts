/**
 * `hookbot serve` as a real process, the way it runs in production: configured by environment and
 * an optional config file, killed with SIGKILL (a crash) or stopped with SIGTERM. Everything it
 * writes to stdout and stderr is kept, per process and for the whole run, so the secrets scenario can
 * search every line any bot printed.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface BotProcess {
  child: ChildProcess;
  pid: number;
  /** `http://127.0.0.1:PORT/hooks`, once it printed it. */
  hookUrl: string;
  /** `http://127.0.0.1:PORT`. */
  baseUrl: string;
  /** stdout and stderr so far, interleaved as they arrived. */
  output(): string;
  /** False once the process has exited (for whatever reason). */
  alive(): boolean;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL: no handler runs, nothing is flushed: a crash. */
  kill9(): Promise<void>;
  /** SIGTERM, then waits for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

export interface RunOptions {
  env: Record<string, string>;
  args?: string[];
  /** How long to wait for the hooks line. Default 30 s. */
  readyTimeoutMs?: number;
}

/** Every byte any bot process printed during this run (the secrets scenario reads it). */
const transcripts: { label: string; text: () => string }[] = [];

export function allBotOutput(): { label: string; text: string }[] {
  return transcripts.map((t) => ({ label: t.label, text: t.text() }));
}

/** Spawns `hookbot <args>` (default `serve`) and collects its output; does not wait for anything. */
export function spawnHookbot(
  options: RunOptions,
  label = 'hookbot',
): {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
} {
  const child = spawn(process.execPath, ['bin/hookbot.js', ...(options.args ?? ['serve'])], {
    // Only what the bot needs: an inherited HOOKBOT_* variable must not change what is tested.
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOOKBOT_IN_DOCKER: '0',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  child.stdout!.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
  const output = () => {
    // Join lazily and keep the joined text, so repeated polling stays cheap.
    if (chunks.length > 1) chunks.splice(0, chunks.length, chunks.join(''));
    return chunks[0] ?? '';
  };
  transcripts.push({ label, text: output });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output, exited };
}

export async function startBotProcess(options: RunOptions, label = 'hookbot serve'): Promise<BotProcess> {
  const run = spawnHookbot(options, label);
  const { child, output, exited } = run;
  let dead = false;
  void exited.then(() => (dead = true));
  const until = Date.now() + (options.readyTimeoutMs ?? 30_000);
  let hookUrl: string | undefined;
  while (!hookUrl) {
    hookUrl = /(http:\/\/127\.0\.0\.1:\d+\/hooks)/.exec(output())?.[1];
    if (hookUrl) break;
    if (dead) throw new Error(`hookbot serve exited before it was ready:\n${output().slice(-4000)}`);
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`hookbot serve was not ready in time:\n${output().slice(-4000)}`);
    }
    await sleep(25);
  }
  return {
    child,
    pid: child.pid!,
    hookUrl,
    baseUrl: hookUrl.slice(0, -'/hooks'.length),
    output,
    alive: () => !dead,
    exited,
    async kill9() {
      if (!dead) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (!dead) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const { code } = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until `probe` gives a value; throws with `what` after the timeout. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
