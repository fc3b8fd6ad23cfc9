import { z } from 'zod';
import { parseDuration } from '../../time/index.ts';
import { defineAction } from '../engine/define-action.ts';
import { durationSchema, labelListSchema, templateSchema } from '../engine/param-schemas.ts';
import { blocked, mergeRequestTarget } from '../engine/planned-call.ts';
import { compileTemplate } from '../engine/template.ts';
import { authorityOf, authorsSchema, mergeAuthority, mergeBlocker } from './merge-safety.ts';
import { DEFAULT_RETRIES, MAX_RETRIES } from './queue-retries.ts';

/** What a queue waits for a status unless the rule says: long enough for most CI, never forever. */
export const DEFAULT_STATUS_TIMEOUT = '1h';
export const DEFAULT_MAX_UPDATES = 3;
/**
 * Trains are opt-in (docs/merge-queue.md#merge-trains): they push bot-owned branches the site's CI
 * must build, and use up to `depth` x `batch` of its capacity at once. One car of one merge request:
 * the serial queue of before.
 */
export const DEFAULT_DEPTH = 1;
export const DEFAULT_BATCH = 1;
export const MAX_DEPTH = 20;
export const MAX_BATCH = 10;
/**
 * `depth: auto` (docs/merge-queue.md#depth-auto-a-window-that-follows-the-ci): the window starts at
 * its lower bound, grows by one per car landed and halves after a failed car, within these bounds
 * unless the rule writes its own (`depth: { min: 2, max: 6 }`).
 */
export const DEFAULT_AUTO_DEPTH = { min: 2, max: 10 } as const;

/** What a `depth` asks, as written: a number, `auto`, or an auto window's bounds. */
export type DepthParam = number | 'auto' | { min?: number | undefined; max?: number | undefined };

/** The cars a `depth` asks for: `min` = `max` for a number (absent: 1, serial), a window for auto. */
export function depthAsked(depth: DepthParam | undefined): { min: number; max: number; auto: boolean } {
  if (depth === undefined) return { min: DEFAULT_DEPTH, max: DEFAULT_DEPTH, auto: false };
  if (typeof depth === 'number') return { min: depth, max: depth, auto: false };
  if (depth === 'auto') return { ...DEFAULT_AUTO_DEPTH, auto: true };
  const max = depth.max ?? Math.max(DEFAULT_AUTO_DEPTH.max, depth.min ?? 0);
  return { min: depth.min ?? Math.min(DEFAULT_AUTO_DEPTH.min, max), max, auto: true };
}

/** A `depth` in words: `3`, `auto (2..10)`. */
export function depthText(depth: DepthParam | undefined): string {
  const asked = depthAsked(depth);
  return asked.auto ? `auto (${asked.min}..${asked.max})` : String(asked.max);
}

const carCount = z
  .number()
  .int()
  .min(1)
  .max(MAX_DEPTH, { message: `depth is at most ${MAX_DEPTH} cars tested at once` });

export const queue = defineAction({
  name: 'queue',
  inRepositories: 'operator',
  summary:
    "Puts the merge request in a merge queue for its target branch instead of merging it at once ([merge-queue.md](merge-queue.md)): one at a time, the head of the queue has its source branch brought up to the target's head (a merge commit pushed with git), its required statuses awaited on that very commit, and is merged pinned to it. Taken out, with one comment, on a conflict, a failed status or a status that never reports; at once when someone pushes, it is closed, or this rule no longer matches. On a member's authority, as `merge` ([Members' commands](#members-commands)): queued on a member's comment, the approval (who, which note, which head) is kept with the entry, and the comment is read again before the merge.",
  example: { statuses: ['ci/test'], priority_labels: ['urgent'], status_timeout: '30m' },
  params: z.strictObject({
    statuses: z.array(z.string().min(1)).min(1).meta({
      description: 'status names that must succeed on the tested head (the merged-up source branch)',
    }),
    name: z
      .string()
      .regex(/^[\w.-]+$/, { message: 'a queue name is letters, digits, ".", "_" and "-"' })
      .optional()
      .meta({ description: 'the queue, per target branch; default `default`' }),
    priority_labels: labelListSchema
      .optional()
      .meta({ description: 'merge requests carrying any of these labels go before the others' }),
    status_timeout: durationSchema.optional().meta({
      description: `how long the tested head may wait for its statuses; default ${DEFAULT_STATUS_TIMEOUT}`,
    }),
    max_updates: z
      .number()
      .int()
      .min(1)
      .max(20)
      .optional()
      .meta({
        description: `how many times the source branch is brought up to a target that moved before the merge request is taken out; default ${DEFAULT_MAX_UPDATES}`,
      }),
    depth: z
      .union([
        carCount,
        z.literal('auto'),
        z
          .strictObject({
            min: carCount.optional().meta({ description: 'the lower bound, where the window starts' }),
            max: carCount
              .min(2, { message: 'an auto window goes up to 2 cars at least' })
              .optional()
              .meta({ description: 'the upper bound' }),
          })
          .refine((w) => depthAsked(w).min <= depthAsked(w).max, {
            message: 'the lower bound of the depth window is above its upper bound',
          }),
      ])
      .optional()
      .meta({
        description: `how many cars of the merge train are tested at once, each on top of the ones ahead; default ${DEFAULT_DEPTH} (the serial queue), at most ${MAX_DEPTH}. \`auto\` (or \`{ min, max }\`): a window that follows the CI, from ${DEFAULT_AUTO_DEPTH.min} to ${DEFAULT_AUTO_DEPTH.max} unless bounded: one more car after each car that lands, half as many after a car that fails ([merge-queue.md](merge-queue.md#depth-auto-a-window-that-follows-the-ci))`,
      }),
    batch: z
      .number()
      .int()
      .min(1)
      .max(MAX_BATCH, { message: `batch is at most ${MAX_BATCH} merge requests per car` })
      .optional()
      .meta({
        description: `how many merge requests one car of the train carries, tested as one commit (a failed car is split in halves); default ${DEFAULT_BATCH}, at most ${MAX_BATCH}`,
      }),
    retries: z
      .number()
      .int()
      .min(0)
      .max(MAX_RETRIES, { message: `retries is at most ${MAX_RETRIES} builds again of a failed car` })
      .optional()
      .meta({
        description: `merge trains: how many times a failed car of one merge request is built again (a new commit) before it is taken out, when no car behind it, which contains it, tested it (a car behind that passes lands it anyway: flaky CI); default ${DEFAULT_RETRIES}, at most ${MAX_RETRIES}; the serial queue takes a failed head out at once`,
      }),
    remove_source_branch: z.boolean().optional().meta({
      description:
        'the merge deletes the source branch (serial queue only: a train lands by a push, and check refuses it with depth or batch above 1)',
    }),
    message: templateSchema.optional().meta({
      description:
        'the merge commit message, placeholders allowed (serial queue only: a train makes no merge commit at the landing, and check refuses it with depth or batch above 1)',
    }),
    authors: authorsSchema,
  }),
  itemKinds: ['merge_request'],
  explained: {
    planned: 'queue for master (default)',
    note: "the merge request's target branch and the queue; `(default, priority)` when a `priority_labels` label puts it first, and `on the comment of @alice` when a member's comment queued it",
  },
  describe: (p) =>
    `queue in ${p.name ?? 'default'} for ${p.statuses.join(', ')}${p.priority_labels ? `, first with ${p.priority_labels.join(' or ')}` : ''}${depthAsked(p.depth).max > 1 || (p.batch ?? 1) > 1 ? ` (train: depth ${depthText(p.depth)}, batch ${p.batch ?? DEFAULT_BATCH})` : ''}${p.authors === 'anyone' ? ', whoever the author' : ''}`,
  compile: (p) => ({
    ...p,
    depthAsked: depthAsked(p.depth),
    timeoutMs: parseDuration(p.status_timeout ?? DEFAULT_STATUS_TIMEOUT),
    template: p.message === undefined ? undefined : compileTemplate(p.message),
  }),
  authority: (c) => authorityOf(c.authors),
  plan: (c, input) => {
    const mr = input.snapshot;
    if (mr.kind !== 'merge_request') return [];
    // A conflict with the target does not keep it out: the queue finds it when it brings the branch
    // up, and takes it out with a comment naming the files (a silent refusal here would not).
    const blocker = mergeBlocker({ ...mr, merge_status: 'can_be_merged' });
    if (blocker !== undefined) return blocked(blocker);
    const authority = c.authors === 'anyone' ? undefined : mergeAuthority(mr);
    if (authority && !authority.ok) return blocked(authority.reason);
    const approval = authority?.by === 'comment' ? authority.approval : undefined;
    const priority = (c.priority_labels ?? []).some((label) => mr.labels.includes(label)) ? 1 : 0;
    const queueName = c.name ?? 'default';
    return [
      {
        call: {
          op: 'mergeQueue.enqueue',
          args: {
            ...mergeRequestTarget(mr),
            iid: mr.iid,
            sha: mr.sha!,
            project_path: mr.project.path_with_namespace,
            target_branch: mr.target_branch,
            queue: queueName,
            priority,
            required: [...c.statuses],
            status_timeout_ms: c.timeoutMs,
            max_updates: c.max_updates ?? DEFAULT_MAX_UPDATES,
            ...(c.depthAsked.auto
              ? { depth_auto: { min: c.depthAsked.min, max: c.depthAsked.max } }
              : c.depthAsked.max > 1
                ? { depth: c.depthAsked.max }
                : {}),
            ...((c.batch ?? DEFAULT_BATCH) > 1 ? { batch: c.batch! } : {}),
            ...(c.retries !== undefined ? { retries: c.retries } : {}),
            ...(c.remove_source_branch !== undefined
              ? { should_remove_source_branch: c.remove_source_branch }
              : {}),
            ...(c.template ? { merge_commit_message: c.template(input) } : {}),
            ...(approval ? { approval } : {}),
          },
        },
        reason: `queue for ${mr.target_branch} (${queueName}${priority > 0 ? ', priority' : ''})${approval ? ` on the comment of @${approval.by}` : ''}`,
      },
    ];
  },
});
