/**
 * Commit statuses (docs/api-v3.md#commit-statuses): list a commit's statuses and post one.
 * docs/api-v3.md#commit-statuses leaves the transitions out ("not shown"); they follow the real 8.x servers
 * (docs/server-behaviour.md#commit-statuses and 8.x `lib/api/commit_statuses.rb`, `CommitStatus`'s state machine):
 *
 * - a status is looked up by sha, ref and name among the pending and running ones; found, it moves on
 *   (pending -> running, pending or running -> success/failed/canceled); otherwise a new row is made.
 *   A finished status therefore never changes: posting again makes a new row.
 * - the events fired are those of the 8.x state machine, so posting `pending` onto a pending or running
 *   status, or `running` onto a running one, is refused with the state machine's own message (400).
 * - `started_at` is set on entering running, `finished_at` on entering success, failed or canceled.
 *
 * The sandbox has no CI: every status here is what 8.x calls a generic (external) status, in stage
 * `external`, never allowed to fail. Statuses of one sha and ref form what 8.x calls a pipeline; when a
 * pipeline's combined status changes the `Pipeline Hook` fires.
 */
import type { Router } from 'express';
import { notify, type Caller, type SandboxContext, type StatusEvent } from '../context.ts';
import type { Db, ProjectRec, StatusRec } from '../db.ts';
import { flag, forbidden, HttpError, notFound, requiredStr, sendPage, str } from '../http.ts';
import {
  buildPayload,
  combinedStatus,
  EXTERNAL_STAGE,
  latestOf,
  loadCommit,
  pipelinePayload,
  type CombinedStatus,
} from '../payloads/index.ts';
import { DEVELOPER, REPORTER, accessLevel } from '../permissions.ts';
import { userSummary } from '../views.ts';
import { projectRoute } from '../route.ts';

export { combinedStatus, type CombinedStatus } from '../payloads/index.ts';

type State = StatusRec['status'];
const STATES: readonly string[] = ['pending', 'running', 'success', 'failed', 'canceled'];

/**
 * The latest status per name (and ref: 8.x keeps one pipeline per sha and ref) of a commit, oldest
 * first; with `ref`, of that ref only. What the combined status, merge-when-build-succeeds and the
 * commits routes read.
 */
export function latestStatuses(db: Db, projectId: number, sha: string, ref?: string | null): StatusRec[] {
  return latestOf(
    db.data.statuses.filter(
      (s) => s.project_id === projectId && s.sha === sha && (ref === undefined || s.ref === ref),
    ),
  );
}

/** docs/api-v3.md#commit-status (8.x `Entities::CommitStatus`). */
export function statusView(ctx: SandboxContext, s: StatusRec) {
  return {
    id: s.id,
    sha: s.sha,
    ref: s.ref,
    status: s.status,
    name: s.name,
    target_url: s.target_url,
    description: s.description,
    created_at: s.created_at,
    started_at: s.started_at,
    finished_at: s.finished_at,
    allow_failure: s.allow_failure,
    author: userSummary(ctx, s.author_id),
  };
}

/** The state machine's refusal, worded as 8.x answers it (`StateMachines::InvalidTransition#message`). */
function cannotTransition(event: string, from: string): HttpError {
  return new HttpError(400, {
    message: `Cannot transition status via :${event} from :${from} (Reason(s): Status cannot transition via "${event}")`,
  });
}

/**
 * Where posting `wanted` takes a status that is new (`created`) or pending or running. 8.x fires
 * `enqueue!` for pending (created -> pending only), `enqueue` then `run!` for running (pending -> running),
 * and `success!`, `drop!`, `cancel!` (from created, pending or running) for the finished states.
 */
function transition(from: 'created' | 'pending' | 'running', wanted: State): State {
  switch (wanted) {
    case 'pending':
      if (from !== 'created') throw cannotTransition('enqueue', from);
      return 'pending';
    case 'running':
      if (from === 'running') throw cannotTransition('run', from);
      return 'running';
    default:
      return wanted;
  }
}

/**
 * 8.x attaches a status posted without `ref` to the first branch (by name) that contains the commit,
 * and answers 404 `References for commit` when none does.
 */
async function defaultRef(
  ctx: SandboxContext,
  project: ProjectRec,
  sha: string,
): Promise<string | undefined> {
  const branches = (await ctx.git.branches(project.id)).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const branch of branches) {
    if (branch.commit.id === sha) return branch.name;
    const { commits } = await ctx.git.compare(project.id, branch.name, project.id, sha, { diffs: false });
    if (commits.length === 0) return branch.name;
  }
  return undefined;
}

/** Parameters that count only when non-empty (8.x `attributes_for_keys` skips blank values). */
function present(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/**
 * 8.x `read_commit_status`: reporters and above; on public and internal projects everyone who can
 * see the project.
 */
function requireReadStatuses(db: Db, project: ProjectRec, who: Caller): void {
  if (project.visibility_level === 0 && accessLevel(db, project, who.user) < REPORTER) throw forbidden();
}

export function registerStatusRoutes(router: Router, ctx: SandboxContext): void {
  const { db } = ctx;

  router.get(
    '/projects/:id/repository/commits/:sha/statuses',
    projectRoute(db, requireReadStatuses, async ({ req, res, p, project }) => {
      const sha = String(req.params.sha);
      if (!(await ctx.git.commit(project.id, sha))) throw notFound('Commit');
      // docs/api-v3.md#commit-statuses names the filter `ref_name`; 8.x reads `ref`: both are accepted.
      const ref = present(str(p, 'ref_name')) ?? present(str(p, 'ref'));
      const stage = present(str(p, 'stage'));
      const name = present(str(p, 'name'));
      // 8.x selects by the sha exactly as given (a branch name resolves for the 404 check above, yet
      // matches no status), and lists in id order.
      let statuses = db.data.statuses.filter((s) => s.project_id === project.id && s.sha === sha);
      if (!flag(p, 'all')) statuses = latestOf(statuses);
      statuses = statuses
        .filter((s) => ref === undefined || s.ref === ref)
        // Every status posted through the API is in stage `external`.
        .filter(() => stage === undefined || stage === EXTERNAL_STAGE)
        .filter((s) => name === undefined || s.name === name)
        .sort((a, b) => a.id - b.id);
      sendPage(
        req,
        res,
        statuses.map((s) => statusView(ctx, s)),
      );
    }),
  );

  router.post(
    '/projects/:id/statuses/:sha',
    projectRoute(db, DEVELOPER, async ({ req, res, who: c, p, project }) => {
      const state = requiredStr(p, 'state');
      const commit = await loadCommit(ctx, project.id, String(req.params.sha));
      if (!commit) throw notFound('Commit');
      const ref = present(str(p, 'ref')) ?? (await defaultRef(ctx, project, commit.id));
      if (ref === undefined) throw notFound('References for commit');
      if (!STATES.includes(state)) throw new HttpError(400, { message: 'invalid state' });
      const name = present(str(p, 'name')) ?? present(str(p, 'context')) ?? 'default';
      const targetUrl = present(str(p, 'target_url'));
      const description = present(str(p, 'description'));

      // The caller's own unfinished status of that name, ref and sha is updated in place; anyone
      // else's is not touched: 8.x looks it up with `user: current_user` (`find_or_initialize_by`),
      // so another developer's post is a new row of her own, never the CI's status under its name.
      const open = db.data.statuses.find(
        (s) =>
          s.project_id === project.id &&
          s.sha === commit.id &&
          s.ref === ref &&
          s.name === name &&
          s.author_id === c.user.id &&
          (s.status === 'pending' || s.status === 'running'),
      );
      const next = transition(open ? (open.status as 'pending' | 'running') : 'created', state as State);
      const now = db.now();
      const status: StatusRec = open ?? {
        id: db.nextId('statuses'),
        project_id: project.id,
        sha: commit.id,
        ref,
        name,
        status: next,
        target_url: null,
        description: null,
        allow_failure: false,
        author_id: c.user.id,
        created_at: now,
        started_at: null,
        finished_at: null,
      };
      if (targetUrl !== undefined) status.target_url = targetUrl;
      if (description !== undefined) status.description = description;
      status.status = next;
      if (next === 'running') status.started_at = now;
      if (next === 'success' || next === 'failed' || next === 'canceled') status.finished_at = now;
      if (!open) db.data.statuses.push(status);
      db.changed();

      await notify<StatusEvent>(ctx.on.status, { project, sha: commit.id, ref, user: c.user });
      // Each status is a build of the server's CI here: a Build Hook on every transition (8.x).
      ctx.hooks.emit(project.id, 'Build Hook', buildPayload(ctx, project, status, c.user));
      res.status(201).json(statusView(ctx, status));
    }),
  );

  ctx.on.status.push(pipelineHookListener(ctx));
}

/**
 * Fires `Pipeline Hook` when the combined status of a pipeline (one sha and ref) changes, as 8.x does
 * on every pipeline transition. The last combined status of each pipeline is remembered from the data
 * at start, so a restart with `--data` sends no hook for a status that did not change.
 */
function pipelineHookListener(ctx: SandboxContext): (event: StatusEvent) => Promise<void> {
  const key = (projectId: number, sha: string, ref: string | null) => JSON.stringify([projectId, sha, ref]);
  const known = new Map<string, CombinedStatus>();
  const pipelines = new Map<string, StatusRec[]>();
  for (const s of ctx.db.data.statuses) {
    const k = key(s.project_id, s.sha, s.ref);
    pipelines.set(k, [...(pipelines.get(k) ?? []), s]);
  }
  for (const [k, statuses] of pipelines) known.set(k, combinedStatus(latestOf(statuses)));

  return async (event) => {
    const statuses = ctx.db.data.statuses
      .filter((s) => s.project_id === event.project.id && s.sha === event.sha && s.ref === event.ref)
      .sort((a, b) => a.id - b.id);
    const k = key(event.project.id, event.sha, event.ref);
    const combined = combinedStatus(latestOf(statuses));
    if ((known.get(k) ?? 'none') === combined) return;
    known.set(k, combined);
    const first = statuses[0];
    if (!first) return;
    // The pipeline's user is whoever created it (its first status).
    const creator = ctx.db.data.users.find((u) => u.id === first.author_id) ?? event.user;
    await loadCommit(ctx, event.project.id, event.sha);
    ctx.hooks.emit(
      event.project.id,
      'Pipeline Hook',
      pipelinePayload(ctx, event.project, event.sha, statuses, creator),
    );
  };
}
