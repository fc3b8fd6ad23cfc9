/**
 * What every scenario needs around a bot process: secrets made up per run, a free port it keeps across
 * restarts, a config file, its environment, and its view of itself (`/status.json`: inbox, outbox,
 * parked actions) to tell when it has finished.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import type { StateStats } from '../../src/state/store.ts';
import type { World } from './world.ts';

const made = new Set<string>();

/**
 * A random secret with a recognisable prefix, so a leak is easy to spot and never a false match.
 * Every secret made is remembered: the secrets scenario searches all bot output for each of them.
 */
export function makeSecret(name: string): string {
  const secret = `${name}-${randomBytes(12).toString('hex')}`;
  made.add(secret);
  return secret;
}

export const secretsMade = (): string[] => [...made];

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The sweeps that would re-evaluate issues on their own (reconciliation, scheduled rules) are off:
 * they would hide a lost delivery, and delivery is what the scenarios measure. The retry sweep is the
 * outbox's half of exactly-once, so it stays, on a short interval.
 */
export const DELIVERY_ONLY_CONFIG = [
  'pipeline:',
  '  debounce_ms: 0',
  'scheduler:',
  '  sweeps:',
  '    retries: { every: 1s }',
  '    reconcile: { enabled: false }',
  '    rules: { enabled: false }',
  '    merge_watch: { enabled: false }',
  '    merge_queue: { enabled: false }',
  '    hook_check: { enabled: false }',
  '',
].join('\n');

export function writeConfig(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

export interface BotSettings {
  world: World;
  secret: string;
  rulesDir: string;
  statePath: string;
  port: number;
  configFile?: string;
  /** Default `debug`: every scenario's output is searched for secrets afterwards. */
  logLevel?: string;
  /** Where the bot calls the API (a proxy in front of the sandbox); default the sandbox. */
  apiUrl?: string;
}

export function botEnv(settings: BotSettings): Record<string, string> {
  return {
    HOOKBOT_API_URL: settings.apiUrl ?? settings.world.sandbox.url,
    HOOKBOT_API_TOKEN: settings.world.botToken,
    HOOKBOT_WEBHOOK_SECRET: settings.secret,
    HOOKBOT_PORT: String(settings.port),
    HOOKBOT_RULES: settings.rulesDir,
    HOOKBOT_STATE: settings.statePath,
    HOOKBOT_LOG_LEVEL: settings.logLevel ?? 'debug',
    ...(settings.configFile ? { HOOKBOT_CONFIG: settings.configFile } : {}),
  };
}

export interface BotStatus {
  pending: number;
  stats: StateStats;
  parked: { reason?: string }[];
  rules: { refused: boolean; problems: string[] };
}

/** `headers`: the basic-auth header when the status page has a password. */
export async function readStatus(
  baseUrl: string,
  headers: Record<string, string> = {},
): Promise<BotStatus | undefined> {
  try {
    const res = await fetch(`${baseUrl}/status.json`, { headers });
    if (res.status !== 200) return undefined;
    const data = (await res.json()) as {
      deliveries: { pending: number };
      stats: StateStats;
      parked: { reason?: string }[];
      rules: { refused: boolean; problems: string[] };
    };
    return { pending: data.deliveries.pending, stats: data.stats, parked: data.parked, rules: data.rules };
  } catch {
    return undefined;
  }
}

/** Idle: nothing in the inbox, nothing in the outbox still to do (parked actions are counted apart). */
export const isIdle = (status: BotStatus | undefined): boolean =>
  status !== undefined && status.pending === 0 && status.stats.outbox === 0;
