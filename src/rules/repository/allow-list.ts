/**
 * What the rules of a project's own `.hookbot.yml` may do: the operator decides. Each action of
 * the registry says whether repositories may use it by default (`inRepositories` in its
 * definition: labels, comments, statuses, assignments, closing and their inverses) or only with
 * the operator's permission (merges, merge-when-build-succeeds and its cancel, moves), which
 * `rules.repository.allow` gives. A move, even allowed, stays inside the project's namespace; a
 * queue, even allowed, within the operator's limits and out of the central rules' queues (queues.ts).
 */
import { actionDefinitions, actionsByName } from '../actions/index.ts';
import type { Problem } from '../grammar/problem.ts';
import type { PlacedRule } from '../grammar/rule-problems.ts';
import { closest } from '../../text/index.ts';
import { DEFAULT_QUEUE_LIMITS, type QueueLimits } from './queues.ts';

export interface RepositoryPolicy {
  /** Every action repository rules may use: the defaults plus what the operator allows. */
  allowed: ReadonlySet<string>;
  /** How large a merge train a repository rule's `queue` may ask for (queues.ts). */
  queue: QueueLimits;
}

/** The actions every repository may use unless the operator says otherwise. */
export const DEFAULT_REPOSITORY_ACTIONS: readonly string[] = actionDefinitions
  .filter((definition) => definition.inRepositories === 'allowed')
  .map((definition) => definition.name);

/** The actions that need the operator's permission. */
export const OPERATOR_ACTIONS: readonly string[] = actionDefinitions
  .filter((definition) => definition.inRepositories === 'operator')
  .map((definition) => definition.name);

/**
 * The policy from the operator's `rules.repository.allow` and `rules.repository.queue` (serial
 * unless said); throws on a name that is no action (a typo there would silently refuse the rules it
 * meant to allow).
 */
export function repositoryPolicy(
  allow: readonly string[],
  queue: QueueLimits = DEFAULT_QUEUE_LIMITS,
): RepositoryPolicy {
  for (const name of allow)
    if (!actionsByName.has(name)) {
      const near = closest(name, actionsByName.keys());
      throw new Error(
        `rules.repository.allow: "${name}" is not an action${near === undefined ? '' : ` (did you mean "${near}"?)`}; the actions are ${[...actionsByName.keys()].join(', ')}`,
      );
    }
  return { allowed: new Set([...DEFAULT_REPOSITORY_ACTIONS, ...allow]), queue };
}

const namespaceOf = (project: string): string => project.split('/')[0]!.toLowerCase();

/** Every action of the file the policy refuses, at the action. */
export function allowListProblems(
  rules: readonly PlacedRule[],
  policy: RepositoryPolicy,
  project: string | undefined,
): Problem[] {
  const problems: Problem[] = [];
  for (const placed of rules)
    placed.spec.do.forEach((action, index) => {
      const name = typeof action === 'string' ? action : Object.keys(action)[0];
      if (name === undefined) return;
      const at = { file: placed.parsed.file, ...placed.parsed.locate(['rules', placed.index, 'do', index]) };
      if (!policy.allowed.has(name)) {
        problems.push({
          ...at,
          message: `action "${name}" is not allowed in repository rules (rule "${placed.spec.name}"): it needs the operator's permission`,
          hint: `ask the operator to add ${name} to rules.repository.allow, or to move the rule to the central rules`,
        });
        return;
      }
      if (name !== 'move' || project === undefined || typeof action === 'string') return;
      const to = (action as { move?: { to?: unknown } }).move?.to;
      if (typeof to === 'string' && namespaceOf(to) !== namespaceOf(project))
        problems.push({
          ...at,
          message: `move to "${to}" leaves the namespace ${project.split('/')[0]} (rule "${placed.spec.name}"): repository rules move issues only within their namespace`,
          hint: `move to a project of ${project.split('/')[0]}/, or ask the operator to move the rule to the central rules`,
        });
    });
  return problems;
}
