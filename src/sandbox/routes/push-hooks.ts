/**
 * What a push does beyond git: the default branch protected at its first push, the `Push Hook` (or
 * `Tag Push Hook` for `refs/tags/...`) and the project's activity event. Every family that lands commits (file commits, merges, new or deleted
 * branches) tells `ctx.on.push`; this listener is the one place that turns that into both, as 8.x's
 * `GitPushService` does.
 */
import type { Router } from 'express';
import type { PushEvent, SandboxContext } from '../context.ts';
import type { EventRec } from '../db.ts';
import { BLANK_SHA, pushPayload } from '../payloads/index.ts';
import { protectDefaultBranchOnFirstPush } from '../protected-branches.ts';

/**
 * 8.x `Event#action_name` for pushes: `pushed new` for a new ref, `deleted` for a removed one,
 * `pushed to` otherwise.
 */
function pushActionName(event: Pick<PushEvent, 'before' | 'after'>): string {
  if (event.before === BLANK_SHA) return 'pushed new';
  if (event.after === BLANK_SHA) return 'deleted';
  return 'pushed to';
}

/** The event's `data`: the push data with the fields docs/api-v3.md#project-event lists. */
function eventData(payload: Record<string, unknown>): Record<string, unknown> {
  const repository = payload.repository as Record<string, unknown>;
  const commits = payload.commits as Record<string, unknown>[];
  return {
    before: payload.before,
    after: payload.after,
    ref: payload.ref,
    user_id: payload.user_id,
    user_name: payload.user_name,
    repository: {
      name: repository.name,
      url: repository.url,
      description: repository.description,
      homepage: repository.homepage,
    },
    commits: commits.map((c) => ({
      id: c.id,
      message: c.message,
      timestamp: c.timestamp,
      url: c.url,
      author: c.author,
    })),
    total_commits_count: payload.total_commits_count,
  };
}

export function registerPushHooks(_router: Router, ctx: SandboxContext): void {
  ctx.on.push.push(async (event) => {
    protectDefaultBranchOnFirstPush(ctx, event);
    const payload = await pushPayload(ctx, event.project, event);
    const tag = payload.object_kind === 'tag_push';
    ctx.hooks.emit(event.project.id, tag ? 'Tag Push Hook' : 'Push Hook', payload);

    const now = ctx.db.now();
    const record: EventRec = {
      id: ctx.db.nextId('events'),
      project_id: event.project.id,
      author_id: event.user.id,
      action_name: pushActionName(event),
      target_id: null,
      target_type: null,
      target_title: null,
      title: null,
      data: eventData(payload),
      note_id: null,
      created_at: now,
    };
    ctx.db.data.events.push(record);
    // A new event is project activity (8.x `Event` resets the project's `last_activity_at`).
    event.project.last_activity_at = now;
    ctx.db.changed();
  });
}
