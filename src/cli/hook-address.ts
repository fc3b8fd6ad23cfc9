/**
 * The hook URL to print for a person to paste into the server's project hook settings. The bot
 * knows the address it listens on; on every address (0.0.0.0 or ::, the default in a container)
 * that is no address a server can dial, so the machine's first non-internal IPv4 address stands in
 * (its host name when it has none), said to be a guess. On loopback only this machine can reach it.
 */
import { hostname, networkInterfaces } from 'node:os';

export interface HookAddress {
  /** The URL to paste. */
  url: string;
  /** What to know about it, or undefined when it is the listening address itself. */
  note?: string;
}

const ANY = new Set(['0.0.0.0', '[::]']);
const LOOPBACK = /^(127(\.\d{1,3}){3}|localhost|\[::1\])$/;

function machineAddress(): string {
  for (const addresses of Object.values(networkInterfaces()))
    for (const address of addresses ?? [])
      if (!address.internal && address.family === 'IPv4') return address.address;
  return hostname();
}

export function hookAddress(listening: string, configured?: string): HookAddress {
  if (configured !== undefined) return { url: configured, note: 'hooks.url' };
  const url = new URL(listening);
  if (ANY.has(url.hostname)) {
    const port = url.port;
    url.hostname = machineAddress();
    return {
      url: url.toString(),
      note: `listening on every address, port ${port}: this is this machine's address as it sees it; use the one the server reaches it at (in a container, the host's address and the published port)`,
    };
  }
  if (LOOPBACK.test(url.hostname))
    return {
      url: listening,
      note: 'on loopback, only a server on this machine can deliver here: set HOOKBOT_HOST=0.0.0.0 (server.host) to listen on every address',
    };
  return { url: listening };
}

/**
 * One address written two ways is one address: the host's case, a default port written out and a
 * trailing slash make no other URL.
 */
function sameAddress(a: string, b: string): boolean {
  const normal = (url: string) => {
    try {
      const parsed = new URL(url);
      return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
    } catch {
      return url.replace(/\/+$/, '');
    }
  };
  return normal(a) === normal(b);
}

/**
 * What `serve` (and `start` against a server) prints once it receives hooks: where, which URL the
 * server must call, the pid that takes signals, and what next. With `hooks.url` set to another
 * address than the one this process listens at (a replica on 3101 behind a load balancer at 3100),
 * both are said, and which one the server calls: `hooks.url`, the URL in the projects' hooks.
 */
export function serveBanner(options: {
  hookUrl: string;
  apiUrl: string;
  configuredHookUrl?: string | undefined;
  manageHooks: boolean;
  pid: number;
  /** What keeps the bot from doing what its rules ask, said last (train-warning.ts). */
  warnings?: readonly string[];
}): string {
  const configured = options.configuredHookUrl;
  const lines: string[] = [];
  let callUrl: string;
  if (configured !== undefined && !sameAddress(configured, options.hookUrl)) {
    callUrl = configured;
    lines.push(
      `hookbot: listening for hooks at ${options.hookUrl} (server ${options.apiUrl})`,
      `  the server must call ${configured} (hooks.url, the URL in the projects' hooks), not the address above: it must lead to this process (a proxy or load balancer in front of it)`,
    );
  } else {
    const address = hookAddress(options.hookUrl, configured);
    callUrl = address.url;
    lines.push(`hookbot: receiving hooks at ${address.url} (server ${options.apiUrl})`);
    if (address.note !== undefined && address.note !== 'hooks.url') lines.push(`  (${address.note})`);
  }
  lines.push(
    `  pid ${options.pid}: kill -HUP ${options.pid} reloads the rules, kill ${options.pid} stops the bot`,
    options.manageHooks
      ? `  next: the hook check (scheduler.sweeps.hook_check) adds and repairs the projects' hooks to ${callUrl} (hooks.manage): at start when it is due or its settings changed since the last start, then on its schedule`
      : `  next: add ${callUrl} as a web hook of each project, with webhook.secret as its secret token, for push, issue, merge request and note events (or set hooks.manage: true)`,
  );
  lines.push(...(options.warnings ?? []));
  return `${lines.join('\n')}\n`;
}
