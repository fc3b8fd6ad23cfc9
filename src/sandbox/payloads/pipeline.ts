/** `Pipeline Hook` payloads, and the combined status of a pipeline's statuses. */
import type { SandboxContext } from '../context.ts';
import type { ProjectRec, StatusRec, UserRec } from '../db.ts';
import {
  BLANK_SHA,
  commitHookAttrsBySha,
  payloadTime,
  projectHookAttrsCurrent,
  userHookAttrs,
} from './hook-attrs.ts';

/** Statuses posted through the API belong to this stage on 8.x (`GenericCommitStatus`). */
export const EXTERNAL_STAGE = 'external';

export type CombinedStatus = 'none' | 'pending' | 'running' | 'success' | 'failed' | 'canceled';

/**
 * The combined status of a set of statuses (the latest per name), as 8.x `HasStatus` deduces a
 * pipeline's: none when empty; success when every one succeeded (a failure with `allow_failure` counts as
 * success); pending when every one is pending; running while any is still pending or running (so a
 * pending one beside finished ones gives `running`, as on real servers); canceled when the rest are
 * canceled or successful; failed otherwise.
 */
export function combinedStatus(
  statuses: readonly Pick<StatusRec, 'status' | 'allow_failure'>[],
): CombinedStatus {
  if (statuses.length === 0) return 'none';
  const count = (test: (s: Pick<StatusRec, 'status' | 'allow_failure'>) => boolean) =>
    statuses.filter(test).length;
  const total = statuses.length;
  const success = count((s) => s.status === 'success');
  const ignored = count((s) => s.status === 'failed' && s.allow_failure);
  const pending = count((s) => s.status === 'pending');
  const running = count((s) => s.status === 'running');
  const canceled = count((s) => s.status === 'canceled');
  if (total === success + ignored) return 'success';
  if (total === pending) return 'pending';
  if (running + pending > 0) return 'running';
  if (total === canceled + success + ignored) return 'canceled';
  return 'failed';
}

/** The latest status per name and ref (8.x `CommitStatus.latest`: the highest id per name in each pipeline). */
export function latestOf<T extends Pick<StatusRec, 'id' | 'name' | 'ref'>>(statuses: readonly T[]): T[] {
  const latest = new Map<string, T>();
  for (const s of statuses) {
    const key = JSON.stringify([s.name, s.ref]);
    const seen = latest.get(key);
    if (!seen || s.id > seen.id) latest.set(key, s);
  }
  return [...latest.values()].sort((a, b) => a.id - b.id);
}

/** Union of the busy periods, in whole seconds (8.x `PipelineDuration`). */
export function busySeconds(statuses: readonly StatusRec[]): number {
  const periods = statuses
    .filter((s) => s.started_at !== null && s.finished_at !== null)
    .map((s) => [Date.parse(s.started_at!), Date.parse(s.finished_at!)] as const)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [from, to] of periods) {
    if (to <= end) continue;
    total += to - Math.max(from, end);
    end = to;
  }
  return Math.round(total / 1000);
}

/**
 * `Pipeline Hook` for the combined status of one commit. `statuses` are that pipeline's statuses (every
 * one, retried ones included: they are its builds); the status is combined from the latest per name.
 * The sandbox has no pipeline records: the pipeline's id is the id of its first status, its ref that
 * status's ref, and `user` is who created it. `tag` is false and `before_sha` blank, as for the
 * pipelines 8.x creates when a status is posted through the API.
 */
export function pipelinePayload(
  ctx: SandboxContext,
  project: ProjectRec,
  sha: string,
  statuses: StatusRec[],
  user: UserRec,
): Record<string, unknown> {
  const ordered = [...statuses].sort((a, b) => a.id - b.id);
  const first = ordered[0];
  const latest = latestOf(ordered);
  const status = combinedStatus(latest);
  const finished = status === 'success' || status === 'failed' || status === 'canceled';
  const finishedAt = finished
    ? latest.reduce<string | null>(
        (max, s) => (s.finished_at && (!max || s.finished_at > max) ? s.finished_at : max),
        null,
      )
    : null;
  const authorOf = (id: number) => ctx.db.data.users.find((u) => u.id === id);
  return {
    object_kind: 'pipeline',
    object_attributes: {
      id: first?.id ?? null,
      ref: first?.ref ?? null,
      tag: false,
      sha,
      before_sha: BLANK_SHA,
      status: status === 'none' ? null : status,
      stages: ordered.length ? [EXTERNAL_STAGE] : [],
      created_at: first ? payloadTime(first.created_at) : null,
      finished_at: payloadTime(finishedAt),
      duration: finished ? busySeconds(latest) : null,
    },
    user: userHookAttrs(user),
    project: projectHookAttrsCurrent(ctx, project),
    commit: commitHookAttrsBySha(ctx, project, sha),
    builds: ordered.map((s) => {
      const author = authorOf(s.author_id);
      return {
        id: s.id,
        stage: EXTERNAL_STAGE,
        name: s.name,
        status: s.status,
        created_at: payloadTime(s.created_at),
        started_at: payloadTime(s.started_at),
        finished_at: payloadTime(s.finished_at),
        when: 'on_success',
        manual: false,
        user: author ? userHookAttrs(author) : null,
        runner: null,
        artifacts_file: { filename: null, size: null },
      };
    }),
  };
}
