/**
 * What a `queue` action may say that a merge train cannot do (docs/merge-queue.md#merge-trains):
 * with `depth` or `batch` above 1 the queue lands the tested car commits by a fast-forward push of
 * the target branch, never through the server's merge, so
 *
 * - `message` has nothing to name: no merge commit is made at the landing (a car's commit, made
 *   before its test, is named by the train itself, and the same record must make the same commit);
 * - `remove_source_branch: true` has no merge to ask it of, and the bot does not delete a member's
 *   source branch itself (it deletes branches of its own train folder only).
 *
 * Both were accepted and then ignored (issue 37): a problem now, at the option, saying what to change.
 * `remove_source_branch: false` asks for what a train does anyway, and is left alone.
 */
import type { ParsedRuleFile } from './parse-file.ts';
import type { Problem } from './problem.ts';
import type { RuleSpec } from './schema.ts';
import { depthAsked, depthText, type DepthParam } from '../actions/queue.ts';

/** A rule where it was written (rule-problems.ts's PlacedRule, without its compiled form). */
interface WrittenRule {
  parsed: ParsedRuleFile;
  index: number;
  spec: RuleSpec;
}

export function trainIgnoredOptions(placed: WrittenRule): Problem[] {
  const problems: Problem[] = [];
  placed.spec.do.forEach((action, index) => {
    if (typeof action === 'string' || !('queue' in action)) return;
    const params = (action.queue ?? {}) as {
      name?: string;
      depth?: DepthParam;
      batch?: number;
      message?: string;
      remove_source_branch?: boolean;
    };
    const batch = params.batch ?? 1;
    if (depthAsked(params.depth).max <= 1 && batch <= 1) return;
    const train = `queue "${params.name ?? 'default'}" of rule "${placed.spec.name}" is a merge train (depth ${depthText(params.depth)}, batch ${batch}), which lands by a fast-forward push of the target branch, not through the server's merge`;
    const at = (key: string) => placed.parsed.locate(['rules', placed.index, 'do', index, 'queue'], key);
    if (params.message !== undefined)
      problems.push({
        file: placed.parsed.file,
        ...at('message'),
        message: `"message" does not apply: ${train}, so no merge commit is made to carry it`,
        hint: 'remove message, or make the queue serial (depth: 1, batch: 1) to merge with it',
      });
    if (params.remove_source_branch === true)
      problems.push({
        file: placed.parsed.file,
        ...at('remove_source_branch'),
        message: `"remove_source_branch" does not apply: ${train}, and the bot deletes no member's source branch`,
        hint: 'remove remove_source_branch, or make the queue serial (depth: 1, batch: 1) to have the merge delete it',
      });
  });
  return problems;
}

/** A `queue` action with `depth` or `batch` above 1, where it is written. */
export interface TrainUse {
  file: string;
  line: number;
  column: number;
  rule: string;
  queue: string;
  /** `3`, or `auto (2..10)`. */
  depth: string;
  batch: number;
}

/** The merge trains a parsed rule file asks for (a file with problems asks for none: it is not in force). */
export function trainUses(parsed: ParsedRuleFile): TrainUse[] {
  const trains: TrainUse[] = [];
  parsed.spec?.rules.forEach((spec, ruleIndex) =>
    spec.do.forEach((action, index) => {
      if (typeof action === 'string' || !('queue' in action)) return;
      const params = (action.queue ?? {}) as { name?: string; depth?: DepthParam; batch?: number };
      const batch = params.batch ?? 1;
      if (depthAsked(params.depth).max <= 1 && batch <= 1) return;
      trains.push({
        file: parsed.file,
        ...parsed.locate(['rules', ruleIndex, 'do', index]),
        rule: spec.name,
        queue: params.name ?? 'default',
        depth: depthText(params.depth),
        batch,
      });
    }),
  );
  return trains;
}
