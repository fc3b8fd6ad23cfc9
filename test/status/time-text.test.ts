import { describe, expect, it } from 'vitest';
import { relativeText, utcText } from '../../src/status/time-text.ts';

const NOW = Date.UTC(2016, 7, 12, 15, 23, 28);

describe('utcText', () => {
  it('shows the time in UTC, to the second', () => {
    expect(utcText(NOW + 999)).toBe('2016-08-12 15:23:28 UTC');
  });
  it('says unknown for a time that is not one', () => {
    expect(utcText(Number.NaN)).toBe('unknown');
  });
});

describe('relativeText', () => {
  const cases: [string, number, string][] = [
    ['the same moment', 0, 'now'],
    ['under a second', -999, 'now'],
    ['seconds ago', -42_000, '42 s ago'],
    ['seconds ahead', 45_000, 'in 45 s'],
    ['minutes ago', -20 * 60_000 - 59_000, '20 min ago'],
    ['hours ahead', 3 * 3_600_000, 'in 3 h'],
    ['days ago', -2 * 86_400_000, '2 d ago'],
  ];
  it.each(cases)('%s', (_name, delta, text) => {
    expect(relativeText(NOW + delta, NOW)).toBe(text);
  });
});
