/**
 * Regular expressions written in rule files. Compiled once at load; rejected when invalid or
 * dangerous, because a pattern runs on every event against text that anyone can write (titles,
 * descriptions, comments).
 */
import safeRegex from 'safe-regex2';

/** Long patterns are where catastrophic ones hide, and no rule needs more. */
export const MAX_PATTERN_LENGTH = 500;
/** Matching stops at this many characters of input: a 1 MB description costs no more than 64 KiB. */
export const MAX_INPUT_LENGTH = 64 * 1024;

export type RegexCheck = { ok: true; regex: RegExp } | { ok: false; message: string; hint?: string };

// Python and RE2 write flags as a leading `(?i)` (the example does); JavaScript has no
// such syntax before Node 23, so a leading group of flags becomes the RegExp's flags.
const LEADING_FLAGS = /^\(\?([a-zA-Z]+)\)/;
const SUPPORTED_FLAGS = new Set(['i', 'm', 's']);

export function checkRegex(source: string): RegexCheck {
  if (source.length > MAX_PATTERN_LENGTH)
    return {
      ok: false,
      message: `regular expression is too long (${source.length} characters, at most ${MAX_PATTERN_LENGTH})`,
    };
  let pattern = source;
  let flags = '';
  const lead = LEADING_FLAGS.exec(source);
  if (lead?.[1] !== undefined) {
    const unsupported = [...lead[1]].filter((f) => !SUPPORTED_FLAGS.has(f));
    if (unsupported.length > 0)
      return {
        ok: false,
        message: `unsupported inline flag "${unsupported.join('')}" in /${source}/`,
        hint: 'use (?i), (?m) or (?s)',
      };
    flags = [...new Set(lead[1])].join('');
    pattern = source.slice(lead[0].length);
  }
  let regex: RegExp;
  try {
    regex = new RegExp(pattern, flags);
  } catch (error) {
    // V8 says "Invalid regular expression: /(a/: Unterminated group": keep the reason only.
    const reason =
      error instanceof Error ? error.message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /, '') : '';
    return { ok: false, message: `invalid regular expression /${source}/: ${reason}` };
  }
  if (!safeRegex(regex))
    return {
      ok: false,
      message: `regular expression /${source}/ may backtrack catastrophically`,
      hint: 'avoid nested quantifiers such as (a+)+ or (\\w+\\s?)*',
    };
  return { ok: true, regex };
}

/** For patterns that already passed `checkRegex` (the schema runs it on every pattern). */
export function compileRegex(source: string): RegExp {
  const checked = checkRegex(source);
  if (!checked.ok) throw new Error(checked.message);
  return checked.regex;
}

/** Tests `text` against `regex`, reading at most MAX_INPUT_LENGTH characters of it. */
export function testBounded(regex: RegExp, text: string): boolean {
  return regex.test(text.length > MAX_INPUT_LENGTH ? text.slice(0, MAX_INPUT_LENGTH) : text);
}

/** `/pattern/flags`, for describe and explain. */
export function showRegex(regex: RegExp): string {
  return `/${regex.source}/${regex.flags}`;
}
