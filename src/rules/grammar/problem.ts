/** A problem in a rule file, at a place: printed `file:line:column: message (hint)`. */

export interface Problem {
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  message: string;
  hint?: string;
}

export function formatProblem(problem: Problem): string {
  const hint = problem.hint ? ` (${problem.hint})` : '';
  return `${problem.file}:${problem.line}:${problem.column}: ${problem.message}${hint}`;
}

/** By file, then position; the same problem reported twice (through two rule sets) once. */
export function sortProblems(problems: readonly Problem[]): Problem[] {
  const seen = new Set<string>();
  return [...problems]
    .sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column)
    .filter((problem) => {
      const key = formatProblem(problem);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}
