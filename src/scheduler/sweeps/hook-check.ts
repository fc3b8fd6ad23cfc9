/**
 * The hook check: each configured project must still have hookbot's hook (the one whose URL is
 * `hooks.url`) with the events the rules need: push, issues, merge requests and notes always;
 * builds and pipelines too when a rule listens to `status.changed` (later 8.x servers send commit
 * status changes only as Build and Pipeline hooks). Someone may delete or edit the hook at any
 * time, and nothing else would notice: the bot would just go quiet.
 *
 * Reports each project; with `hooks.manage: true` creates a missing hook and repairs a changed
 * one, with the configured secret (servers never show a hook's secret, so a repair always sets
 * it again). A flag the server does not show at all (build and pipeline events on servers older
 * than 8.x's later releases) is reported as unsupported, not as missing, so it is not "repaired"
 * at every run.
 */
import { messageOf, type SweepLog, type SweepRunOptions } from '../types.ts';
import type { Client, HookSettings, ProjectHook } from '../../api/index.ts';

export const BASE_EVENTS = ['push_events', 'issues_events', 'merge_requests_events', 'note_events'] as const;
export const STATUS_EVENTS = ['build_events', 'pipeline_events'] as const;

export type HookEventFlag = (typeof BASE_EVENTS)[number] | (typeof STATUS_EVENTS)[number];

export interface HookCheckDeps {
  client: { hooks: Pick<Client['hooks'], 'list' | 'create' | 'update'> };
  log: SweepLog;
}

export interface HookCheckOptions extends SweepRunOptions {
  projects: readonly string[];
  /** `hooks.url`: how hookbot's hook is told apart from the others. */
  url: string | undefined;
  /** `hooks.manage`: create and repair. */
  manage: boolean;
  /** The webhook secret the hook must send (`webhook.secret`). */
  token?: string | undefined;
  /** A rule listens to `status.changed`. */
  statusEvents: boolean;
  dryRun?: boolean;
}

export type HookState =
  'ok' | 'missing' | 'changed' | 'created' | 'repaired' | 'would-create' | 'would-repair' | 'error';

export interface HookProjectReport {
  project: string;
  state: HookState;
  detail: string;
  hookId?: number;
  /** Events the hook lacks. */
  missingEvents?: HookEventFlag[];
  /** Events this server does not show (it predates them). */
  unsupportedEvents?: HookEventFlag[];
  /** More hooks with hookbot's URL: each delivery then arrives more than once. */
  duplicates?: number;
}

export interface HookCheckReport {
  sweep: 'hook_check';
  dryRun: boolean;
  /** Why nothing could be checked. */
  problem?: string;
  projects: HookProjectReport[];
  aborted: boolean;
}

/**
 * One address written two ways is one hook: the host's case, a default port written out and a
 * trailing slash do not make another URL (the server stores the URL as it was typed).
 */
function normalUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}${parsed.search}`;
  } catch {
    return url.replace(/\/+$/, '');
  }
}

const sameUrl = (a: string, b: string): boolean => normalUrl(a) === normalUrl(b);

export async function runHookCheck(deps: HookCheckDeps, options: HookCheckOptions): Promise<HookCheckReport> {
  const { client, log } = deps;
  const dryRun = options.dryRun ?? false;
  const report: HookCheckReport = { sweep: 'hook_check', dryRun, projects: [], aborted: false };
  const url = options.url;
  if (url === undefined) {
    report.problem = 'hooks.url is not set: hookbot cannot tell its hook from the others';
    return report;
  }
  const wanted: HookEventFlag[] = [...BASE_EVENTS, ...(options.statusEvents ? STATUS_EVENTS : [])];

  for (const project of options.projects) {
    if (options.signal?.aborted) {
      report.aborted = true;
      break;
    }
    let result: HookProjectReport;
    try {
      result = await checkProject(project, url);
    } catch (error) {
      result = { project, state: 'error', detail: messageOf(error) };
    }
    report.projects.push(result);
    options.onProgress?.({ sweep: 'hook_check', scope: 'projects', items: report.projects.length, pages: 0 });
    if (result.state !== 'ok')
      log.warn({ sweep: 'hook_check', project, state: result.state, detail: result.detail }, 'hook check');
  }
  return report;

  async function checkProject(project: string, hookUrl: string): Promise<HookProjectReport> {
    const ours: ProjectHook[] = [];
    for await (const hook of client.hooks.list(project)) if (sameUrl(hook.url, hookUrl)) ours.push(hook);
    const hook = ours[0];
    const duplicates = ours.length > 1 ? { duplicates: ours.length - 1 } : {};
    const settings: HookSettings = {
      url: hookUrl,
      ...Object.fromEntries(wanted.map((flag) => [flag, true])),
      ...(options.token ? { token: options.token } : {}),
    };
    if (!hook) {
      if (!options.manage) return { project, state: 'missing', detail: `no hook delivers to ${hookUrl}` };
      if (dryRun) return { project, state: 'would-create', detail: `would create the hook for ${hookUrl}` };
      const created = await client.hooks.create(project, settings);
      return {
        project,
        state: 'created',
        hookId: created.id,
        detail: 'hook created',
        ...unsupported(created),
      };
    }

    const missing = wanted.filter((flag) => hook[flag] === false);
    const known = { hookId: hook.id, ...duplicates, ...unsupported(hook) };
    if (missing.length === 0)
      return { project, state: 'ok', detail: `hook ${hook.id} has every event needed`, ...known };
    const lacking = `hook ${hook.id} lacks ${missing.join(', ')}`;
    if (!options.manage)
      return { project, state: 'changed', detail: lacking, missingEvents: missing, ...known };
    if (dryRun)
      return {
        project,
        state: 'would-repair',
        detail: `${lacking}; would repair`,
        missingEvents: missing,
        ...known,
      };
    const repaired = await client.hooks.update(project, hook.id, settings);
    return {
      project,
      state: 'repaired',
      detail: `${lacking}; repaired`,
      missingEvents: missing,
      ...known,
      ...unsupported(repaired),
    };
  }

  function unsupported(hook: ProjectHook): { unsupportedEvents?: HookEventFlag[] } {
    const flags = wanted.filter((flag) => hook[flag] === undefined);
    return flags.length > 0 ? { unsupportedEvents: flags } : {};
  }
}
