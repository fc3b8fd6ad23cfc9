/**
 * Timestamps of that era come in three forms (docs/server-behaviour.md#timestamps): payloads use `2016-08-12 15:23:28 UTC`
 * or `2016-08-12 15:23:28 +0100`, commits ISO 8601 with an offset, API answers `2016-01-19T08:40:25.934Z`.
 */
const PAYLOAD_FORM = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?) (UTC|[+-]\d{2}:?\d{2})$/;

/** Milliseconds since the epoch, or undefined when the text is not a timestamp of any known form. */
export function parseTimestamp(text: unknown): number | undefined {
  if (typeof text !== 'string' || text.length === 0) return undefined;
  const match = PAYLOAD_FORM.exec(text.trim());
  let iso = text.trim();
  if (match) {
    const zone = match[3] === 'UTC' ? 'Z' : `${match[3]!.slice(0, 3)}:${match[3]!.slice(-2)}`;
    iso = `${match[1]}T${match[2]}${zone}`;
  } else if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(iso)) {
    return undefined;
  }
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms;
}
