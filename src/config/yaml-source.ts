/**
 * The configuration file, parsed once with positions kept, so that every problem can say where
 * it is: `config.yml:12:9: server.port: must be an integer between 0 and 65535`.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';

export interface Position {
  line: number;
  column: number;
}

export type KeyPath = readonly (string | number)[];

export interface YamlSource {
  file: string;
  /** The file's content as plain data; `{}` for an empty file. */
  data: unknown;
  /** Where the value at `path` is written; undefined when the file does not set it. */
  valueAt(path: KeyPath): Position | undefined;
  /** Where the key at `path` is written (for unknown keys); undefined when absent. */
  keyAt(path: KeyPath): Position | undefined;
}

export type YamlParseResult = { ok: true; source: YamlSource } | { ok: false; problems: string[] };

interface Ranged {
  range?: readonly [number, number, number] | null;
}

const startOf = (node: unknown): number | undefined => (node as Ranged | null)?.range?.[0];

const keyName = (key: unknown): string | undefined =>
  isScalar(key) ? String(key.value) : typeof key === 'string' ? key : undefined;

/** `file` is used only to name the place in messages. */
export function parseYamlSource(file: string, text: string): YamlParseResult {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number): string => {
    const { line, col } = lines.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  // A syntax error makes every later message doubtful: report the syntax errors alone.
  if (doc.errors.length > 0)
    return { ok: false, problems: doc.errors.map((e) => `${at(e.pos[0])}: ${e.message}`) };
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (error) {
    // e.g. an alias to an anchor that is not defined
    return { ok: false, problems: [`${file}: ${error instanceof Error ? error.message : String(error)}`] };
  }
  const position = (offset: number | undefined): Position | undefined => {
    if (offset === undefined) return undefined;
    const { line, col } = lines.linePos(offset);
    return { line, column: col };
  };
  return {
    ok: true,
    source: {
      file,
      data,
      valueAt: (path) => {
        const found = walk(doc, path);
        // `port:` with nothing after it: the value has no place of its own, its key does.
        return found && position(startOf(found.value) ?? startOf(found.key));
      },
      keyAt: (path) => {
        const found = walk(doc, path);
        return found && position(startOf(found.key) ?? startOf(found.value));
      },
    },
  };
}

function walk(doc: Document, path: KeyPath): { key: unknown; value: unknown } | undefined {
  let found: { key: unknown; value: unknown } = { key: undefined, value: doc.contents };
  for (const segment of path) {
    const node = found.value;
    if (isMap(node)) {
      const pair = node.items.find((item) => keyName(item.key) === String(segment));
      if (!pair) return undefined;
      found = { key: pair.key, value: pair.value };
    } else if (isSeq(node) && typeof segment === 'number') {
      const item: unknown = node.items[segment];
      if (item === undefined) return undefined;
      found = { key: undefined, value: item };
    } else return undefined;
  }
  return found;
}
