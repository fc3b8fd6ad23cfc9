/**
 * The kinds of value a configuration key can hold, each with the one message a person sees when
 * the value is wrong (`server.port: must be an integer between 0 and 65535`). zod's own messages
 * ("Invalid input: expected number, received string") name types, not fixes.
 */
import { z } from 'zod';
import { cronProblem } from '../time/index.ts';
import { DURATION_PATTERN, parseDuration } from '../time/index.ts';

/** A whole number, bounded; the message names the bounds either way it fails. */
export function integer(min: number, max?: number) {
  const message =
    max === undefined
      ? `must be an integer of at least ${min}`
      : `must be an integer between ${min} and ${max}`;
  const base = z.number({ error: message }).int({ error: message }).min(min, { error: message });
  return max === undefined ? base : base.max(max, { error: message });
}

/** A port to listen on; 0 asks the system for a free one (tests). */
export const port = () => integer(0, 65535);

export function fraction() {
  const message = 'must be a number between 0 and 1';
  return z.number({ error: message }).min(0, { error: message }).max(1, { error: message });
}

export const flag = () => z.boolean({ error: 'must be true or false' });

export const text = () => z.string({ error: 'must be a string' });

export function nonEmptyText() {
  return text().min(1, { error: 'must not be empty' });
}

export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: `must be one of ${values.join(', ')}` });
}

/**
 * A string where empty means "not set" (`token: ''` in the example file): the parsed value is
 * `undefined` then, so code asks `if (config.api.token)` and never mistakes '' for a value.
 */
export function optionalText() {
  return text()
    .default('')
    .transform((value) => (value === '' ? undefined : value));
}

/**
 * An http(s) URL or '' (not set). A `base` URL (the server's) loses trailing slashes and a
 * trailing `/api/v3`, so paths can be appended: people paste the API's URL as often as the server's.
 */
export function optionalUrl(options: { base?: boolean } = {}) {
  return text()
    .default('')
    .refine((value) => value === '' || isHttpUrl(value), {
      error: 'must be an http or https URL, e.g. https://git.example.com',
    })
    .transform((value) => {
      if (value === '') return undefined;
      return options.base
        ? value
            .replace(/\/+$/, '')
            .replace(/\/api\/v3$/i, '')
            .replace(/\/+$/, '')
        : value;
    });
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * A folder of branch names, ending with `/` (`hookbot/train/`): each part a name git accepts (no
 * `..`, none of `~^:?*[\`, whitespace or control characters, no part starting with `.` or ending in
 * `.lock`, no `@{`), since branches are made inside it.
 */
export function branchFolder() {
  return nonEmptyText().refine(
    (value) =>
      value.endsWith('/') &&
      value
        .slice(0, -1)
        .split('/')
        .every(
          (part) =>
            part !== '' &&
            // eslint-disable-next-line no-control-regex
            !/[\x00-\x20\x7f:~^?*[\\]|\.\.|@\{|^[.-]|\.lock$|\.$/.test(part),
        ),
    {
      error:
        'must be a folder of branch names ending with "/", e.g. hookbot/train/ (parts made of letters, digits, "-", "_" and "."; no "..", no part starting with "." or "-")',
    },
  );
}

/** A URL path such as `/hooks`. */
export function urlPath() {
  return text().regex(/^\/[^\s?#]*$/, { error: 'must be a path starting with /, e.g. /hooks' });
}

/** `5m`, `1h`, `1d12h`: the same durations as rule files use. */
export function duration() {
  return text().refine((value) => DURATION_PATTERN.test(value) && parseDuration(value) > 0, {
    error: 'must be a duration such as 30s, 5m, 1h or 1d (units s, m, h, d, w)',
  });
}

/** A five-field cron line, checked field by field so the message says which field is wrong. */
export function cronLine() {
  return text().superRefine((value, ctx) => {
    const problem = cronProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: `must be a cron line: ${problem}` });
  });
}

/**
 * A mapping whose keys are all known: a typo is an error, not a silently ignored setting. The
 * loader turns zod's `unrecognized_keys` into `unknown key "sever" (did you mean "server"?)`.
 */
export function mapping<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'invalid_type' ? 'must be a mapping of keys' : undefined),
  });
}

/** A mapping that may be left out: `prefault({})` (not `default`) parses `{}`, so its keys get their defaults. */
export function section<T extends z.core.$ZodLooseShape>(shape: T) {
  const schema = mapping(shape);
  // Every key of a section has a default or is optional, which the generic type cannot see.
  return schema.prefault({} as z.input<typeof schema>);
}

/** A list (empty by default) whose entries `item` checks, each with its own message. */
export function textList(item: z.ZodType<string> = text()) {
  return z.array(item, { error: 'must be a list' }).default([]);
}
