/**
 * Regular expressions written in rule files. A pattern runs on every event against text that
 * anyone can write (titles, descriptions, comments), so it runs on a linear-time engine: re2js, a
 * pure-JavaScript port of RE2 (an automaton, no backtracking). Its time grows with the input's
 * length times the pattern's size, whatever the pattern: `^(a|a)*$` or `.*.*=.*;` cannot freeze the
 * bot the way they freeze a backtracking engine such as V8's (docs/reliability.md, "Security", has
 * the measurements and why this engine).
 *
 * Patterns are written in JavaScript syntax and checked by V8's parser first, so an invalid one
 * gets V8's reason; then translated to RE2 syntax. What an automaton cannot run (backreferences,
 * lookahead, lookbehind) is refused when the file loads, with what to write instead.
 */
import { RE2JS } from 're2js';

/** Long patterns cost more per character of input, and no rule needs more. */
export const MAX_PATTERN_LENGTH = 500;
/** Matching stops at this many characters of input: a 1 MB description costs no more than 64 KiB. */
export const MAX_INPUT_LENGTH = 64 * 1024;
/** The engine every rule pattern runs on (shown by tests and the benchmark). */
export const REGEX_ENGINE = 're2js (linear time)';

/** A compiled rule pattern: JavaScript's `source` and `flags` for display, tested in linear time. */
export interface RulePattern {
  readonly source: string;
  readonly flags: string;
  readonly engine: typeof REGEX_ENGINE;
  test(text: string): boolean;
}

export type RegexCheck = { ok: true; regex: RulePattern } | { ok: false; message: string; hint?: string };

// Python and RE2 write flags as a leading `(?i)` (the example does); JavaScript has no
// such syntax before Node 23, so a leading group of flags becomes the pattern's flags.
const LEADING_FLAGS = /^\(\?([a-zA-Z]+)\)/;
const SUPPORTED_FLAGS = new Set(['i', 'm', 's']);
const ENGINE_FLAGS: Readonly<Record<string, number>> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
};

interface Unsupported {
  what: string;
  hint: string;
}

/**
 * The first construct an automaton cannot run, read outside character classes and escapes:
 * `\1`..`\9` and `\k<name>` (backreferences), `(?=`, `(?!` (lookahead), `(?<=`, `(?<!` (lookbehind).
 */
export function unsupportedConstruct(pattern: string): Unsupported | undefined {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next))
        return {
          what: `a backreference (\\${next})`,
          hint: 'match the text itself, or test it with a second condition',
        };
      if (!inClass && next === 'k' && pattern[i + 2] === '<')
        return {
          what: 'a backreference (\\k<…>)',
          hint: 'match the text itself, or test it with a second condition',
        };
      i++;
    } else if (inClass) {
      if (char === ']') inClass = false;
    } else if (char === '[') inClass = true;
    else if (char === '(' && pattern[i + 1] === '?') {
      const rest = pattern.slice(i + 2, i + 4);
      if (rest.startsWith('=') || rest.startsWith('!'))
        return {
          what: `a lookahead (?${rest[0]}…)`,
          hint: 'combine conditions instead: all of matches and not matches',
        };
      if (rest === '<=' || rest === '<!')
        return {
          what: `a lookbehind (?${rest}…)`,
          hint: 'combine conditions instead: all of matches and not matches',
        };
    }
  }
  return undefined;
}

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
  try {
    // Only to check the syntax, with V8's messages: this RegExp is never run.
    new RegExp(pattern, flags);
  } catch (error) {
    // V8 says "Invalid regular expression: /(a/: Unterminated group": keep the reason only.
    const reason =
      error instanceof Error ? error.message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /, '') : '';
    return { ok: false, message: `invalid regular expression /${source}/: ${reason}` };
  }
  const construct = unsupportedConstruct(pattern);
  if (construct)
    return {
      ok: false,
      message: `regular expression /${source}/ uses ${construct.what}, which the linear-time engine cannot run`,
      hint: construct.hint,
    };
  let engine: RE2JS;
  try {
    const engineFlags = [...flags].reduce((sum, flag) => sum | (ENGINE_FLAGS[flag] ?? 0), 0);
    engine = RE2JS.compile(RE2JS.translateRegExp(pattern), engineFlags);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^error parsing regexp: /, '') : '';
    return {
      ok: false,
      message: `regular expression /${source}/ cannot run on the linear-time engine: ${reason}`,
      hint: 'write it without backreferences, lookaround or \\u{…} escapes',
    };
  }
  return {
    ok: true,
    regex: {
      source: pattern,
      flags,
      engine: REGEX_ENGINE,
      test: (text) => engine.test(text),
    },
  };
}

/** For patterns that already passed `checkRegex` (the schema runs it on every pattern). */
export function compileRegex(source: string): RulePattern {
  const checked = checkRegex(source);
  if (!checked.ok) throw new Error(checked.message);
  return checked.regex;
}

/** Tests `text` against `regex`, reading at most MAX_INPUT_LENGTH characters of it. */
export function testBounded(regex: RulePattern, text: string): boolean {
  return regex.test(text.length > MAX_INPUT_LENGTH ? text.slice(0, MAX_INPUT_LENGTH) : text);
}

/** `/pattern/flags`, for describe and explain (a slash inside is escaped, as JavaScript shows it). */
export function showRegex(regex: RulePattern): string {
  return `/${new RegExp(regex.source, regex.flags).source}/${regex.flags}`;
}
