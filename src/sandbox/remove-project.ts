/**
 * Removing a project and everything that belongs to it (docs/api-v3.md#projects: "removes the project and all
 * associated resources"): used by `DELETE /projects/:id` and by user removal (a removed user's
 * personal projects go with them, as on real 8.x servers).
 */
import type { SandboxContext } from './context.ts';
import type { ProjectRec } from './db.ts';

/** Removes in place (routes hold no copies of the arrays, but in-place keeps any reference valid). */
export function removeWhere<T>(items: T[], doomed: (item: T) => boolean): number {
  let kept = 0;
  const before = items.length;
  for (const item of items) if (!doomed(item)) items[kept++] = item;
  items.length = kept;
  return before - kept;
}

export async function removeProject(ctx: SandboxContext, project: ProjectRec): Promise<void> {
  const d = ctx.db.data;
  const id = project.id;
  const issueIds = new Set(d.issues.filter((i) => i.project_id === id).map((i) => i.id));
  const mrIds = new Set(d.mergeRequests.filter((m) => m.project_id === id).map((m) => m.id));
  removeWhere(d.projects, (p) => p.id === id);
  removeWhere(d.members, (m) => m.project_id === id);
  removeWhere(d.stars, (s) => s.project_id === id);
  removeWhere(d.hooks, (h) => h.project_id === id);
  removeWhere(d.labels, (l) => l.project_id === id);
  removeWhere(d.milestones, (m) => m.project_id === id);
  removeWhere(d.issues, (i) => issueIds.has(i.id));
  removeWhere(d.mergeRequests, (m) => mrIds.has(m.id));
  removeWhere(d.notes, (n) => n.project_id === id);
  removeWhere(
    d.subscriptions,
    (s) => (s.type === 'Issue' && issueIds.has(s.id)) || (s.type === 'MergeRequest' && mrIds.has(s.id)),
  );
  removeWhere(d.statuses, (s) => s.project_id === id);
  removeWhere(d.events, (e) => e.project_id === id);
  removeWhere(d.uploads, (u) => u.project_id === id);
  removeWhere(d.protectedBranches, (b) => b.project_id === id);
  // Forks of it stay, but are no longer forks (real servers destroy the fork links).
  for (const p of d.projects) if (p.forked_from_id === id) p.forked_from_id = null;
  ctx.db.changed();
  await ctx.git.remove(id);
}
