/**
 * One rule file, from text to a validated spec, with every problem at its line and column. Pure:
 * load.ts reads the files, `simulate` and the tests call this on text.
 */
import { Composer, LineCounter, Parser, YAMLParseError, type CST, type Document } from 'yaml';
import { lexicalBound, structuralBound } from './parse-bounds.ts';
import type { Problem } from './problem.ts';
import { ruleFileSchema, ruleSchema, type RuleFileSpec, type RuleSpec } from './schema.ts';
import { explainIssues } from './validation-messages.ts';
import { locate, type Position, type ValuePath } from './yaml-positions.ts';

export interface ParsedRuleFile {
  /** As given (a path the user recognises: `rules/acme/web.yml`). */
  file: string;
  /** Null when the file has problems. */
  spec: RuleFileSpec | null;
  /** `extends` as written, read even when the rest of the file is invalid (to report every problem). */
  extends: readonly string[];
  problems: Problem[];
  /**
   * When the file is invalid (`spec` null): its rules that are valid on their own, with their index
   * in `rules`, so that their meaning is checked too (`hookbot check` reports every problem, not
   * only the grammar's). Absent when the file is valid or was not read as far as its rules.
   */
  validRules?: readonly { index: number; spec: RuleSpec }[];
  /** Where a path of the value is in the text. */
  locate(path: ValuePath, key?: string): Position;
}

/** Grammar problems explained one by one at most; the rest of a file gone wrong is counted. */
const MAX_PROBLEMS_LISTED = 200;

/** Aliases can expand a small file into a huge value ("billion laughs"): stop early. */
const MAX_ALIAS_COUNT = 100;

/**
 * A rule file holds rules, not data: past 256 KB it is refused before it is parsed (a repository's
 * `.hookbot.yml` is read from the server, and a huge one would only cost the bot memory).
 */
export const MAX_RULE_FILE_BYTES = 256 * 1024;

/**
 * The problem of a file over the limit (`size` in bytes), at its first line. Without `size`: a file
 * whose reading was stopped at the limit, its size unknown.
 */
export function tooLarge(file: string, size?: number): Problem {
  const limit = `${MAX_RULE_FILE_BYTES / 1024} KB`;
  return {
    file,
    line: 1,
    column: 1,
    message:
      size === undefined
        ? `the file is over the ${limit} limit of a rule file (not read past it)`
        : `the file is ${Math.ceil(size / 1024)} KB, over the ${limit} limit of a rule file`,
    hint: 'split it, or move what is not rules elsewhere',
  };
}

/** Line and column (1-based) of an offset, without a parse. */
function positionAt(text: string, offset: number): Position {
  let line = 1;
  let start = 0;
  for (let at = text.indexOf('\n'); at !== -1 && at < offset; at = text.indexOf('\n', at + 1)) {
    line++;
    start = at + 1;
  }
  return { line, column: offset - start + 1 };
}

/** What `parseDocument` does, from tokens already read: the first document, and an error for more. */
function compose(tokens: readonly CST.Token[], length: number): Document.Parsed {
  const composer = new Composer({ prettyErrors: false, uniqueKeys: true });
  let doc: Document.Parsed | undefined;
  for (const next of composer.compose(tokens, true, length)) {
    if (!doc) doc = next;
    else {
      doc.errors.push(
        new YAMLParseError(
          [next.range[0], next.range[1]],
          'MULTIPLE_DOCS',
          'Source contains multiple documents; please use YAML.parseAllDocuments()',
        ),
      );
      break;
    }
  }
  return doc!;
}

/**
 * `onDocument`: handed the document once composed (within the bounds), for a caller that needs more
 * of it than `locate` (parse-transfer.ts, to carry positions out of a worker thread).
 */
export function parseRuleFile(
  text: string,
  file: string,
  onDocument?: (doc: Document.Parsed, lines: LineCounter) => void,
): ParsedRuleFile {
  const size = Buffer.byteLength(text, 'utf8');
  if (size > MAX_RULE_FILE_BYTES)
    return {
      file,
      spec: null,
      extends: [],
      problems: [tooLarge(file, size)],
      locate: () => ({ line: 1, column: 1 }),
    };
  const lines = new LineCounter();
  // The parse work is bounded before it is done (parse-bounds.ts): tokens and brackets by the lexer,
  // keys per mapping and depth on the parser's first pass, before a document is built from it.
  const lexical = lexicalBound(text);
  const tokens: CST.Token[] = lexical ? [] : [...new Parser(lines.addNewLine).parse(text)];
  const exceeded = lexical ?? structuralBound(tokens);
  if (exceeded) {
    const { line, column } = positionAt(text, exceeded.offset);
    return {
      file,
      spec: null,
      extends: [],
      problems: [{ file, line, column, message: exceeded.message, hint: exceeded.hint }],
      locate: () => ({ line: 1, column: 1 }),
    };
  }
  const doc = compose(tokens, text.length);
  onDocument?.(doc, lines);
  const at = (path: ValuePath, key?: string): Position => locate(doc, lines, path, key);
  const problemAt = (position: Position, message: string, hint?: string): Problem => ({
    file,
    ...position,
    message,
    ...(hint ? { hint } : {}),
  });

  if (doc.errors.length > 0) {
    const problems = doc.errors.map((error) => {
      const { line, col } = lines.linePos(error.pos[0]);
      return problemAt(
        { line, column: col },
        `YAML: ${error.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}`,
      );
    });
    return { file, spec: null, extends: [], problems, locate: at };
  }

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) ?? {};
  } catch (error) {
    return {
      file,
      spec: null,
      extends: [],
      problems: [problemAt({ line: 1, column: 1 }, `YAML: ${(error as Error).message}`)],
      locate: at,
    };
  }

  const written = (value as { extends?: unknown }).extends;
  const extendsList =
    typeof written === 'string'
      ? [written]
      : Array.isArray(written)
        ? written.filter((e) => typeof e === 'string')
        : [];
  const parsed = ruleFileSchema.safeParse(value);
  if (parsed.success) return { file, spec: parsed.data, extends: extendsList, problems: [], locate: at };
  // Each problem is explained and placed; past the first MAX_PROBLEMS_LISTED the rest are counted.
  const issues = parsed.error.issues;
  const problems = explainIssues(issues.slice(0, MAX_PROBLEMS_LISTED), value).map((issue) =>
    problemAt(at(issue.path, issue.key), issue.message, issue.hint),
  );
  if (issues.length > MAX_PROBLEMS_LISTED) {
    const rest = issues[MAX_PROBLEMS_LISTED]!;
    problems.push({
      ...problemAt(
        at(rest.path.filter((segment) => typeof segment !== 'symbol')),
        `and ${issues.length - MAX_PROBLEMS_LISTED} more problems of the same kinds from here on (the first ${MAX_PROBLEMS_LISTED} are listed)`,
      ),
      omitted: issues.length - MAX_PROBLEMS_LISTED,
    });
  }
  return { file, spec: null, extends: extendsList, problems, validRules: rulesValidAlone(value), locate: at };
}

/** The rules of a file that is invalid as a whole which are valid each on its own. */
function rulesValidAlone(value: unknown): { index: number; spec: RuleSpec }[] {
  const rules =
    typeof value === 'object' && value !== null ? (value as { rules?: unknown }).rules : undefined;
  if (!Array.isArray(rules)) return [];
  return rules.flatMap((rule: unknown, index) => {
    const one = ruleSchema.safeParse(rule);
    return one.success ? [{ index, spec: one.data }] : [];
  });
}
