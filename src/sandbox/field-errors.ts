/**
 * Model validation errors in the real servers' form (docs/api-v3.md#errors rule 2): `message` is an
 * object mapping each property to an array of messages, e.g.
 * `{"message":{"bio":["is too long (maximum is 255 characters)"]}}`.
 */
import { badRequest } from './http.ts';

export class FieldErrors {
  readonly fields: Record<string, string[]> = {};

  add(field: string, message: string): void {
    (this.fields[field] ??= []).push(message);
  }

  has(field?: string): boolean {
    return field === undefined ? Object.keys(this.fields).length > 0 : (this.fields[field]?.length ?? 0) > 0;
  }

  /** Throws the 400 answer when any error was recorded. */
  throwIfAny(): void {
    if (this.has()) throw badRequest(this.fields);
  }

  /** Rails' length validation messages. */
  maxLength(field: string, value: string | null | undefined, max: number): void {
    if (value !== null && value !== undefined && value.length > max)
      this.add(field, `is too long (maximum is ${max} characters)`);
  }
}

/** Rails' e-mail format check, loose as real servers' was: something@something.something. */
export function looksLikeEmail(value: string): boolean {
  return /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value);
}

/** An absolute http(s) URL, as real servers' URL validator requires for hooks and redirect settings. */
export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname.length > 0;
  } catch {
    return false;
  }
}
