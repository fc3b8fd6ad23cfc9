import { describe, expect, it } from 'vitest';
import { cronProblem, parseCron } from '../../src/time/cron.ts';

/** The checker (messages for people) and the parser (next run times) read one grammar. */
describe('cron lines: the checker and the parser agree', () => {
  it.each([
    ['0 9 * * 1-5', undefined],
    ['*/15 * * * *', undefined],
    ['30 2 1,15 jan,jul sun', undefined],
    ['0 0 * * 7', undefined],
    ['0 9 * *', 'a cron line has 5 fields, this one has 4'],
    ['61 * * * *', 'minute 61 is out of range 0-59'],
    ['0 24 * * *', 'hour 24 is out of range 0-23'],
    ['0 0 0 * *', 'day of month 0 is out of range 1-31'],
    ['0 0 * foo *', 'invalid month "foo"'],
  ])('%s', (line, problem) => {
    expect(cronProblem(line)).toBe(problem);
    if (problem === undefined) expect(() => parseCron(line)).not.toThrow();
    else expect(() => parseCron(line)).toThrow(/invalid cron line/);
  });
});
