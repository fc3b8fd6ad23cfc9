/**
 * One reading of an on/off environment variable, for every variable hookbot reads (the schema's
 * boolean keys, `HOOKBOT_IN_DOCKER`, `HOOKBOT_DEMO_LOG`). Environment variables are text, and people
 * write them as compose files, Helm charts and shells taught them: `true`, `1`, `yes`, `on`. Each
 * variable once read its own subset (`HOOKBOT_IN_DOCKER=1` worked where `HOOKBOT_ALLOW_PUBLIC_OPS=1`
 * was refused), so the docs could name a spelling that the bot then refused.
 *
 * The configuration file is YAML, which has booleans of its own: there `true` and `false` (YAML 1.2;
 * `yes` is a string to every YAML 1.2 tool, and is refused with the key's place).
 */

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/** The spellings, as the messages and docs/configuration.md say them. */
export const BOOLEAN_SPELLINGS = 'true or false (also 1 or 0, yes or no, on or off, in any case)';

/** `true`, `false`, or undefined for text that is neither (surrounding spaces ignored). */
export function parseBoolean(text: string): boolean | undefined {
  const word = text.trim().toLowerCase();
  if (TRUE.has(word)) return true;
  if (FALSE.has(word)) return false;
  return undefined;
}

export type BooleanVariable = { set: false } | { set: true; value: boolean } | { set: true; problem: string };

/**
 * The variable `name` of `env` read as a boolean. Unset or empty is unset (as compose files leave
 * them); anything else that is not a boolean is a problem that names the variable and its value.
 */
export function booleanVariable(env: NodeJS.ProcessEnv, name: string): BooleanVariable {
  const text = env[name];
  if (text === undefined || text.trim() === '') return { set: false };
  const value = parseBoolean(text);
  return value === undefined ? { set: true, problem: booleanProblem(name, text) } : { set: true, value };
}

/** `HOOKBOT_X is "maybe": use true or false (...)`. */
export function booleanProblem(name: string, text: string): string {
  return `${name} is ${JSON.stringify(text)}: use ${BOOLEAN_SPELLINGS}`;
}
