import type { Client, ProjectHook } from '../api/index.ts';
/**
 * The embedded default's hooks: `npm start` points each sandbox project's hook at this bot with this
 * run's secret. The sandbox is on this machine, so the bot's own hook is any hook whose URL is on
 * this machine (a loopback or an any-address host: 127.x, localhost, ::1, 0.0.0.0, ::) at the bot's
 * hook path, whatever the port of the run that made it. The first one is updated; the others are
 * leftovers (before this rule, each start in a container, where the bot listens on 0.0.0.0, added
 * one more, and every event arrived once per copy) and are removed. Hooks elsewhere are someone
 * else's and stay.
 */

const LOCAL_HOSTS = new Set(['localhost', '0.0.0.0', '[::]', '[::1]', '[::ffff:127.0.0.1]']);

function isLocalHost(hostname: string): boolean {
  return LOCAL_HOSTS.has(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** Whether a hook delivers to a bot on this machine at `hookPath` (any port). */
export function isLocalBotHook(url: string, hookPath: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const path = parsed.pathname.replace(/\/+$/, '') || '/';
  return (
    parsed.protocol === 'http:' &&
    isLocalHost(parsed.hostname) &&
    path === (hookPath.replace(/\/+$/, '') || '/')
  );
}

/**
 * The URL the sandbox should deliver to. A bot listening on every address (0.0.0.0 or ::, as in a
 * container) is reached on loopback; the URL then reads as what it is, not as an address to dial.
 */
export function deliverableHookUrl(hookUrl: string): string {
  const url = new URL(hookUrl);
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1';
  else if (url.hostname === '[::]') url.hostname = '[::1]';
  return url.toString();
}

export interface DemoHookResult {
  /** Projects whose hook now delivers to this bot. */
  registered: string[];
  /** Extra copies of the bot's hook removed (each would have delivered every event once more). */
  removed: number;
}

export async function registerDemoHooks(
  admin: Client,
  hookUrl: string,
  secret: string,
): Promise<DemoHookResult> {
  const url = deliverableHookUrl(hookUrl);
  const hookPath = new URL(url).pathname;
  const settings = {
    url,
    push_events: true,
    issues_events: true,
    merge_requests_events: true,
    note_events: true,
    build_events: true,
    pipeline_events: true,
    enable_ssl_verification: false,
    token: secret,
  };
  const result: DemoHookResult = { registered: [], removed: 0 };
  for await (const project of admin.projects.listAll()) {
    const ours: ProjectHook[] = [];
    for await (const hook of admin.hooks.list(project.id))
      if (isLocalBotHook(hook.url, hookPath)) ours.push(hook);
    const [kept, ...extra] = ours;
    if (kept) await admin.hooks.update(project.id, kept.id, settings);
    else await admin.hooks.create(project.id, settings);
    for (const hook of extra) await admin.hooks.remove(project.id, hook.id);
    result.removed += extra.length;
    result.registered.push(project.path_with_namespace);
  }
  return result;
}
