/**
 * No room too big to hold in one's head (issue 39): every file of src/ stays under
 * MAX_FILE_LINES lines and every function under MAX_OWN_LINES lines of its own. A function's own
 * lines are its lines less the bodies of the functions nested in it (each nested one counts
 * for its first line only, where the outer function names or passes it): a factory that returns
 * an object of methods is measured by what it does itself, each method by its own.
 *
 * Over a limit, split the file along its seams (docs/architecture.md, "Module map") or the
 * function into named steps; do not raise the limits. The exceptions are named below, each
 * with why.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/docs-tables.ts';

const MAX_FILE_LINES = 600;
const MAX_OWN_LINES = 150;

/** Files allowed past MAX_FILE_LINES (and their functions past MAX_OWN_LINES), for now. */
const FILES_ALLOWED = new Set<string>([
  // None: merge-queue.ts and merge-train.ts, the last two, were split along their seams (issue 38).
]);

/** Functions allowed past MAX_OWN_LINES: `file#function`. */
const FUNCTIONS_ALLOWED = new Set([
  // A declaration, not a procedure: the configuration schema, one key after the other, each with
  // its default, variable and description (what docs/configuration.md is generated from).
  'src/config/schema.ts#createConfigSchema',
]);

function sourceFiles(): string[] {
  return readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .sort();
}

function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

type FunctionWithBody = ts.FunctionLikeDeclaration & { body: ts.Node };

function hasBody(node: ts.Node): node is FunctionWithBody {
  return ts.isFunctionLike(node) && 'body' in node && node.body !== undefined;
}

/** What a reader calls the function: its name, the variable or property it is given to, or where it is. */
function nameOf(node: FunctionWithBody, file: ts.SourceFile): string {
  const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
  if (ts.isConstructorDeclaration(node)) {
    const owner = node.parent.name?.text ?? 'class';
    return `${owner}.constructor`;
  }
  if (node.name !== undefined) {
    const name = node.name.getText(file);
    const owner = ts.isClassLike(node.parent) ? node.parent.name?.text : undefined;
    return owner === undefined ? name : `${owner}.${name}`;
  }
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name !== undefined)
    return parent.name.getText(file);
  return `(anonymous function at line ${line})`;
}

interface Measured {
  name: string;
  line: number;
  own: number;
}

/** Every function of `file` with its own lines. */
function functionsOf(file: ts.SourceFile): Measured[] {
  const lines = (node: ts.Node) =>
    file.getLineAndCharacterOfPosition(node.getEnd()).line -
    file.getLineAndCharacterOfPosition(node.getStart(file)).line +
    1;
  const found: Measured[] = [];
  const visit = (node: ts.Node): void => {
    if (hasBody(node)) {
      let own = lines(node);
      const nested = (inner: ts.Node): void => {
        if (hasBody(inner)) own -= lines(inner.body) - 1;
        else ts.forEachChild(inner, nested);
      };
      ts.forEachChild(node.body, nested);
      found.push({
        name: nameOf(node, file),
        line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1,
        own,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

const files = sourceFiles().map((name) => {
  const text = readFileSync(path.join(ROOT, name), 'utf8');
  return { name, text, source: ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true) };
});

describe("sizes: no room too big to hold in one's head (issue 39)", () => {
  it('reads the source files and their functions', () => {
    expect(files.length).toBeGreaterThan(100);
    const measured = functionsOf(files.find((f) => f.name === 'src/config/schema.ts')!.source);
    expect(measured.map((m) => m.name)).toContain('createConfigSchema');
  });

  it(`every file of src/ is at most ${MAX_FILE_LINES} lines`, () => {
    const over = files
      .filter((file) => !FILES_ALLOWED.has(file.name))
      .map((file) => ({ file: file.name, lines: lineCount(file.text) }))
      .filter((file) => file.lines > MAX_FILE_LINES)
      .map(
        ({ file, lines }) =>
          `${file} has ${lines} lines (the limit is ${MAX_FILE_LINES}): split it into several files along its seams, in the same folder, behind the folder's index.ts`,
      );
    expect(over, over.join('\n')).toEqual([]);
  });

  it(`every function of src/ is at most ${MAX_OWN_LINES} lines of its own`, () => {
    const over = files
      .filter((file) => !FILES_ALLOWED.has(file.name))
      .flatMap((file) => functionsOf(file.source).map((fn) => ({ file: file.name, ...fn })))
      .filter((fn) => fn.own > MAX_OWN_LINES && !FUNCTIONS_ALLOWED.has(`${fn.file}#${fn.name}`))
      .map(
        (fn) =>
          `${fn.file}:${fn.line} ${fn.name} has ${fn.own} lines of its own (the limit is ${MAX_OWN_LINES}, nested function bodies not counted): split it into named steps, functions that each do one thing`,
      );
    expect(over, over.join('\n')).toEqual([]);
  });

  it('the exceptions still exist (remove one once it is gone)', () => {
    const names = new Set(files.map((file) => file.name));
    for (const file of FILES_ALLOWED)
      expect(names, `${file} is gone: remove it from FILES_ALLOWED`).toContain(file);
    for (const entry of FUNCTIONS_ALLOWED) {
      const [fileName, fn] = entry.split('#') as [string, string];
      const file = files.find((f) => f.name === fileName);
      expect(file, `${fileName} is gone: remove ${entry} from FUNCTIONS_ALLOWED`).toBeDefined();
      expect(
        functionsOf(file!.source).map((m) => m.name),
        `${entry} is gone: remove it from FUNCTIONS_ALLOWED`,
      ).toContain(fn);
    }
  });
});
