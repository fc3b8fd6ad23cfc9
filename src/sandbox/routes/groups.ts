/**
 * Group members, the one call of the groups family the bot makes (the access a group's projects
 * inherit; docs/api-v3.md#group-members). Not documented for v3 ("Groups: not shown"); as on real 8.x
 * servers (`GroupMembers`): the group's own members with their access level in it, paginated; 404 for
 * an unknown group, 403 for a caller who may not see it (not a member, and none of its projects
 * visible to them).
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import { HttpError, notFound, sendPage } from '../http.ts';
import { canRead } from '../permissions.ts';
import { route } from '../route.ts';
import { userNormalView } from '../user-view.ts';

export function registerGroupRoutes(router: Router, ctx: SandboxContext): void {
  const d = ctx.db.data;

  router.get(
    '/groups/:id/members',
    route(({ req, res, who }) => {
      const group = d.namespaces.find((n) => n.kind === 'group' && String(n.id) === req.params.id);
      if (!group) throw notFound('Group');
      const members = d.groupMembers.filter((m) => m.group_id === group.id);
      const sees =
        who.user.is_admin ||
        members.some((m) => m.user_id === who.user.id) ||
        d.projects.some((p) => p.namespace_id === group.id && canRead(ctx.db, p, who.user));
      if (!sees)
        throw new HttpError(403, {
          message: `403 Forbidden - ${who.user.username} lacks sufficient access to ${group.name}`,
        });
      const rows = members
        .map((m) => ({ member: m, user: d.users.find((u) => u.id === m.user_id) }))
        .filter((row) => row.user !== undefined)
        .sort((a, b) => a.user!.id - b.user!.id)
        .map((row) => ({ ...userNormalView(ctx, row.user!), access_level: row.member.access_level }));
      sendPage(req, res, rows);
    }),
  );
}
