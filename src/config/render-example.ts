/**
 * config.example.yml, written from the schema: every key with its default, its description as a
 * comment, secrets left empty. scripts/gen-config-example.ts writes it; a test keeps it current.
 */
import { configKeys, type ConfigKey } from './config-keys.ts';
import { SECRET_KEYS } from './secrets.ts';
import { keyName } from './sources.ts';

const WIDTH = 100;

export const GENERATED_NOTE =
  'Generated from src/config/schema.ts by `npx tsx scripts/gen-config-example.ts`';

export function renderConfigExample(keys: readonly ConfigKey[] = configKeys()): string {
  const head = [
    'hookbot configuration: every key, with its default and what it means (docs/configuration.md).',
    `${GENERATED_NOTE}; do not edit it by hand.`,
    'Use it with `hookbot serve --config FILE` (or HOOKBOT_CONFIG=FILE) and keep only the keys you change.',
    'Environment variables win over this file; each is named at its key. Secrets: leave them empty here and give them through their variable or a *_file key (a file that holds only the secret).',
  ];
  const sections = keys.map((key) => renderKey(key, 0).join('\n'));
  return `${head.flatMap((paragraph) => comment(paragraph, 0)).join('\n')}\n\n${sections.join('\n\n')}\n`;
}

function renderKey(key: ConfigKey, depth: number): string[] {
  const indent = '  '.repeat(depth);
  const name = key.path[key.path.length - 1] ?? '';
  const lines = comment(describeKey(key, 'example'), depth);
  if (key.children)
    return [...lines, `${indent}${name}:`, ...key.children.flatMap((k) => renderKey(k, depth + 1))];
  // Commented out: a default that depends on where hookbot runs must not be pinned by copying this file.
  if (key.defaultNote !== undefined) return [...lines, `${indent}# ${name}: ${yamlValue(key.default)}`];
  if (!key.hasDefault) return [...lines, `${indent}# ${name}: ${yamlValue(key.example ?? '')}`];
  return [...lines, `${indent}${name}: ${yamlValue(key.secret ? '' : key.default)}`];
}

/**
 * The description plus what the schema knows besides: allowed values and secrecy; for the example
 * file also the default note and the variable, which the reference shows in columns of their own.
 */
export function describeKey(key: ConfigKey, target: 'example' | 'reference'): string {
  const example = target === 'example';
  const parts = [key.description];
  if (key.values) parts.push(`One of: ${key.values.join(', ')}.`);
  if (example && key.defaultNote) parts.push(`Default: ${key.defaultNote}.`);
  if (example && key.env) parts.push(`Environment: ${key.env}.`);
  if (key.secret)
    parts.push(
      `Secret: ${example ? 'leave it empty here and prefer' : 'prefer'} ${secretAlternatives(key).join(' or ')}.`,
    );
  return parts.filter((part) => part !== '').join(' ');
}

export function secretAlternatives(key: ConfigKey): string[] {
  const file = SECRET_KEYS.find((secret) => keyName(secret.value) === key.name)?.file;
  return [key.env, file && keyName(file)].filter((x): x is string => typeof x === 'string');
}

/** `# ` lines wrapped at WIDTH columns, counting the indentation. */
function comment(text: string, depth: number): string[] {
  const indent = '  '.repeat(depth);
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== '' && indent.length + 2 + line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines.map((l) => `${indent}# ${l}`);
}

/** A YAML scalar or flow list, quoted only when plain style would read as something else. */
export function yamlValue(value: unknown): string {
  if (value === undefined || value === null || value === '') return "''";
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(yamlValue).join(', ')}]`;
  const text = String(value);
  const plain =
    /^[A-Za-z0-9_/.][A-Za-z0-9_/.:@-]*$/.test(text) &&
    !/^(true|false|yes|no|on|off|null|~)$/i.test(text) &&
    Number.isNaN(Number(text));
  return plain ? text : `'${text.replace(/'/g, "''")}'`;
}
