/**
 * `hookbot check`: every problem of a rules folder, as `file:line:column: message (hint)`. What
 * loading finds (YAML, grammar, regular expressions, templates, extends, files that define no
 * rules), plus what only shows in the meaning of a rule or in the set of rules a project gets
 * (rule-problems.ts): duplicate names, label toggles that would fight, conditions and actions that
 * can never apply to the rule's items, merges that could never be planned, rules that feed one
 * queue with a different `depth` or `batch`.
 *
 * These are the loader's own problems, not a second validation: whatever `check` reports, a running
 * bot refuses (keeping its last good rules), and whatever it passes, the bot takes.
 */
import { loadRules } from './load.ts';
import { formatProblem, type Problem } from './problem.ts';

/** Every problem in the folder, sorted by file and position. */
export async function checkRules(dir: string): Promise<Problem[]> {
  return (await loadRules(dir)).problems;
}

/** The problems as the CLI prints them, one a line. */
export function formatProblems(problems: readonly Problem[]): string {
  return problems.map(formatProblem).join('\n');
}
