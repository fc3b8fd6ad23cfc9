import { describe, expect, it } from 'vitest';
import { DURATION_PATTERN, formatDuration, parseDuration, parseTimestamp } from '../../src/time/duration.ts';

describe('durations and timestamps', () => {
  it.each([
    { text: '60d', ms: 60 * 86_400_000 },
    { text: '2h', ms: 7_200_000 },
    { text: '30m', ms: 1_800_000 },
    { text: '1w', ms: 7 * 86_400_000 },
    { text: '1d12h', ms: 36 * 3_600_000 },
    { text: '45s', ms: 45_000 },
  ])('$text is $ms ms', ({ text, ms }) => {
    expect(DURATION_PATTERN.test(text)).toBe(true);
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['60', 'd', '60days', '1.5h', '-1d', ''])('"%s" is not a duration', (text) => {
    expect(DURATION_PATTERN.test(text)).toBe(false);
  });

  it.each([
    { ms: 75 * 86_400_000 + 8 * 3_600_000 + 28 * 60_000, text: '75d 8h' },
    { ms: 2 * 3_600_000 + 5 * 60_000 + 3_000, text: '2h 5m' },
    { ms: 40_000, text: '40s' },
    { ms: 0, text: '0s' },
    { ms: -90_000, text: '-1m 30s' },
  ])('formats $ms ms as $text', ({ ms, text }) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([
    { text: '2016-01-19T08:40:25.934Z', iso: '2016-01-19T08:40:25.934Z' },
    { text: '2016-08-12 15:23:28 UTC', iso: '2016-08-12T15:23:28.000Z' },
    { text: '2016-08-12 15:23:28 +0100', iso: '2016-08-12T14:23:28.000Z' },
    { text: '2016-02-01T10:00:00+01:00', iso: '2016-02-01T09:00:00.000Z' },
  ])('reads the timestamp $text', ({ text, iso }) => {
    expect(new Date(parseTimestamp(text)).toISOString()).toBe(iso);
  });

  it('says NaN for what it cannot read', () => {
    expect(parseTimestamp('last tuesday')).toBeNaN();
  });
});
