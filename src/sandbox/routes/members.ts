/**
 * Project team members and sharing (docs/api-v3.md#project-team-members). As on real 8.x servers the
 * list holds the project's own members (group members reach the project through the group), and
 * adding, editing and sharing need master access.
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import type { ProjectMemberRec, ProjectRec, UserRec } from '../db.ts';
import { recordEvent } from '../events.ts';
import { HttpError, forbidden, notFound, requiredStr, sendPage, str } from '../http.ts';
import { DEVELOPER, GUEST, MASTER, REPORTER } from '../permissions.ts';
import { removeWhere } from '../remove-project.ts';
import { projectRoute } from '../route.ts';

/** The levels a project membership or share may have (owner is a namespace's, never a member's). */
const MEMBER_LEVELS = [GUEST, REPORTER, DEVELOPER, MASTER];

/** docs/api-v3.md#project-team-member: id, username, email, name, state, created_at, access_level. */
export function memberView(user: UserRec, member: ProjectMemberRec) {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    name: user.name,
    state: user.state,
    created_at: user.created_at,
    access_level: member.access_level,
  };
}

/** Real servers answer an access level outside the list with 422 and the model's messages. */
function readAccessLevel(p: Record<string, unknown>, name: string): number {
  const raw = requiredStr(p, name);
  const level = Number(raw);
  if (!MEMBER_LEVELS.includes(level)) {
    if (name === 'access_level') throw new HttpError(422, { message: ['is not included in the list'] });
    throw new HttpError(409, { message: 'Group access is not included in the list' });
  }
  return level;
}

function membersOf(ctx: SandboxContext, project: ProjectRec) {
  return ctx.db.data.members
    .filter((m) => m.project_id === project.id)
    .map((m) => ({ member: m, user: ctx.db.data.users.find((u) => u.id === m.user_id) }))
    .filter((x): x is { member: ProjectMemberRec; user: UserRec } => x.user !== undefined)
    .sort((a, b) => a.user.id - b.user.id);
}

export function registerMemberRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  router.get(
    '/projects/:id/members',
    projectRoute(db, 'visible', ({ req, res, p, project }) => {
      // `query` matches usernames, as real servers search.
      const query = str(p, 'query')?.toLowerCase();
      const members = membersOf(ctx, project).filter(
        (x) => !query || x.user.username.toLowerCase().includes(query),
      );
      sendPage(
        req,
        res,
        members.map((x) => memberView(x.user, x.member)),
      );
    }),
  );

  router.get(
    '/projects/:id/members/:user_id',
    projectRoute(db, 'visible', ({ req, res, project }) => {
      const found = membersOf(ctx, project).find((x) => String(x.user.id) === String(req.params.user_id));
      if (!found) throw notFound();
      res.json(memberView(found.user, found.member));
    }),
  );

  router.post(
    '/projects/:id/members',
    projectRoute(db, MASTER, ({ res, p, project }) => {
      const userRef = requiredStr(p, 'user_id');
      requiredStr(p, 'access_level');
      const user = db.data.users.find((u) => String(u.id) === userRef);
      if (!user) throw notFound();
      // docs/api-v3.md#project-team-members: idempotent; an existing membership is left unchanged and answered again.
      const existing = db.data.members.find((m) => m.project_id === project.id && m.user_id === user.id);
      if (existing) {
        res.status(201).json(memberView(user, existing));
        return;
      }
      const member: ProjectMemberRec = {
        project_id: project.id,
        user_id: user.id,
        access_level: readAccessLevel(p, 'access_level'),
        created_at: db.now(),
      };
      db.data.members.push(member);
      recordEvent(db, { project_id: project.id, author_id: user.id, action_name: 'joined' });
      res.status(201).json(memberView(user, member));
    }),
  );

  router.put(
    '/projects/:id/members/:user_id',
    projectRoute(db, MASTER, ({ req, res, p, project }) => {
      requiredStr(p, 'access_level');
      const found = membersOf(ctx, project).find((x) => String(x.user.id) === String(req.params.user_id));
      // Real servers' wording: not_found!("User can not be found").
      if (!found) throw notFound('User can not be found');
      found.member.access_level = readAccessLevel(p, 'access_level');
      db.changed();
      res.json(memberView(found.user, found.member));
    }),
  );

  router.delete(
    '/projects/:id/members/:user_id',
    projectRoute(db, 'visible', ({ req, res, who: c, project, level }) => {
      const found = membersOf(ctx, project).find((x) => String(x.user.id) === String(req.params.user_id));
      // Masters remove anyone; a member may leave by themselves. Anyone else: 403, member or not.
      const leaving = found !== undefined && found.user.id === c.user.id;
      if (!leaving && level < MASTER) throw forbidden();
      if (!found) {
        // docs/api-v3.md#project-team-members: removing a non-member succeeds; real servers answer this body.
        res.json({ message: 'Access revoked', id: Number(String(req.params.user_id)) });
        return;
      }
      removeWhere(db.data.members, (m) => m === found.member);
      recordEvent(db, { project_id: project.id, author_id: found.user.id, action_name: 'left' });
      res.json(memberView(found.user, found.member));
    }),
  );

  router.post(
    '/projects/:id/share',
    projectRoute(db, MASTER, ({ res, p, project }) => {
      const groupRef = requiredStr(p, 'group_id');
      requiredStr(p, 'group_access');
      // Real servers answer a failed share link with 409 and the link's first error message.
      const group = db.data.namespaces.find((n) => n.kind === 'group' && String(n.id) === groupRef);
      if (!group) throw new HttpError(409, { message: "Group can't be blank" });
      const groupAccess = readAccessLevel(p, 'group_access');
      if (group.id === project.namespace_id)
        throw new HttpError(409, { message: 'Project cannot be shared with the project it is in.' });
      if (project.shared_with_groups.some((s) => s.group_id === group.id))
        throw new HttpError(409, { message: 'Group already shared with this group' });
      project.shared_with_groups.push({ group_id: group.id, group_access: groupAccess });
      db.changed();
      // docs/api-v3.md#project-team-members does not show the body; real servers answer the link (id, project_id, group_id,
      // group_access, expires_at). Shares are kept on the project, so the id is a fresh sequence number.
      res.status(201).json({
        id: db.nextId('projectGroupLinks'),
        project_id: project.id,
        group_id: group.id,
        group_access: groupAccess,
        expires_at: null,
      });
    }),
  );
}
