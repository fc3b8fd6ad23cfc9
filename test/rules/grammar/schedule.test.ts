import { describe, expect, it } from 'vitest';
import { scheduleProblem } from '../../../src/rules/grammar/schedule.ts';

describe('schedules', () => {
  it.each([
    'hourly',
    'daily',
    'weekly',
    'every 6h',
    'every 1d12h',
    '0 7 * * 1-5',
    '*/15 * * * *',
    '0 0 1 jan,jul sun',
  ])('"%s" is a schedule', (text) => {
    expect(scheduleProblem(text)).toBeUndefined();
  });

  it.each([
    { text: 'dayly', problem: { message: 'invalid schedule "dayly"', hint: 'did you mean "daily"?' } },
    {
      text: 'every day',
      problem: {
        message: 'invalid interval "every day"',
        hint: 'write every and a duration, e.g. every 6h or every 30m',
      },
    },
    {
      text: '61 * * * *',
      problem: { message: 'invalid cron schedule "61 * * * *": minute 61 is out of range 0-59' },
    },
    {
      text: '0 7 * * mon-fry',
      problem: { message: 'invalid cron schedule "0 7 * * mon-fry": invalid day of week "mon-fry"' },
    },
    {
      text: 'often',
      problem: {
        message: 'invalid schedule "often"',
        hint: 'use hourly, daily, weekly, every <duration> (e.g. every 6h) or a cron line (5 fields)',
      },
    },
  ])('"$text" is refused', ({ text, problem }) => {
    expect(scheduleProblem(text)).toEqual(problem);
  });
});
