import type { SandboxContext } from '../context.ts';
import type { ProjectRec, StatusRec, UserRec } from '../db.ts';
import { knownCommit } from './commit-memo.ts';
import { payloadTime, projectHookAttrs } from './hook-attrs.ts';
import { EXTERNAL_STAGE } from './pipeline.ts';
import { BLANK_SHA } from './hook-attrs.ts';

/**
 * `Build Hook` (8.x `Ci::Build` hook data) for one status: the sandbox treats each commit status as a
 * build of the server's own CI, which on real servers fires a Build Hook on every transition (a
 * pipeline hook fires only when the combined status changes).
 */
export function buildPayload(
  ctx: SandboxContext,
  project: ProjectRec,
  status: StatusRec,
  user: UserRec,
): Record<string, unknown> {
  const commit = knownCommit(ctx, status.sha);
  const started = status.started_at ? Date.parse(status.started_at) : undefined;
  const finished = status.finished_at ? Date.parse(status.finished_at) : undefined;
  const p = projectHookAttrs(ctx, project);
  return {
    object_kind: 'build',
    ref: status.ref,
    tag: false,
    before_sha: BLANK_SHA,
    sha: status.sha,
    build_id: status.id,
    build_name: status.name,
    build_stage: EXTERNAL_STAGE,
    build_status: status.status,
    build_started_at: payloadTime(status.started_at),
    build_finished_at: payloadTime(status.finished_at),
    build_duration: started !== undefined && finished !== undefined ? (finished - started) / 1000 : null,
    build_allow_failure: status.allow_failure,
    project_id: project.id,
    project_name: `${p.namespace} / ${p.name}`,
    user: { id: user.id, name: user.name, email: user.email },
    commit: {
      id: status.id,
      sha: status.sha,
      message: commit?.message ?? null,
      author_name: commit?.author_name ?? null,
      author_email: commit?.author_email ?? null,
      status: status.status,
      duration: null,
      started_at: payloadTime(status.started_at),
      finished_at: payloadTime(status.finished_at),
    },
    repository: {
      name: p.name,
      url: p.url,
      description: p.description,
      homepage: p.homepage,
      git_ssh_url: p.git_ssh_url,
      git_http_url: p.git_http_url,
      visibility_level: p.visibility_level,
    },
  };
}
