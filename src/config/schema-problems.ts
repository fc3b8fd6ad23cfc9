/**
 * zod's issues, said the way a person fixes them: `key: problem`, with a did-you-mean for an
 * unknown key (`unknown key "sever" (did you mean "server"?)`).
 */
import type { z } from 'zod';
import { closest } from '../text/index.ts';
import type { ConfigKey } from './config-keys.ts';
import { keyName, type ConfigSource, type Problem } from './sources.ts';
import type { KeyPath } from './yaml-source.ts';

export interface ProblemPlaces {
  /** Where the value at `path` was set (file position or variable); undefined for a default. */
  valueSource(path: KeyPath): ConfigSource | undefined;
  /** Where the key at `path` is written in the file. */
  keySource(path: KeyPath): ConfigSource | undefined;
}

export function schemaProblems(
  issues: readonly z.core.$ZodIssue[],
  keys: readonly ConfigKey[],
  places: ProblemPlaces,
): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const at = issue.path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
    if (issue.code === 'unrecognized_keys') {
      for (const unknown of issue.keys) {
        const path = [...at, unknown];
        const message = `unknown key "${keyName(path)}"${suggestion(at, unknown, keys)}`;
        problems.push({ key: '', message, source: places.keySource(path) });
      }
      continue;
    }
    problems.push({ key: keyName(at), message: issue.message, source: places.valueSource(at) });
  }
  return problems;
}

/** A sibling spelt alike, or else a key of that name elsewhere (`port` at the top: `server.port`). */
function suggestion(parent: KeyPath, unknown: string, keys: readonly ConfigKey[]): string {
  const siblings = childrenAt(keys, parent);
  const near = closest(
    unknown,
    siblings.map((key) => key.path[key.path.length - 1] ?? ''),
  );
  if (near !== undefined) return ` (did you mean "${keyName([...parent.map(String), near])}"?)`;
  const elsewhere = allKeys(keys).filter((key) => key.path[key.path.length - 1] === unknown);
  if (elsewhere.length === 0) return '';
  return ` (did you mean ${elsewhere.map((key) => `"${key.name}"`).join(' or ')}?)`;
}

function childrenAt(keys: readonly ConfigKey[], path: KeyPath): readonly ConfigKey[] {
  let level = keys;
  for (const segment of path) {
    const next = level.find((key) => key.path[key.path.length - 1] === String(segment));
    if (!next?.children) return [];
    level = next.children;
  }
  return level;
}

function allKeys(keys: readonly ConfigKey[]): ConfigKey[] {
  return keys.flatMap((key) => (key.children ? [key, ...allKeys(key.children)] : [key]));
}
