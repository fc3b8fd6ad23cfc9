/**
 * A parsed rule file as plain data, to cross from a worker thread (parse-off-thread.ts) to the
 * thread that answers hooks: the spec, the problems, and every position `locate` can be asked for,
 * as a table. `locate` on the table answers what yaml-positions.ts answers on the document: the
 * deepest node along the path that exists, or a key inside it.
 */
import { isMap, isScalar, isSeq, type Document, type LineCounter } from 'yaml';
import { parseRuleFile, type ParsedRuleFile } from './parse-file.ts';
import type { Position, ValuePath } from './yaml-positions.ts';

/** A node's position and whether a path may go on into it by key (a mapping) or index (a list). */
type Placed = [path: string, line: number, column: number, kind: 'map' | 'seq' | 'leaf'];
/** A key's position inside the mapping at `path`. */
type PlacedKey = [path: string, key: string, line: number, column: number];

export interface TransferredParse {
  file: string;
  spec: ParsedRuleFile['spec'];
  extends: readonly string[];
  problems: ParsedRuleFile['problems'];
  validRules?: ParsedRuleFile['validRules'];
  /** Empty unless the file is valid or has rules valid on their own (positions are asked for only then, by the checks after parsing). */
  nodes: Placed[];
  keys: PlacedKey[];
}

const startOf = (node: unknown): number | undefined =>
  (node as { range?: readonly number[] | null } | null)?.range?.[0];

const keyName = (key: unknown): string | undefined =>
  isScalar(key) ? String(key.value) : typeof key === 'string' ? key : undefined;

const pathKey = (path: readonly (string | number)[]): string => JSON.stringify(path);

/** Parses and carries out what the other side needs. */
export function parseForTransfer(text: string, file: string): TransferredParse {
  let table: { nodes: Placed[]; keys: PlacedKey[] } = { nodes: [], keys: [] };
  let found: { doc: Document.Parsed; lines: LineCounter } | undefined;
  const parsed = parseRuleFile(text, file, (doc, lines) => {
    found = { doc, lines };
  });
  if ((parsed.spec || parsed.validRules?.length) && found) table = positionTable(found.doc, found.lines);
  return {
    file,
    spec: parsed.spec,
    extends: parsed.extends,
    problems: parsed.problems,
    ...(parsed.validRules ? { validRules: parsed.validRules } : {}),
    ...table,
  };
}

/** Every node's position by its path (mapping keys as strings, list indexes as numbers). */
function positionTable(doc: Document.Parsed, lines: LineCounter): { nodes: Placed[]; keys: PlacedKey[] } {
  const nodes: Placed[] = [];
  const keys: PlacedKey[] = [];
  const at = (offset: number): [number, number] => {
    const { line, col } = lines.linePos(offset);
    return [line, col];
  };
  const kindOf = (node: unknown): Placed[3] => (isMap(node) ? 'map' : isSeq(node) ? 'seq' : 'leaf');
  // The parse bounds keep the depth at 64 and the nodes at 20,000: a plain walk with a stack.
  const stack: { node: unknown; path: (string | number)[]; offset: number }[] = [
    { node: doc.contents, path: [], offset: startOf(doc.contents) ?? 0 },
  ];
  while (stack.length > 0) {
    const { node, path, offset } = stack.pop()!;
    nodes.push([pathKey(path), ...at(offset), kindOf(node)]);
    if (isMap(node))
      for (const pair of node.items) {
        const name = keyName(pair.key);
        if (name === undefined) continue;
        const keyAt = startOf(pair.key);
        if (keyAt !== undefined) keys.push([pathKey(path), name, ...at(keyAt)]);
        stack.push({
          node: pair.value,
          path: [...path, name],
          offset: startOf(pair.value) ?? keyAt ?? offset,
        });
      }
    else if (isSeq(node))
      node.items.forEach((item, index) =>
        stack.push({ node: item, path: [...path, index], offset: startOf(item) ?? offset }),
      );
  }
  return { nodes, keys };
}

/** The parsed file again, its `locate` answering from the table. */
export function fromTransfer(transferred: TransferredParse): ParsedRuleFile {
  const nodes = new Map(
    transferred.nodes.map(([path, line, column, kind]) => [path, { line, column, kind }]),
  );
  const keys = new Map(
    transferred.keys.map(([path, key, line, column]) => [`${path}\0${key}`, { line, column }]),
  );
  const locate = (path: ValuePath, key?: string): Position => {
    const walked: (string | number)[] = [];
    let node = nodes.get(pathKey(walked));
    if (!node) return { line: 1, column: 1 };
    for (const segment of path) {
      const step = node.kind === 'map' ? String(segment) : node.kind === 'seq' ? segment : undefined;
      if (step === undefined || (node.kind === 'seq' && typeof step !== 'number')) break;
      const next = nodes.get(pathKey([...walked, step]));
      if (!next) break;
      walked.push(step);
      node = next;
    }
    const inside =
      key !== undefined && node.kind === 'map' ? keys.get(`${pathKey(walked)}\0${key}`) : undefined;
    return inside ?? { line: node.line, column: node.column };
  };
  return {
    file: transferred.file,
    spec: transferred.spec,
    extends: transferred.extends,
    problems: transferred.problems,
    ...(transferred.validRules ? { validRules: transferred.validRules } : {}),
    locate,
  };
}
