/** Values seen by conditions, as short text for explain and summary statuses. */
import type { JsonValue } from './define-condition.ts';

export function showValue(value: JsonValue, max = 80): string {
  let text: string;
  if (value === null) text = 'none';
  else if (typeof value === 'string') text = JSON.stringify(value);
  else if (Array.isArray(value))
    text = `[${value.map((item) => (typeof item === 'string' ? item : showValue(item))).join(', ')}]`;
  else if (typeof value === 'object')
    text = Object.entries(value)
      .map(([key, item]) => `${key}=${typeof item === 'string' ? item : showValue(item)}`)
      .join(', ');
  else text = String(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
