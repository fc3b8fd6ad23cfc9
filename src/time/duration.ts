/** Durations in rule files (`60d`, `2h`, `1d12h`) and ages shown by explain. */

const UNIT_MS: Record<string, number> = {
  w: 7 * 86_400_000,
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
};

export const DURATION_PATTERN = /^(?:\d+[wdhms])+$/;
export const DURATION_HELP = 'a number and a unit, e.g. 60d, 2h, 30m, 1w or 1d12h (m is minutes)';

/** Milliseconds in `text`, which must match DURATION_PATTERN. */
export function parseDuration(text: string): number {
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+)([wdhms])/g))
    total += Number(amount) * (UNIT_MS[unit ?? 's'] ?? 0);
  return total;
}

/** `75d 3h`, `2h 5m`, `40s`: the two largest units, enough to read an age at a glance. */
export function formatDuration(ms: number): string {
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  const parts: string[] = [];
  for (const unit of ['d', 'h', 'm', 's']) {
    const size = UNIT_MS[unit] ?? 1;
    const amount = Math.floor(rest / size);
    rest -= amount * size;
    if (amount > 0 || (parts.length === 0 && unit === 's')) parts.push(`${amount}${unit}`);
    if (parts.length === 2) break;
  }
  return sign + parts.join(' ');
}

/**
 * Parses a timestamp of the API (`2016-01-19T08:40:25.934Z`) or of a hook payload
 * (`2016-08-12 15:23:28 UTC`, docs/server-behaviour.md#timestamps). NaN when unreadable.
 */
export function parseTimestamp(text: string): number {
  const direct = Date.parse(text);
  if (!Number.isNaN(direct)) return direct;
  const payloadForm = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) (UTC|[+-]\d{4})$/.exec(text);
  if (!payloadForm) return Number.NaN;
  const zone = payloadForm[3] === 'UTC' ? 'Z' : payloadForm[3];
  return Date.parse(`${payloadForm[1]}T${payloadForm[2]}${zone}`);
}
