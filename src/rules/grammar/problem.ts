/** A problem in a rule file, at a place: printed `file:line:column: message (hint)`. */

export interface Problem {
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  message: string;
  hint?: string;
  /** Set on the line that stands for problems left out past a bound: how many it stands for. */
  omitted?: number;
}

/** How many problems a list stands for: its own, plus those its bound lines say were left out. */
export function problemCount(problems: readonly Problem[]): number {
  return problems.reduce((sum, problem) => sum + (problem.omitted ?? 1), 0);
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

/**
 * The first `max` problems, and one more saying how many are left out, at the first of those: what
 * a comment, a status page or a log line shows of a file gone wrong (a bound, issue 28: a hostile
 * file once made a 2.4 MB comment of 32,806 problems).
 */
export function firstProblems(problems: readonly Problem[], max: number): Problem[] {
  if (problems.length <= max) return [...problems];
  const rest = problems[max]!;
  const omitted = problemCount(problems.slice(max));
  return [
    ...problems.slice(0, max),
    {
      file: rest.file,
      line: rest.line,
      column: rest.column,
      omitted,
      message: `and ${omitted} more problems (the first ${max} are shown)`,
      hint: `run hookbot check on the file for the full list`,
    },
  ];
}
