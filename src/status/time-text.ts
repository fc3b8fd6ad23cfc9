/**
 * Times as people read them on the status page: absolute in UTC (the server's logs are in UTC too,
 * whatever the reader's zone) and relative to when the page was made ("3 min ago", "in 40 s").
 */

/** `2016-08-12 15:23:28 UTC` */
export function utcText(ms: number): string {
  if (!Number.isFinite(ms)) return 'unknown';
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

const UNITS: readonly [limitMs: number, sizeMs: number, name: string][] = [
  [60_000, 1_000, 's'],
  [3_600_000, 60_000, 'min'],
  [86_400_000, 3_600_000, 'h'],
  [Infinity, 86_400_000, 'd'],
];

/** `3 min ago`, `in 40 s`, `now`. */
export function relativeText(ms: number, now: number): string {
  if (!Number.isFinite(ms)) return '';
  const delta = ms - now;
  const size = Math.abs(delta);
  if (size < 1_000) return 'now';
  const [, unit, name] = UNITS.find(([limit]) => size < limit) ?? UNITS[UNITS.length - 1]!;
  const amount = Math.floor(size / unit);
  return delta < 0 ? `${amount} ${name} ago` : `in ${amount} ${name}`;
}
