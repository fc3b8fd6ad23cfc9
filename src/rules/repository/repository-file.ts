/**
 * A project's own `.hookbot.yml`, from text to compiled rules, with every problem at its line and
 * column: the grammar of the rules folder (parse-file.ts, the same messages as `hookbot check`:
 * YAML, tabs, alias bombs, unknown keys, files over 256 KB), each rule's and the set's problems
 * (rule-problems.ts), plus what only a repository file can get wrong:
 *
 * - `extends` (the operator's rules come first by themselves; a repository reads no other file);
 * - an action the operator's allow-list does not grant (allow-list.ts), or a move out of the
 *   project's namespace;
 * - a queue larger than the operator's limits, or one the operator's rules feed (queues.ts);
 * - a rule name the operator's rules already use (actions and explain are keyed by rule name).
 *
 * Pure: the bot (repository-rules.ts), `hookbot check FILE` and the tests call it on text.
 */
import { compileRule, type CompiledRule } from '../engine/compile.ts';
import { noRules } from '../grammar/load.ts';
import { parseRuleFile, type ParsedRuleFile } from '../grammar/parse-file.ts';
import { sortProblems, type Problem } from '../grammar/problem.ts';
import { ruleProblems, setProblems, type PlacedRule } from '../grammar/rule-problems.ts';
import { allowListProblems, type RepositoryPolicy } from './allow-list.ts';
import { queueProblems } from './queues.ts';

/** The file's name at the root of the default branch. */
export const REPOSITORY_FILE = '.hookbot.yml';

export interface RepositoryFileCheck {
  /** The compiled rules; undefined when there is any problem (a broken file never half-applies). */
  rules: CompiledRule[] | undefined;
  problems: Problem[];
}

export interface RepositoryFileContext {
  /** How problems name the file (`acme/web:.hookbot.yml`, or a path on disk). */
  file: string;
  policy: RepositoryPolicy;
  /** The project's `namespace/name`, when known: a move must stay in its namespace. */
  project?: string;
  /** The operator's rules for the project: their names are taken. */
  central?: readonly CompiledRule[];
}

export function checkRepositoryFile(text: string, context: RepositoryFileContext): RepositoryFileCheck {
  return checkParsedRepositoryFile(parseRuleFile(text, context.file), text, context);
}

/** The same, from a file parsed already (the bot parses on a worker thread: parse-off-thread.ts). */
export function checkParsedRepositoryFile(
  parsed: ParsedRuleFile,
  text: string,
  context: RepositoryFileContext,
): RepositoryFileCheck {
  const problems: Problem[] = [...parsed.problems];
  const empty = noRules(parsed, text);
  if (empty) problems.push(empty);
  // A file invalid as a whole still has its rules that are valid on their own checked: every problem.
  const rules = parsed.spec
    ? parsed.spec.rules.map((spec, index) => ({ index, spec }))
    : (parsed.validRules ?? []);

  if (parsed.spec?.extends !== undefined)
    problems.push({
      file: context.file,
      ...parsed.locate([], 'extends'),
      message: `extends is not available in ${REPOSITORY_FILE}: the operator's rules for the project already come first`,
      hint: 'write the rules here, or ask the operator to add them to the central rules',
    });

  const placed: PlacedRule[] = rules.map(({ spec, index }) => {
    const at = parsed.locate(['rules', index]);
    let compiled: CompiledRule | undefined;
    try {
      compiled = compileRule(spec, { file: context.file, ...at, repository: true });
    } catch (error) {
      problems.push({
        file: context.file,
        ...at,
        message: `cannot compile rule "${spec.name}": ${(error as Error).message}`,
      });
    }
    return { parsed, index, spec, compiled };
  });
  problems.push(...placed.flatMap(ruleProblems), ...setProblems(placed));
  problems.push(...allowListProblems(placed, context.policy, context.project));
  // Only a queue the operator allows is worth more problems (allowListProblems said it is not).
  if (context.policy.allowed.has('queue'))
    problems.push(...queueProblems(placed, context.policy.queue, context.central));

  const taken = new Map((context.central ?? []).map((rule) => [rule.name, rule]));
  for (const rule of placed) {
    const central = taken.get(rule.spec.name);
    if (!central) continue;
    const where = central.source
      ? ` (${central.source.file}:${central.source.line}:${central.source.column})`
      : '';
    problems.push({
      file: context.file,
      ...parsed.locate(['rules', rule.index, 'name']),
      message: `rule name "${rule.spec.name}" is taken by the operator's rules for this project${where}`,
      hint: 'give the rule another name',
    });
  }

  const sorted = sortProblems(problems);
  if (sorted.length > 0 || !parsed.spec) return { rules: undefined, problems: sorted };
  return { rules: placed.map((rule) => rule.compiled!), problems: [] };
}
