/** Shared answer shapes (docs/api-v3.md#user-summary and docs/api-v3.md#milestone); each route file builds its own resources. */
import type { SandboxContext } from './context.ts';
import type { MilestoneRec, UserRec } from './db.ts';

export function userBasic(ctx: SandboxContext, user: UserRec) {
  return {
    id: user.id,
    username: user.username,
    name: user.name,
    state: user.state,
    avatar_url: null as string | null,
  };
}

/** The summary embedded in issues, notes and events (with `web_url`). */
export function userSummary(ctx: SandboxContext, userId: number | null) {
  if (userId === null) return null;
  const user = ctx.db.data.users.find((u) => u.id === userId);
  if (!user) return null;
  return { ...userBasic(ctx, user), web_url: `${ctx.baseUrl()}/u/${user.username}` };
}

/** The summary embedded in merge requests (docs/api-v3.md#user-summary: with `created_at` and `email`). */
export function userSummaryMr(ctx: SandboxContext, userId: number | null) {
  const summary = userSummary(ctx, userId);
  if (!summary) return null;
  const user = ctx.db.data.users.find((u) => u.id === userId)!;
  return { ...summary, email: user.email, created_at: user.created_at };
}

export function milestoneView(ctx: SandboxContext, milestoneId: number | null) {
  if (milestoneId === null) return null;
  const m: MilestoneRec | undefined = ctx.db.data.milestones.find((x) => x.id === milestoneId);
  if (!m) return null;
  return {
    id: m.id,
    iid: m.iid,
    project_id: m.project_id,
    title: m.title,
    description: m.description,
    state: m.state,
    due_date: m.due_date,
    created_at: m.created_at,
    updated_at: m.updated_at,
  };
}
