/**
 * When something periodic runs: every so long, or on a cron line. Both the sweeps (config
 * `scheduler.sweeps.<name>.every|cron`) and the rules (`schedule: daily`, `every 6h`, a cron
 * line; time/cron.ts says what is well formed) come down to a Timing, and the next run
 * after a run is computed from it and kept in the state store.
 */
import { parseDuration } from '../time/index.ts';
import { nextCronTime, parseCron, type CronSchedule } from '../time/index.ts';

export type Timing =
  { kind: 'every'; ms: number; text: string } | { kind: 'cron'; line: string; cron: CronSchedule };

/**
 * Named schedules are intervals measured from the last run, not wall-clock alignments: `daily`
 * runs 24 h after the previous run, so a restart or a slow run never makes it fire twice in a
 * row. Whoever wants a fixed time of day writes a cron line (`0 3 * * *`).
 */
const NAMED: Record<string, string> = { hourly: '1h', daily: '1d', weekly: '1w' };

function every(text: string): Timing {
  const ms = parseDuration(text);
  if (!(ms > 0)) throw new Error(`invalid interval "${text}"`);
  return { kind: 'every', ms, text };
}

/** A rule's `schedule:` (already validated by the rule loader). */
export function timingOfSchedule(schedule: string): Timing {
  const named = NAMED[schedule];
  if (named !== undefined) return every(named);
  const interval = /^every (.+)$/.exec(schedule);
  if (interval) return every(interval[1] ?? '');
  return { kind: 'cron', line: schedule, cron: parseCron(schedule) };
}

/** A sweep's configuration (`every: 5m` or `cron: '0 3 * * *'`, validated by the config schema). */
export function timingOfSweep(config: { every?: string | undefined; cron?: string | undefined }): Timing {
  if (config.cron !== undefined) return { kind: 'cron', line: config.cron, cron: parseCron(config.cron) };
  return every(config.every ?? '');
}

/** The run after one that started at `at`; Infinity for a cron line that never fires. */
export function nextRunAfter(timing: Timing, at: number): number {
  if (timing.kind === 'every') return at + timing.ms;
  return nextCronTime(timing.cron, at) ?? Number.POSITIVE_INFINITY;
}

export function describeTiming(timing: Timing): string {
  return timing.kind === 'every' ? `every ${timing.text}` : `cron ${timing.line}`;
}
