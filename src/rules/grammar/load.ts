/**
 * Reads a rules folder: `default.yml` applies to every project that has no file of its own;
 * `<namespace>/<project>.yml` applies to that project and replaces the default, which it brings
 * back with `extends: [../default.yml]`. `extends` takes paths relative to the file, inside the
 * folder; other files (deeper folders, other names at the top) are only read through `extends`.
 *
 * Every file is validated and compiled once; a project's set shares the compiled rules of the
 * files it extends. Problems come back with `file:line:column`; when there are any, the caller
 * keeps its previous rules (a set that includes a broken file holds only its valid files' rules).
 * The problems are all of `hookbot check`'s (check.ts reports these very ones): a file the check
 * refuses is never taken by a running bot, and a file it passes always is.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { isMap, parseDocument } from 'yaml';
import { compileRule, ruleSet, type CompiledRule, type CompiledRuleSet } from '../engine/compile.ts';
import { closest } from '../../text/index.ts';
import { MAX_RULE_FILE_BYTES, parseRuleFile, tooLarge, type ParsedRuleFile } from './parse-file.ts';
import type { RuleSpec } from './schema.ts';
import { sortProblems, type Problem } from './problem.ts';
import { ruleProblems, setProblems, type PlacedRule } from './rule-problems.ts';

export interface RuleFolder {
  dir: string;
  /** By path relative to the folder, with `/` separators. */
  files: ReadonlyMap<string, ParsedRuleFile>;
  /** The files each file extends (resolved, existing ones only), in order. */
  extendsOf: ReadonlyMap<string, readonly string[]>;
  /** The default file's relative path, if any. */
  defaultFile: string | undefined;
  /** Lower-cased `namespace/project` to the project's file. */
  projectFiles: ReadonlyMap<string, string>;
  problems: Problem[];
}

const RULE_FILE = /\.ya?ml$/;
const PROJECT_FILE = /^([^/]+)\/([^/]+)\.ya?ml$/;
const DEFAULT_FILE = /^default\.ya?ml$/;

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const entries = await readdir(path.join(dir, prefix), { withFileTypes: true });
  const found: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name.startsWith('.')) continue;
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) found.push(...(await listFiles(dir, rel)));
    else if (entry.isFile() && RULE_FILE.test(entry.name)) found.push(rel);
  }
  return found;
}

/**
 * How a rule file is named in problems and explanations: as given, or, for an absolute path inside
 * the working directory (the configuration resolves its paths to absolute ones: config/paths.ts),
 * relative to it, as people type it and as `hookbot check rules` shows it.
 */
const display = (dir: string, rel: string): string => {
  const file = path.join(dir, rel);
  if (!path.isAbsolute(file)) return file;
  const inside = path.relative(process.cwd(), file);
  return inside !== '' && !inside.startsWith('..') && !path.isAbsolute(inside) ? inside : file;
};

/**
 * A file that defines no rules at all (empty, only comments, or no `rules:` key) is refused rather
 * than read as "no rules": it is almost always a mistake (a save cut short, the wrong file, the
 * rules commented out), and read silently it would leave every project it covers unattended while
 * `check` passed. `rules: []` says "none" on purpose and stays valid. A file with `extends` and no
 * `rules:` is fine too: it gathers the rules of the files it extends.
 */
/** A file refused for its size alone, unread. */
function tooLargeFile(file: string, size: number): ParsedRuleFile {
  return {
    file,
    spec: null,
    extends: [],
    problems: [tooLarge(file, size)],
    locate: () => ({ line: 1, column: 1 }),
  };
}

export function noRules(parsed: ParsedRuleFile, text: string): Problem | undefined {
  if (!parsed.spec || parsed.spec.rules.length > 0 || parsed.spec.extends !== undefined) return undefined;
  // Only a valid file with an empty list gets here: parse again to tell `rules: []` from no key.
  const contents = parseDocument(text).contents;
  if (isMap(contents) && contents.has('rules')) return undefined;
  return {
    file: parsed.file,
    line: 1,
    column: 1,
    message: 'no rules: the file defines no `rules:` list',
    hint: 'write `rules: []` to mean none on purpose',
  };
}

/** Why the rules folder cannot be listed, and what to give instead. */
function unreadableFolder(dir: string, error: unknown): { message: string; hint?: string } {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return { message: 'rules folder not found' };
  if (code === 'ENOTDIR') {
    const ruleFile = /\.ya?ml$/i.test(dir);
    return {
      message: 'is a file, not a rules folder',
      hint: ruleFile
        ? `give the folder that holds it, ${path.dirname(dir)}: the files of a folder are checked together, as extends joins them`
        : 'give the rules folder, which holds default.yml and <namespace>/<project>.yml files',
    };
  }
  if (code === 'EACCES') return { message: 'cannot read the rules folder: permission denied' };
  return { message: `cannot read the rules folder: ${code ?? String(error)}` };
}

export async function readRuleFolder(dir: string): Promise<RuleFolder> {
  const problems: Problem[] = [];
  let names: string[];
  try {
    names = await listFiles(dir);
  } catch (error) {
    problems.push({ file: dir, line: 1, column: 1, ...unreadableFolder(dir, error) });
    names = [];
  }

  const files = new Map<string, ParsedRuleFile>();
  for (const rel of names) {
    // Sized before it is read: a file over the limit is refused without being held (issue 28).
    const size = (await stat(path.join(dir, rel))).size;
    const text = size > MAX_RULE_FILE_BYTES ? '' : await readFile(path.join(dir, rel), 'utf8');
    const parsed =
      size > MAX_RULE_FILE_BYTES
        ? tooLargeFile(display(dir, rel), size)
        : parseRuleFile(text, display(dir, rel));
    files.set(rel, parsed);
    problems.push(...parsed.problems);
    const empty = noRules(parsed, text);
    if (empty) problems.push(empty);
  }

  let defaultFile: string | undefined;
  const projectFiles = new Map<string, string>();
  for (const rel of files.keys()) {
    const first = (other: string): Problem => ({
      file: display(dir, rel),
      line: 1,
      column: 1,
      message: `${rel} and ${other} are the same rules file written twice`,
      hint: 'keep one of them',
    });
    if (DEFAULT_FILE.test(rel)) {
      if (defaultFile !== undefined) problems.push(first(defaultFile));
      else defaultFile = rel;
      continue;
    }
    const project = PROJECT_FILE.exec(rel);
    if (!project) continue;
    const key = `${project[1]}/${project[2]}`.toLowerCase();
    const other = projectFiles.get(key);
    if (other !== undefined) problems.push(first(other));
    else projectFiles.set(key, rel);
  }

  const extendsOf = resolveExtends(dir, files, problems);
  problems.push(...findCycles(dir, files, extendsOf));
  return { dir, files, extendsOf, defaultFile, projectFiles, problems: sortProblems(problems) };
}

const resolveEntry = (rel: string, entry: string): string =>
  path.posix.normalize(path.posix.join(path.posix.dirname(rel), entry));

function resolveExtends(
  dir: string,
  files: ReadonlyMap<string, ParsedRuleFile>,
  problems: Problem[],
): Map<string, string[]> {
  const extendsOf = new Map<string, string[]>();
  for (const [rel, parsed] of files) {
    const targets: string[] = [];
    parsed.extends.forEach((entry, index) => {
      const at = parsed.locate(['extends', index]);
      const target = resolveEntry(rel, entry);
      if (path.posix.isAbsolute(entry) || target.startsWith('../') || target === '..') {
        problems.push({
          file: parsed.file,
          ...at,
          message: `extends "${entry}" points outside the rules folder`,
        });
        return;
      }
      if (!files.has(target)) {
        const near = closest(target, files.keys());
        const relative = near === undefined ? undefined : path.posix.relative(path.posix.dirname(rel), near);
        problems.push({
          file: parsed.file,
          ...at,
          message: `extends "${entry}": no such rules file (${display(dir, target)})`,
          ...(relative !== undefined ? { hint: `did you mean "${relative}"?` } : {}),
        });
        return;
      }
      targets.push(target);
    });
    extendsOf.set(rel, targets);
  }
  return extendsOf;
}

/** Each cycle once, at the `extends` entry that closes it. */
function findCycles(
  dir: string,
  files: ReadonlyMap<string, ParsedRuleFile>,
  extendsOf: ReadonlyMap<string, readonly string[]>,
): Problem[] {
  const problems: Problem[] = [];
  const state = new Map<string, 'active' | 'done'>();
  const stack: string[] = [];
  const visit = (rel: string): void => {
    state.set(rel, 'active');
    stack.push(rel);
    for (const target of extendsOf.get(rel) ?? []) {
      if (state.get(target) === 'active') {
        const cycle = [...stack.slice(stack.indexOf(target)), target];
        const parsed = files.get(rel);
        const index = (parsed?.extends ?? []).findIndex((entry) => resolveEntry(rel, entry) === target);
        const at = parsed?.locate(['extends', Math.max(index, 0)]) ?? { line: 1, column: 1 };
        problems.push({ file: display(dir, rel), ...at, message: `extends cycle: ${cycle.join(' -> ')}` });
      } else if (!state.has(target)) visit(target);
    }
    stack.pop();
    state.set(rel, 'done');
  };
  for (const rel of files.keys()) if (!state.has(rel)) visit(rel);
  return problems;
}

/** The files whose rules make up `rel`'s set, extended ones first, each once (cycles cut). */
export function effectiveFiles(folder: RuleFolder, rel: string): string[] {
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const target of folder.extendsOf.get(file) ?? []) visit(target);
    order.push(file);
  };
  visit(rel);
  return order;
}

/**
 * Compiles every valid file once; each rule stays with its place (for the problems of sets). The
 * rules valid on their own in a file that is not (`partialByFile`) are compiled too, for their
 * problems only: a set never takes them (a broken file never half-applies).
 */
export function compileFolder(folder: RuleFolder): {
  byFile: Map<string, PlacedRule[]>;
  partialByFile: Map<string, PlacedRule[]>;
  problems: Problem[];
} {
  const byFile = new Map<string, PlacedRule[]>();
  const partialByFile = new Map<string, PlacedRule[]>();
  const problems: Problem[] = [];
  const place = (parsed: ParsedRuleFile, spec: RuleSpec, index: number): PlacedRule => {
    const at = parsed.locate(['rules', index]);
    let compiled: CompiledRule | undefined;
    try {
      compiled = compileRule(spec, { file: parsed.file, ...at });
    } catch (error) {
      // Validation should have caught it; say so rather than crash the reload.
      problems.push({
        file: parsed.file,
        ...at,
        message: `cannot compile rule "${spec.name}": ${(error as Error).message}`,
      });
    }
    return { parsed, index, spec, compiled };
  };
  for (const [rel, parsed] of folder.files) {
    if (parsed.spec)
      byFile.set(
        rel,
        parsed.spec.rules.map((spec, index) => place(parsed, spec, index)),
      );
    else if (parsed.validRules?.length)
      partialByFile.set(
        rel,
        parsed.validRules.map((rule) => place(parsed, rule.spec, rule.index)),
      );
  }
  return { byFile, partialByFile, problems };
}

/**
 * Every problem of the folder, sorted: the files' own, then each rule's meaning, then each set as
 * a project would get it, with every file as the root of a set (the default, each project's, and
 * fragments on their own: a fragment is checked even before a project extends it).
 */
function folderProblems(folder: RuleFolder, compiled: ReturnType<typeof compileFolder>): Problem[] {
  const problems = [...folder.problems, ...compiled.problems];
  // Here a broken file's rules that are valid on their own count too: every problem is reported.
  const placedOf = (rel: string): PlacedRule[] =>
    effectiveFiles(folder, rel).flatMap(
      (file) => compiled.byFile.get(file) ?? compiled.partialByFile.get(file) ?? [],
    );
  for (const rules of [...compiled.byFile.values(), ...compiled.partialByFile.values()])
    problems.push(...rules.flatMap(ruleProblems));
  for (const rel of folder.files.keys()) problems.push(...setProblems(placedOf(rel)));
  return sortProblems(problems);
}

export interface LoadedRules {
  /** The rules for a project (`namespace/project`, case-insensitive). */
  byProject(pathWithNamespace: string): CompiledRuleSet;
  /** Every problem, sorted; empty when everything loaded. */
  problems: Problem[];
  /** The files read, relative to the folder. */
  files: string[];
}

export async function loadRules(dir: string): Promise<LoadedRules> {
  const folder = await readRuleFolder(dir);
  const compiled = compileFolder(folder);
  const placedOf = (rel: string): PlacedRule[] =>
    effectiveFiles(folder, rel).flatMap((file) => compiled.byFile.get(file) ?? []);
  const setOf = (rel: string): CompiledRuleSet =>
    ruleSet(placedOf(rel).flatMap((placed) => (placed.compiled ? [placed.compiled] : [])));
  const empty = ruleSet([]);
  const fallback = folder.defaultFile === undefined ? empty : setOf(folder.defaultFile);
  const projects = new Map([...folder.projectFiles].map(([key, rel]) => [key, setOf(rel)]));
  return {
    byProject: (pathWithNamespace) => projects.get(pathWithNamespace.toLowerCase()) ?? fallback,
    problems: folderProblems(folder, compiled),
    files: [...folder.files.keys()],
  };
}
