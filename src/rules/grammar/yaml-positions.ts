/** From a path in the parsed value (`rules.0.do.1`) to a line and column in the YAML text. */
import { isMap, isScalar, isSeq, type Document, type LineCounter } from 'yaml';

export interface Position {
  line: number;
  column: number;
}

export type ValuePath = readonly (string | number)[];

interface Ranged {
  range?: readonly [number, number, number] | null;
}

const startOf = (node: unknown): number | undefined => (node as Ranged | null)?.range?.[0];

const keyName = (key: unknown): string | undefined =>
  isScalar(key) ? String(key.value) : typeof key === 'string' ? key : undefined;

/**
 * The deepest node along `path` that exists (a missing key is reported where its parent is); with
 * `key`, the position of that key inside the node (for unknown keys).
 */
export function locate(doc: Document, lines: LineCounter, path: ValuePath, key?: string): Position {
  let node: unknown = doc.contents;
  let offset = startOf(node) ?? 0;
  for (const segment of path) {
    if (isMap(node)) {
      const pair = node.items.find((item) => keyName(item.key) === String(segment));
      if (!pair) break;
      // `title:` with no value: point at the key.
      const value = pair.value;
      offset = startOf(value) ?? startOf(pair.key) ?? offset;
      node = value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item: unknown = node.items[segment];
      if (item === undefined) break;
      offset = startOf(item) ?? offset;
      node = item;
    } else break;
  }
  if (key !== undefined && isMap(node)) {
    const pair = node.items.find((item) => keyName(item.key) === key);
    offset = startOf(pair?.key) ?? offset;
  }
  const { line, col } = lines.linePos(offset);
  return { line, column: col };
}
