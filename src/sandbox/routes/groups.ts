/**
 * Group members: `GET /groups/:id/members` and `GET /groups/:id/members/:user_id`, as 8.x servers
 * answer them (groups are "not shown" in docs/api-v3.md). The merge queue reads them to learn an
 * author's access to a project of the group: the project's own member list holds only its own
 * members. A group is readable by administrators, its members, and whoever can see one of its
 * projects (8.x's group policy); anyone else gets 404 `Group Not Found`.
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import type { NamespaceRec, UserRec } from '../db.ts';
import { notFound, sendPage } from '../http.ts';
import { canRead } from '../permissions.ts';
import { route } from '../route.ts';

function memberView(user: UserRec, accessLevel: number) {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    name: user.name,
    state: user.state,
    created_at: user.created_at,
    access_level: accessLevel,
  };
}

export function registerGroupRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  function readableGroup(ref: string, user: UserRec): NamespaceRec {
    const group = db.data.namespaces.find(
      (n) => n.kind === 'group' && (String(n.id) === ref || n.path.toLowerCase() === ref.toLowerCase()),
    );
    if (!group) throw notFound('Group');
    const readable =
      user.is_admin ||
      db.data.groupMembers.some((m) => m.group_id === group.id && m.user_id === user.id) ||
      db.data.projects.some((p) => p.namespace_id === group.id && canRead(db, p, user));
    if (!readable) throw notFound('Group');
    return group;
  }

  function membersOf(group: NamespaceRec) {
    return db.data.groupMembers
      .filter((m) => m.group_id === group.id)
      .map((m) => ({ member: m, user: db.data.users.find((u) => u.id === m.user_id) }))
      .filter((x): x is { member: (typeof x)['member']; user: UserRec } => x.user !== undefined)
      .sort((a, b) => a.user.id - b.user.id);
  }

  router.get(
    '/groups/:id/members',
    route(({ req, res, who }) => {
      const group = readableGroup(String(req.params.id), who.user);
      sendPage(
        req,
        res,
        membersOf(group).map((x) => memberView(x.user, x.member.access_level)),
      );
    }),
  );

  router.get(
    '/groups/:id/members/:user_id',
    route(({ req, res, who }) => {
      const group = readableGroup(String(req.params.id), who.user);
      const found = membersOf(group).find((x) => String(x.user.id) === String(req.params.user_id));
      if (!found) throw notFound();
      res.json(memberView(found.user, found.member.access_level));
    }),
  );
}
