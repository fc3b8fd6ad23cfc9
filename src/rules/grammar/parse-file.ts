/**
 * One rule file, from text to a validated spec, with every problem at its line and column. Pure:
 * load.ts reads the files, `simulate` and the tests call this on text.
 */
import { LineCounter, parseDocument } from 'yaml';
import type { Problem } from './problem.ts';
import { ruleFileSchema, type RuleFileSpec } from './schema.ts';
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
  /** Where a path of the value is in the text. */
  locate(path: ValuePath, key?: string): Position;
}

/** Aliases can expand a small file into a huge value ("billion laughs"): stop early. */
const MAX_ALIAS_COUNT = 100;

/**
 * A rule file holds rules, not data: past 256 KB it is refused before it is parsed (a repository's
 * `.hookbot.yml` is read from the server, and a huge one would only cost the bot memory).
 */
export const MAX_RULE_FILE_BYTES = 256 * 1024;

/** The problem of a file over the limit (`size` in bytes), at its first line. */
export function tooLarge(file: string, size: number): Problem {
  return {
    file,
    line: 1,
    column: 1,
    message: `the file is ${Math.ceil(size / 1024)} KB, over the ${MAX_RULE_FILE_BYTES / 1024} KB limit of a rule file`,
    hint: 'split it, or move what is not rules elsewhere',
  };
}

export function parseRuleFile(text: string, file: string): ParsedRuleFile {
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
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
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
  const problems = explainIssues(parsed.error.issues, value).map((issue) =>
    problemAt(at(issue.path, issue.key), issue.message, issue.hint),
  );
  return { file, spec: null, extends: extendsList, problems, locate: at };
}
