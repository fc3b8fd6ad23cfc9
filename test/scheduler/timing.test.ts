/** When sweeps and rule schedules run next: intervals, named schedules and cron lines (local time). */
import { describe, expect, it } from 'vitest';
import { nextCronTime, parseCron } from '../../src/time/cron.ts';
import { describeTiming, nextRunAfter, timingOfSchedule, timingOfSweep } from '../../src/scheduler/timing.ts';

/** Local time, as cron reads it. */
const at = (y: number, mo: number, d: number, h = 0, mi = 0) => new Date(y, mo - 1, d, h, mi).getTime();

describe('cron lines', () => {
  const cases: [string, string, number, number | undefined][] = [
    ['every minute', '* * * * *', at(2024, 1, 1, 10, 30), at(2024, 1, 1, 10, 31)],
    ['at 03:00 every day, later the same day', '0 3 * * *', at(2024, 1, 1, 1, 0), at(2024, 1, 1, 3, 0)],
    ['at 03:00 every day, after it passed', '0 3 * * *', at(2024, 1, 1, 3, 0), at(2024, 1, 2, 3, 0)],
    ['every 15 minutes', '*/15 * * * *', at(2024, 1, 1, 10, 16), at(2024, 1, 1, 10, 30)],
    ['weekdays at 07:00, from a Saturday', '0 7 * * 1-5', at(2024, 1, 6, 12, 0), at(2024, 1, 8, 7, 0)],
    ['weekday names', '0 7 * * mon-fri', at(2024, 1, 6, 12, 0), at(2024, 1, 8, 7, 0)],
    ['Sunday written 7', '0 0 * * 7', at(2024, 1, 1, 0, 0), at(2024, 1, 7, 0, 0)],
    ['month names and lists', '30 12 1 jan,jul *', at(2024, 2, 1), at(2024, 7, 1, 12, 30)],
    ['day of month or day of week when both are restricted', '0 0 13 * 5', at(2024, 1, 1), at(2024, 1, 5)],
    ['a range with a step', '0 8-18/5 * * *', at(2024, 1, 1, 9, 0), at(2024, 1, 1, 13, 0)],
    ['a start with a step runs to the end', '0 20/2 * * *', at(2024, 1, 1, 21, 0), at(2024, 1, 1, 22, 0)],
    ['February 30th never comes', '0 0 30 2 *', at(2024, 1, 1), undefined],
  ];
  it.each(cases)('%s: %s', (_name, line, after, expected) => {
    expect(nextCronTime(parseCron(line), after)).toBe(expected);
  });

  it.each([
    ['four fields', '* * * *'],
    ['a minute out of range', '60 * * * *'],
    ['an unknown name', '0 0 * * funday'],
    ['a zero step', '*/0 * * * *'],
  ])('refuses %s', (_name, line) => {
    expect(() => parseCron(line)).toThrow(/invalid cron line/);
  });
});

describe('timings', () => {
  const start = at(2024, 3, 10, 12, 0);
  it.each([
    ['hourly', 'every 1h', start + 3_600_000],
    ['daily', 'every 1d', start + 86_400_000],
    ['weekly', 'every 1w', start + 7 * 86_400_000],
    ['every 6h', 'every 6h', start + 6 * 3_600_000],
    ['every 1d12h', 'every 1d12h', start + 36 * 3_600_000],
    ['0 3 * * *', 'cron 0 3 * * *', at(2024, 3, 11, 3, 0)],
  ])('rule schedule %s', (schedule, described, next) => {
    const timing = timingOfSchedule(schedule);
    expect(describeTiming(timing)).toBe(described);
    expect(nextRunAfter(timing, start)).toBe(next);
  });

  it('a sweep runs every so long, or on its cron line', () => {
    expect(nextRunAfter(timingOfSweep({ every: '5m' }), start)).toBe(start + 300_000);
    expect(nextRunAfter(timingOfSweep({ cron: '0 0 * * *' }), start)).toBe(at(2024, 3, 11));
  });

  it('a cron line that never fires has no next run', () => {
    expect(nextRunAfter(timingOfSchedule('0 0 30 2 *'), start)).toBe(Number.POSITIVE_INFINITY);
  });
});
