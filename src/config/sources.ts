/**
 * Where each configuration value came from, so that a message (and `hookbot config`-style output)
 * can point at the line to fix or the variable to change. A key with no entry has its default.
 */
import type { KeyPath } from './yaml-source.ts';

export type ConfigSource =
  | { from: 'file'; file: string; line: number; column: number }
  | { from: 'env'; name: string }
  /** A secret read from a file; `setBy` says who named the file (a variable or a file position). */
  | { from: 'secret_file'; path: string; setBy?: ConfigSource };

/** Keyed by dotted key name (`api.token`, `hooks.projects`). */
export type ConfigSources = Record<string, ConfigSource>;

export function describeSource(source: ConfigSource | undefined): string {
  if (source === undefined) return 'default';
  switch (source.from) {
    case 'file':
      return `${source.file}:${source.line}:${source.column}`;
    case 'env':
      return `environment variable ${source.name}`;
    case 'secret_file':
      return source.setBy
        ? `file ${source.path} (named by ${describeSource(source.setBy)})`
        : `file ${source.path}`;
  }
}

/** `hooks.projects[1]`, `server.port` */
export function keyName(path: KeyPath): string {
  let name = '';
  for (const segment of path)
    name += typeof segment === 'number' ? `[${segment}]` : name === '' ? segment : `.${segment}`;
  return name;
}

/** Something wrong with one key; `key` is empty for problems that name their key in the message. */
export interface Problem {
  key: string;
  message: string;
  source?: ConfigSource | undefined;
}

/**
 * One line per problem, `key: problem`, led by the file position when the value is written in
 * the file, and naming the variable when one set it.
 */
export function formatProblem({ key, message, source }: Problem): string {
  const line = key === '' ? message : `${key}: ${message}`;
  if (source?.from === 'file') return `${describeSource(source)}: ${line}`;
  if (source?.from === 'env') return `${line} (set by ${source.name})`;
  return line;
}

/** Problems in the file first, top to bottom as an editor shows them; then the rest as found. */
export function sortProblems(problems: readonly Problem[]): Problem[] {
  const line = (p: Problem) => (p.source?.from === 'file' ? p.source.line : Number.POSITIVE_INFINITY);
  const column = (p: Problem) => (p.source?.from === 'file' ? p.source.column : 0);
  // Array.prototype.sort is stable, so problems without a position keep their order.
  return [...problems].sort((a, b) => line(a) - line(b) || column(a) - column(b));
}
