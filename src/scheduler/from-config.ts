/**
 * The scheduler's settings read from the configuration (config/schema.ts `scheduler:` and
 * `hooks:`), so that `hookbot start` and `hookbot sweep --once` agree:
 *
 *   const sweeps = createSweepSet({ client, store, rules, executor, log }, sweepSettingsOf(config));
 *   const scheduler = createScheduler({ sweeps: scheduledSweepsOf(config, sweeps), store, log });
 *   await scheduler.start(); // ... await scheduler.stop();
 */
import type { Config } from '../config/index.ts';
import { createBranchUpdater, type GitCredentials } from '../git/index.ts';
import type { EchoLimits } from '../rules/index.ts';
import { parseDuration } from '../time/index.ts';
import type { ScheduledSweep } from './scheduler.ts';
import { SWEEP_NAMES, type SweepReport, type SweepSet, type SweepSettings } from './sweep-set.ts';
import { sweepRunResult } from './summary.ts';
import { nextRunAfter, timingOfSweep } from './timing.ts';

/**
 * The sweeps the configuration leaves on, by name: the scheduler runs these and records their last
 * success under the name, and the status page reads them back by the same names.
 */
export function enabledSweeps(config: Config) {
  return SWEEP_NAMES.filter((name) => config.scheduler.sweeps[name].enabled);
}

export function sweepSettingsOf(config: Config, now: number = Date.now()): SweepSettings {
  const reconcile = timingOfSweep(config.scheduler.sweeps.reconcile);
  return {
    projects: config.hooks.projects,
    budget: config.scheduler.budget_per_rule,
    breaker: { maxItems: config.scheduler.breaker.max_items, maxShare: config.scheduler.breaker.max_share },
    echo: echoLimitsOf(config),
    // One interval back (a cron-timed reconciliation: the gap to its next time from now).
    reconcileLookbackMs: Math.max(60_000, Math.min(nextRunAfter(reconcile, now) - now, 7 * 86_400_000)),
    pushNoteLagMs: config.api.push_note_lag_ms,
    hooks: { url: config.hooks.url, manage: config.hooks.manage, token: config.webhook.secret },
  };
}

/** The echo brake's bound (rules/item/echo-brake.ts): hook runs and sweeps share it. */
export function echoLimitsOf(config: Config): EchoLimits {
  return {
    writes: config.scheduler.breaker.echo_writes,
    windowMs: parseDuration(config.scheduler.breaker.echo_window),
  };
}

/**
 * Every sweep, those the configuration turns off included (`enabled: false`: not timed, but the
 * scheduler moves their stored next run so that turned on again they run at start), each with the
 * setting its stored next run holds for (scheduler.ts): a change of it runs the sweep at start.
 */
export function scheduledSweepsOf(config: Config, sweeps: SweepSet): ScheduledSweep[] {
  const on = new Set(enabledSweeps(config));
  return SWEEP_NAMES.map((name) => ({
    name,
    timing: timingOfSweep(config.scheduler.sweeps[name]),
    run: (options) => sweeps.run(name, options),
    resultOf: (report) => sweepRunResult(report as SweepReport),
    enabled: on.has(name),
    ...(name === 'hook_check' ? { setting: hookCheckSetting(config) } : {}),
  }));
}

/**
 * What the hook check does beyond its timing: whether it creates and repairs the hooks, with which
 * URL, in which projects. Turning `hooks.manage` on must install the hooks at the next start.
 */
function hookCheckSetting(config: Config): string {
  const { manage, url, projects } = config.hooks;
  return JSON.stringify({ manage, url: url ?? null, projects: [...projects].sort() });
}

/**
 * The merge queue's git access from `git:` (docs/configuration.md): an SSH key, or HTTPS with the
 * username (the bot's own unless `git.username`) and a password or personal access token. Without
 * either, no updater: queued merge requests wait and the merge queue sweep reports why.
 */
export function gitAccessOf(
  config: Config,
  botUsername: string | undefined,
  log?: (line: string) => void,
): { updater?: ReturnType<typeof createBranchUpdater>; gitSsh: boolean } {
  const git = config.git;
  let credentials: GitCredentials | undefined;
  if (git.ssh_key_file)
    credentials = {
      kind: 'ssh',
      keyFile: git.ssh_key_file,
      ...(git.ssh_known_hosts_file ? { knownHostsFile: git.ssh_known_hosts_file } : {}),
    };
  else if (git.password && (git.username ?? botUsername))
    credentials = { kind: 'https', username: (git.username ?? botUsername)!, password: git.password };
  if (!credentials) return { gitSsh: false };
  const username = git.username ?? botUsername ?? 'hookbot';
  return {
    gitSsh: credentials.kind === 'ssh',
    updater: createBranchUpdater({
      cacheDir: git.cache_dir,
      maxRepositories: git.cache_max_repositories,
      gcEveryUpdates: git.gc_every_updates,
      credentials,
      identity: { name: username, email: `${username}@hookbot.invalid` },
      timeoutMs: git.timeout_ms,
      trainPrefix: git.train_branch_prefix,
      ...(log ? { log } : {}),
    }),
  };
}
