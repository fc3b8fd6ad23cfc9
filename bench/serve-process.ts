/**
 * `hookbot serve` as a process against a sandbox, as the hook-to-action and memory benchmarks run
 * it: a config with no debounce and only the delivery-driven work (the sweeps that would re-read
 * items on their own are off), the rules folder given, logs at warn. Resolves once it prints where
 * it receives hooks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export interface ServeProcess {
  child: ChildProcess;
  hookUrl: string;
  /** The server's base URL (`/status.json`, `/metrics` hang off it). */
  base: string;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export async function startServeProcess(options: {
  /** Node arguments before `serve`: `['bin/hookbot.js']`, or flags and `dist/cli/run.js`. */
  entry: readonly string[];
  dir: string;
  rulesDir: string;
  apiUrl: string;
  token: string;
  secret: string;
  /** Extra lines under `state:` (e.g. `dedup_ttl_ms: 1000`). */
  stateLines?: readonly string[];
  /** Extra environment (e.g. `HOOKBOT_DATABASE_URL` for replicas). */
  env?: Record<string, string>;
}): Promise<ServeProcess> {
  const config = path.join(options.dir, 'config.yml');
  writeFileSync(
    config,
    [
      'pipeline:',
      '  debounce_ms: 0',
      ...(options.stateLines?.length ? ['state:', ...options.stateLines.map((line) => `  ${line}`)] : []),
      'scheduler:',
      '  sweeps:',
      '    reconcile: { enabled: false }',
      '    rules: { enabled: false }',
      '    merge_watch: { enabled: false }',
      '    hook_check: { enabled: false }',
      '',
    ].join('\n'),
  );
  const child = spawn(process.execPath, [...options.entry, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOOKBOT_IN_DOCKER: '0',
      HOOKBOT_CONFIG: config,
      HOOKBOT_API_URL: options.apiUrl,
      HOOKBOT_API_TOKEN: options.token,
      HOOKBOT_WEBHOOK_SECRET: options.secret,
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: options.rulesDir,
      HOOKBOT_STATE: path.join(options.dir, 'state', 'hookbot.json'),
      HOOKBOT_LOG_LEVEL: 'warn',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const hookUrl = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /(http:\/\/127\.0\.0\.1:\d+\/hooks)/.exec(text);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`hookbot serve exited with ${code}`)));
  });
  return {
    child,
    hookUrl,
    base: hookUrl.slice(0, -'/hooks'.length),
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
