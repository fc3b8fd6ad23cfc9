/**
 * The merge queues a project's own `.hookbot.yml` may feed (docs/repository-rules.md#queues). A
 * `queue` action is the operator's to allow (`rules.repository.allow`), and even allowed:
 *
 * - its `depth` and `batch` stay within `rules.repository.queue.max_depth` and `max_batch`
 *   (default 1: a repository's queues are serial unless the operator says). A train pushes the
 *   bot's own branches, which the site's CI builds, up to depth x batch merge requests at once: the
 *   operator, who knows the CI's capacity, decides how large one may be;
 * - it names no queue the operator's (central) rules of the project feed: depth and batch are the
 *   queue's, so a repository rule that joined one would reshape it for the merge requests the
 *   central rules queued, and its own merge requests would ride in their trains.
 *
 * Both are problems of the file, at the parameter, refused like any other (repository-file.ts).
 */
import { MAX_BATCH, MAX_DEPTH } from '../actions/queue.ts';
import type { CompiledRule } from '../engine/compile.ts';
import type { Problem } from '../grammar/problem.ts';
import { queueUses, type PlacedRule } from '../grammar/rule-problems.ts';

export interface QueueLimits {
  /** The most `depth` a repository rule's queue may ask for (1..MAX_DEPTH). */
  maxDepth: number;
  /** The most `batch` (1..MAX_BATCH). */
  maxBatch: number;
}

/** Serial unless the operator says (config: `rules.repository.queue`). */
export const DEFAULT_QUEUE_LIMITS: QueueLimits = { maxDepth: 1, maxBatch: 1 };

/** The queue a compiled `queue` action feeds (queue.ts: `name`, default `default`). */
const queueName = (params: unknown): string => (params as { name?: string } | undefined)?.name ?? 'default';

/** The first central rule feeding each queue name. */
function centralQueues(central: readonly CompiledRule[]): Map<string, CompiledRule> {
  const fed = new Map<string, CompiledRule>();
  for (const rule of central)
    for (const action of rule.actions)
      if (action.name === 'queue' && !fed.has(queueName(action.params)))
        fed.set(queueName(action.params), rule);
  return fed;
}

const placeOf = (rule: CompiledRule): string =>
  rule.source ? ` (${rule.source.file}:${rule.source.line}:${rule.source.column})` : '';

/** Every queue action of the file over the limits, or joining a queue of the central rules. */
export function queueProblems(
  rules: readonly PlacedRule[],
  limits: QueueLimits,
  central: readonly CompiledRule[] = [],
): Problem[] {
  const fed = centralQueues(central);
  const problems: Problem[] = [];
  for (const use of rules.flatMap(queueUses)) {
    const { placed } = use;
    const at = (key?: string) => ({
      file: placed.parsed.file,
      ...placed.parsed.locate(['rules', placed.index, 'do', use.index, ...(key ? ['queue', key] : [])]),
    });
    const rule = `(rule "${placed.spec.name}")`;
    // `depth: auto` counts by its window's upper bound (10 unless written: `depth: { max: 4 }`).
    for (const [key, value, written, limit, max, what] of [
      ['depth', use.depth, use.depthText, limits.maxDepth, MAX_DEPTH, 'cars of a merge train tested at once'],
      ['batch', use.batch, String(use.batch), limits.maxBatch, MAX_BATCH, 'merge requests per car'],
    ] as const) {
      if (value <= limit) continue;
      const fix =
        key === 'depth' && use.auto && limit >= 2
          ? `write depth: { max: ${limit} } (an auto window up to ${limit}) or a number up to ${limit}`
          : `write ${key}: ${limit} or less`;
      problems.push({
        ...at(key),
        message: `queue ${key} ${written} is over the ${limit} the operator allows repository rules ${rule}: ${key} is how many ${what}, and the operator, who knows the CI's capacity, sets how large a repository's trains may be`,
        hint:
          limit < max
            ? `${fix}, or ask the operator to raise rules.repository.queue.max_${key} (at most ${max})`
            : fix,
      });
    }
    const central = fed.get(use.name);
    if (central)
      problems.push({
        ...at(use.explicitName ? 'name' : undefined),
        message: `queue "${use.name}" is fed by the operator's rule "${central.name}"${placeOf(central)} ${rule}: a repository rule may not join a queue of the central rules (its depth and batch would reshape their queue, and its merge requests would ride with theirs)`,
        hint: 'name another queue, one the central rules do not feed: queue: { name: <another name>, ... }',
      });
  }
  return problems;
}

/**
 * Whether a repository rule of a file taken earlier stays beside the central rules in force (they
 * may have been reloaded since): not when they now use its name or feed its queue. Such a rule is
 * left out at once; the file is checked again at its next read, which refuses it with the clash.
 */
export function keptBeside(central: readonly CompiledRule[]): (rule: CompiledRule) => boolean {
  const taken = new Set(central.map((rule) => rule.name));
  const fed = centralQueues(central);
  return (rule) =>
    !taken.has(rule.name) &&
    !rule.actions.some((action) => action.name === 'queue' && fed.has(queueName(action.params)));
}
