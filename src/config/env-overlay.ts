/**
 * Environment variables win over the file (issue 4, "Configuration contract"). Which variable
 * sets which key is declared in the schema (`.meta({ env })`); this only reads them.
 */
import { BOOLEAN_SPELLINGS, parseBoolean } from './booleans.ts';
import { leafKeys, type ConfigKey } from './config-keys.ts';

export interface EnvValue {
  name: string;
  path: readonly string[];
  /** Numbers and booleans converted when they read as such; otherwise the text, for the schema to refuse. */
  value: unknown;
  /** Why the text cannot be this key's value, when the overlay knows better than the schema (booleans). */
  problem?: string;
}

/** The variables that are set (an empty variable counts as unset, as compose files often leave them). */
export function envValues(env: NodeJS.ProcessEnv, keys: readonly ConfigKey[]): EnvValue[] {
  const values: EnvValue[] = [];
  for (const key of leafKeys(keys)) {
    if (key.env === undefined) continue;
    const text = env[key.env];
    if (text === undefined || text === '') continue;
    if (key.type === 'boolean') {
      // Every boolean variable reads the same spellings (booleans.ts); anything else names the variable.
      const value = parseBoolean(text);
      values.push(
        value === undefined
          ? {
              name: key.env,
              path: key.path,
              value: text,
              problem: `must be ${BOOLEAN_SPELLINGS}; got ${JSON.stringify(text)}`,
            }
          : { name: key.env, path: key.path, value },
      );
    } else values.push({ name: key.env, path: key.path, value: convert(text, key.type) });
  }
  return values;
}

function convert(text: string, type: string): unknown {
  const trimmed = text.trim();
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  return text;
}

/**
 * Writes `value` at `path` inside `target`, making mappings on the way. Where the file holds
 * something else than a mapping (`server: 5`), it leaves it for the schema to report.
 */
export function setIn(target: Record<string, unknown>, path: readonly string[], value: unknown): boolean {
  let node: Record<string, unknown> = target;
  for (const [index, segment] of path.entries()) {
    if (index === path.length - 1) {
      node[segment] = value;
      return true;
    }
    const next = node[segment];
    if (next === undefined || next === null) node[segment] = {};
    else if (typeof next !== 'object' || Array.isArray(next)) return false;
    node = node[segment] as Record<string, unknown>;
  }
  return false;
}

export function getIn(target: unknown, path: readonly (string | number)[]): unknown {
  let node = target;
  for (const segment of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string | number, unknown>)[segment];
  }
  return node;
}

export function deleteIn(target: unknown, path: readonly string[]): void {
  const parent = getIn(target, path.slice(0, -1));
  const last = path[path.length - 1];
  if (parent !== null && typeof parent === 'object' && !Array.isArray(parent) && last !== undefined)
    delete (parent as Record<string, unknown>)[last];
}
