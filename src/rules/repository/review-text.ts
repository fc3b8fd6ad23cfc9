/**
 * What the bot says of a project's `.hookbot.yml` (repository-rules.ts): a problem as the status
 * and the comment show it, and the comment on a merge request that changes the file (its problems,
 * or the plan, or why the plan waits).
 */
import { counted } from '../../text/index.ts';
import { problemCount, type Problem } from '../grammar/problem.ts';
import { planLines, type PlanReport } from './plan.ts';
import { readerText, type Reader } from './plan-access.ts';
import type { PlanWait } from './plan-limit.ts';
import { REPOSITORY_FILE } from './repository-file.ts';

/** The hidden marker of the bot's plan comment on a merge request. */
export const PLAN_MARKER = '<!-- hookbot:repository-rules-plan -->';

/** `3:7: message (hint)`: a problem without its file, as the status and the comment show it. */
export function problemText(problem: Problem): string {
  return `${problem.line}:${problem.column}: ${problem.message}${problem.hint ? ` (${problem.hint})` : ''}`;
}

/**
 * ` that @alice (reporter) may read`: who the plan was computed for (plan-access.ts). Several: the
 * author and whoever may push to the fork, who must all be able to read an item for it to count.
 */
function readersText(readers: readonly Reader[] | undefined): string {
  if (!readers || readers.length === 0) return '';
  const shown = readers.slice(0, 5).map(readerText);
  if (readers.length > 5) shown.push(`${readers.length - 5} more`);
  if (shown.length === 1) return ` that ${shown[0]} may read (nothing else is evaluated)`;
  return ` that ${shown.join(', ')} may all read (the author and whoever may push to the source branch; nothing else is evaluated)`;
}

/** Why a merge request's plan waits, for whom, and whether a timer will compute it. */
export interface Waiting extends PlanWait {
  author: string;
  scheduled: boolean;
}

/** `2026-05-04 14:05 UTC`: when a plan that waits will be computed. */
export const clock = (ms: number): string =>
  `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** Why a plan waits: `@alice had 10 plans in the last hour (at most 10 per author, rules.repository.plan_per_author_hour)`. */
export function waitText(wait: Waiting): string {
  const plans = `${wait.limit} plan${wait.limit === 1 ? '' : 's'}`;
  return wait.by === 'author'
    ? `@${wait.author} had ${plans} computed in the last hour (at most ${wait.limit} per author, rules.repository.plan_per_author_hour)`
    : `this merge request had ${plans} computed in the last hour (at most ${wait.limit} per merge request, rules.repository.plan_per_merge_request_hour)`;
}

/** The bot's comment on a merge request that changes the file: its problems, or the plan, or why the plan waits. */
export function commentBody(
  head: string,
  problems: readonly Problem[],
  plan: PlanReport | undefined,
  branches: { target: string; default: string | null },
  wait?: Waiting,
): string {
  const lines = [
    `**hookbot** checked \`${REPOSITORY_FILE}\` as this merge request changes it (head ${head.slice(0, 8)}).`,
    '',
  ];
  if (branches.default !== null && branches.target !== branches.default)
    lines.push(
      `This merge request targets \`${branches.target}\`: the rules are read from the default branch, \`${branches.default}\`, so merging it changes no rules until the file reaches \`${branches.default}\`.`,
      '',
    );
  if (problems.length > 0) {
    lines.push(
      `**${counted(problemCount(problems), 'problem')}**: merged as it is, the file would be refused and the rules in force would stay.`,
      '',
      ...problems.map((problem) => `- \`${problemText(problem)}\``),
    );
  } else if (plan) {
    lines.push(
      `**No problems.** The plan: the proposed rules, evaluated in dry run on the ${plan.evaluated} open issues and merge requests of ${plan.project}${readersText(plan.readers)}, next to the rules in force:`,
      '',
      ...planLines(plan).map((line) => `- ${line}`),
    );
  } else if (wait) {
    lines.push(
      `**No problems.** The plan was not computed: ${waitText(wait)}. ${
        wait.scheduled
          ? `It will be computed at ${clock(wait.until)}, and this comment updated then.`
          : `It will be computed at the next push after ${clock(wait.until)}.`
      }`,
    );
  }
  lines.push('', `_This comment is updated on each push._ ${PLAN_MARKER}`);
  return lines.join('\n');
}
