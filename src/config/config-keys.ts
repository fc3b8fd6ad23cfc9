/**
 * The schema read back as a tree of documented keys, for the example file, the reference page
 * and the environment overlay. It goes through `z.toJSONSchema` (input side) rather than zod's
 * internals: that is zod's public way to read descriptions, defaults and `.meta()`.
 */
import { z } from 'zod';
import { createConfigSchema, type ConfigKeyMeta, type ConfigSchema } from './schema.ts';

export interface ConfigKey extends ConfigKeyMeta {
  /** `['api', 'retry', 'limit']` */
  readonly path: readonly string[];
  /** `api.retry.limit` */
  name: string;
  description: string;
  /** A mapping of further keys, or a value. */
  children?: readonly ConfigKey[];
  /** The value used when the key is left out, if there is one. */
  default?: unknown;
  hasDefault: boolean;
  /** `string`, `integer`, `number`, `boolean`, `list of string`. */
  type: string;
  /** The allowed values, for a closed set. */
  values?: readonly string[];
}

interface JsonSchemaNode {
  type?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchemaNode>;
  items?: JsonSchemaNode;
  env?: unknown;
  secret?: unknown;
  example?: unknown;
  defaultNote?: unknown;
  fsPath?: unknown;
}

let defaultKeys: readonly ConfigKey[] | undefined;

/** The keys of `schema`; those of the default schema are worked out once (it takes milliseconds). */
export function configKeys(schema?: ConfigSchema): readonly ConfigKey[] {
  if (schema === undefined) return (defaultKeys ??= configKeys(createConfigSchema()));
  const root = z.toJSONSchema(schema, { io: 'input' }) as JsonSchemaNode;
  return childrenOf(root, [], undefined);
}

function childrenOf(node: JsonSchemaNode, path: readonly string[], inherited: unknown): ConfigKey[] {
  // A mapping's own default (a sweep's `{ every: '1h' }`) supplies defaults for its keys.
  const own = isRecord(node.default) ? node.default : {};
  const outer = isRecord(inherited) ? inherited : {};
  const defaults: Record<string, unknown> = { ...own, ...outer };
  return Object.entries(node.properties ?? {}).map(([name, child]) =>
    keyOf(child, [...path, name], defaults[name]),
  );
}

function keyOf(node: JsonSchemaNode, path: readonly string[], inherited: unknown): ConfigKey {
  const base = {
    path,
    name: path.join('.'),
    description: node.description ?? '',
    ...(typeof node.env === 'string' ? { env: node.env } : {}),
    ...(node.secret === true ? { secret: true } : {}),
    ...(typeof node.example === 'string' ? { example: node.example } : {}),
    ...(typeof node.defaultNote === 'string' ? { defaultNote: node.defaultNote } : {}),
    ...(node.fsPath === true ? { fsPath: true } : {}),
  };
  if (node.type === 'object' && node.properties)
    return { ...base, type: 'mapping', hasDefault: true, children: childrenOf(node, path, inherited) };
  const fallback = inherited !== undefined ? inherited : node.default;
  return {
    ...base,
    type: node.type === 'array' ? `list of ${node.items?.type ?? 'value'}` : (node.type ?? 'value'),
    ...(node.enum ? { values: node.enum.map(String) } : {}),
    hasDefault: fallback !== undefined,
    ...(fallback !== undefined ? { default: fallback } : {}),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Every key that holds a value (not a mapping), depth first in schema order. */
export function leafKeys(keys: readonly ConfigKey[]): ConfigKey[] {
  return keys.flatMap((key) => (key.children ? leafKeys(key.children) : [key]));
}
