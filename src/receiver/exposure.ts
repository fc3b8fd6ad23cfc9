/**
 * Who can reach the ops routes. On loopback, only this machine; beyond it (0.0.0.0 in a container,
 * a LAN address), whoever reaches the port: without authentication they would read rule decisions,
 * confidential titles and planned comments. So listening beyond loopback without authentication
 * is refused unless the operator says it is meant (`server.public_ops`).
 */
import { isIP } from 'node:net';

export interface ExposureSettings {
  /** The interface the server listens on (`server.host`). */
  host: string;
  /** `server.status_auth` is set. */
  authenticated: boolean;
  /** `server.public_ops`: open ops routes beyond loopback are meant. */
  publicOps: boolean;
  /**
   * Why the host is what it is, when the caller knows (`HOOKBOT_HOST sets it`, or the container
   * default and what detected the container): the refusal says it, so the fix is not a guess.
   */
  hostOrigin?: string;
}

export function isLoopbackHost(host: string): boolean {
  const name = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) === 4) return name.startsWith('127.');
  if (name.startsWith('::ffff:')) return name.slice(7).startsWith('127.');
  return name === '::1';
}

/** Why the bot must not start with these settings, or undefined. */
export function exposureProblem(settings: ExposureSettings): string | undefined {
  if (settings.authenticated || settings.publicOps || isLoopbackHost(settings.host)) return undefined;
  return [
    `server.host is ${settings.host}, beyond loopback, and server.status_auth is not set:`,
    'the status page, /metrics and /explain would show rule decisions, confidential titles and',
    'planned comments to anyone who reaches the port.',
    ...(settings.hostOrigin ? [`It is ${settings.host} because ${settings.hostOrigin}.`] : []),
    'Set server.status_auth (or HOOKBOT_STATUS_USERNAME and HOOKBOT_STATUS_PASSWORD), or listen on',
    'loopback only (HOOKBOT_HOST=127.0.0.1, or server.host), or, if a proxy or network policy guards',
    'the port, set server.public_ops: true (HOOKBOT_ALLOW_PUBLIC_OPS=true).',
  ].join(' ');
}

/** The warning to log when public_ops opens them on purpose, or undefined. */
export function exposureWarning(settings: ExposureSettings): string | undefined {
  if (settings.authenticated || isLoopbackHost(settings.host)) return undefined;
  return `server.public_ops is true: the status page, /metrics and /explain are open to anyone who reaches ${settings.host}`;
}
