/**
 * Turns zod's issues into messages for people who write rule files: what is wrong, where, and a
 * hint (`unknown action "coment"`, `did you mean "comment"?`). Unions are resolved to the branch
 * the input was aiming at, so a typo inside a condition is reported inside that condition.
 */
import type { z } from 'zod';
import { didYouMean } from '../../text/index.ts';
import { ruleFileJsonSchema } from './schema.ts';
import type { ValuePath } from './yaml-positions.ts';

type Issue = z.core.$ZodIssue;

export interface PathMessage {
  path: ValuePath;
  /** Set for unknown keys: the position is the key's. */
  key?: string;
  message: string;
  hint?: string;
}

type Role = 'file' | 'rule' | 'condition' | 'action' | 'other';

/** What the object at `path` is, to name its keys: conditions nest under all, any and not. */
export function roleAt(path: ValuePath): Role {
  if (path.length === 0) return 'file';
  if (path[0] !== 'rules' || typeof path[1] !== 'number') return 'other';
  if (path.length === 2) return 'rule';
  if (path[2] === 'do') return path.length === 4 && typeof path[3] === 'number' ? 'action' : 'other';
  if (path[2] !== 'if' || typeof path[3] !== 'number') return 'other';
  let rest = path.slice(4);
  while (rest.length > 0) {
    const [name, next] = rest;
    if (name === 'all' || name === 'any' || (name === 'not' && typeof next === 'number')) {
      if (typeof next !== 'number') return 'other';
      rest = rest.slice(2);
    } else if (name === 'not') rest = rest.slice(1);
    else return 'other';
  }
  return 'condition';
}

const NOUNS: Record<Role, string> = {
  file: 'top-level key',
  rule: 'rule key',
  condition: 'condition',
  action: 'action',
  other: 'key',
};

function valueAt(input: unknown, path: ValuePath): unknown {
  let value = input;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

function typeName(value: unknown): string {
  if (value === null) return 'nothing (null)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string')
    return `the text ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

const EXPECTED: Record<string, string> = {
  array: 'a list',
  object: 'a mapping',
  string: 'a text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  null: 'empty (null)',
};
const expectedName = (expected: string): string => EXPECTED[expected] ?? expected;

function subject(path: ValuePath): string {
  const key = [...path].reverse().find((segment) => typeof segment === 'string');
  return key === undefined ? 'the file' : `"${key}"`;
}

/** Keys the JSON Schema allows at `path` (for did-you-mean on unknown keys). */
export function keysAt(schema: Record<string, unknown>, path: ValuePath): string[] {
  const defs = (schema.$defs ?? {}) as Record<string, Record<string, unknown>>;
  const resolve = (node: Record<string, unknown>, depth = 0): Record<string, unknown>[] => {
    if (depth > 20) return [];
    if (typeof node.$ref === 'string') {
      const target = defs[node.$ref.replace('#/$defs/', '')];
      return target ? resolve(target, depth + 1) : [];
    }
    const branches = [node.anyOf, node.oneOf, node.allOf].flatMap((list) =>
      Array.isArray(list) ? (list as Record<string, unknown>[]) : [],
    );
    return branches.length ? branches.flatMap((branch) => resolve(branch, depth + 1)) : [node];
  };
  let nodes = resolve(schema);
  for (const segment of path) {
    nodes = nodes.flatMap((node) => {
      const next =
        typeof segment === 'number'
          ? (node.items as Record<string, unknown> | undefined)
          : (node.properties as Record<string, Record<string, unknown>> | undefined)?.[segment];
      return next ? resolve(next) : [];
    });
  }
  return [
    ...new Set(nodes.flatMap((node) => Object.keys((node.properties as Record<string, unknown>) ?? {}))),
  ];
}

function unknownKeys(
  path: ValuePath,
  keys: readonly string[],
  schema: () => Record<string, unknown>,
): PathMessage[] {
  const role = roleAt(path);
  const allKnown = keysAt(schema(), path);
  return keys.map((key) => {
    // A key another form of a union knows is no typo of itself: never "did you mean" the same key.
    const known = allKnown.filter((name) => name !== key);
    const hint =
      didYouMean(key, known) ??
      (known.length > 0 && known.length <= 10
        ? `expected one of ${known.join(', ')}`
        : known.length > 0
          ? 'see docs/rules.md for the list'
          : undefined);
    return { path, key, message: `unknown ${NOUNS[role]} "${key}"`, ...(hint ? { hint } : {}) };
  });
}

const depthOf = (issues: readonly Issue[]): number =>
  Math.max(...issues.map((issue) => issue.path.length * 2 + (issue.code === 'invalid_type' ? 0 : 1)));

/**
 * How well a union's branch fits a mapping: the keys of the input it knows (those its own
 * `unrecognized_keys` at the union's place do not list). Undefined when the input is no mapping.
 */
function matchingKeys(issues: readonly Issue[], value: unknown): number | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const unknown = new Set(
    issues.flatMap((issue) =>
      issue.code === 'unrecognized_keys' && issue.path.length === 0 ? issue.keys : [],
    ),
  );
  return Object.keys(value).filter((key) => !unknown.has(key)).length;
}

/**
 * The branch of a union the writer meant: for a mapping, the one that knows most of its keys, then
 * the one with fewest problems; otherwise (and on a tie) the one that got furthest into the value.
 * Without the keys first, a form that knows none of them but fails deeper would win, and report the
 * writer's keys as unknown.
 */
function meantBranch(branches: readonly (readonly Issue[])[], value: unknown): readonly Issue[] | undefined {
  const score = (issues: readonly Issue[]) => [
    matchingKeys(issues, value) ?? 0,
    -issues.length,
    depthOf(issues),
  ];
  return [...branches].sort((a, b) => {
    const [x, y] = [score(a), score(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return y[i]! - x[i]!;
    return 0;
  })[0];
}

function fromIssue(
  issue: Issue,
  base: ValuePath,
  input: unknown,
  schema: () => Record<string, unknown>,
): PathMessage[] {
  const path: ValuePath = [...base, ...(issue.path as (string | number)[])];
  const value = valueAt(input, path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return unknownKeys(path, issue.keys, schema);
    case 'invalid_type':
      if (value === undefined) return [{ path: path.slice(0, -1), message: `missing ${subject(path)}` }];
      return [
        { path, message: `${subject(path)} must be ${expectedName(issue.expected)}, got ${typeName(value)}` },
      ];
    case 'invalid_value': {
      const options = issue.values.map(String);
      const role = roleAt(path);
      const hint = typeof value === 'string' ? didYouMean(value, options) : undefined;
      if (role === 'action')
        return [{ path, message: `unknown action ${JSON.stringify(value)}`, ...(hint ? { hint } : {}) }];
      return [
        {
          path,
          message: `${subject(path)} must be one of ${options.join(', ')}, got ${typeName(value)}`,
          ...(hint ? { hint } : {}),
        },
      ];
    }
    case 'too_small': {
      const minimum = Number(issue.minimum);
      const message =
        issue.origin === 'array'
          ? minimum <= 1
            ? `${subject(path)} must not be an empty list`
            : `${subject(path)} needs at least ${minimum} items`
          : issue.origin === 'string'
            ? `${subject(path)} must not be empty`
            : `${subject(path)} must be at least ${minimum}`;
      return [{ path, message }];
    }
    case 'invalid_union': {
      // The branch that got furthest is the one the writer meant; a branch of words (`depth: auto`)
      // says nothing of a value of another type (`depth: 2.5`).
      const otherType = (errors: readonly Issue[]) =>
        errors.length === 1 &&
        errors[0]!.path.length === 0 &&
        errors[0]!.code === 'invalid_value' &&
        errors[0]!.values.every((option) => typeof option !== typeof value);
      const branches = issue.errors.filter((errors) => errors.length > 0 && !otherType(errors));
      const best = meantBranch(branches, value);
      const rootTypeOnly = (errors: readonly Issue[]) =>
        errors.every((e) => e.path.length === 0 && e.code === 'invalid_type');
      if (!best || branches.every(rootTypeOnly)) {
        const expected = [
          ...new Set(
            issue.errors.flatMap((errors) =>
              errors.flatMap((e) =>
                e.code === 'invalid_type'
                  ? [expectedName(e.expected)]
                  : otherType(errors) && e.code === 'invalid_value'
                    ? e.values.map(String)
                    : [],
              ),
            ),
          ),
        ];
        const last = expected.pop();
        const words = expected.length > 0 ? `${expected.join(', ')} or ${last}` : last;
        return [{ path, message: `${subject(path)} must be ${words}, got ${typeName(value)}` }];
      }
      return best.flatMap((inner) => fromIssue(inner, path, input, schema));
    }
    case 'custom': {
      const hint = (issue.params as { hint?: unknown } | undefined)?.hint;
      return [{ path, message: issue.message, ...(typeof hint === 'string' ? { hint } : {}) }];
    }
    default:
      return [{ path, message: issue.message }];
  }
}

export function explainIssues(issues: readonly Issue[], input: unknown): PathMessage[] {
  let jsonSchema: Record<string, unknown> | undefined;
  const schema = () => (jsonSchema ??= ruleFileJsonSchema());
  return issues.flatMap((issue) => fromIssue(issue, [], input, schema));
}
