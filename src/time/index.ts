/** Durations and cron lines: a leaf any part may use. */
export { type CronSchedule, cronProblem, nextCronTime, parseCron } from './cron.ts';
export {
  DURATION_HELP,
  DURATION_PATTERN,
  formatDuration,
  parseDuration,
  parseTimestamp,
} from './duration.ts';
