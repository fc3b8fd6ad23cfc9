import { beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { DEVELOPER, GUEST, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';

describe('sandbox project members', () => {
  const ctx = useSandbox();
  const users: Record<string, UserRec> = {};
  const tokenOf = (name: string) => users[name]!.private_token;
  let project: ProjectRec;
  let groupId: number;
  let friendsGroupId: number;

  /** Makes `name` a direct member of the project at `level`. */
  const join = (name: string, level: number) =>
    ctx().db.data.members.push({
      project_id: project.id,
      user_id: users[name]!.id,
      access_level: level,
      created_at: ctx().db.now(),
    });

  beforeAll(async () => {
    const db = ctx().db;
    for (const name of ['boss', 'dev', 'newbie', 'another', 'leaver', 'outsider', 'grouper'])
      users[name] = addUser(db, { username: name, email: `${name}@example.com` });
    groupId = addGroup(db, { name: 'Crew', path: 'crew', owner_id: 1 }).id;
    friendsGroupId = addGroup(db, {
      name: 'Friends',
      path: 'friends',
      owner_id: 1,
      members: [{ user_id: users.grouper!.id, access_level: DEVELOPER }],
    }).id;
    project = await addProject(ctx().ctx, { name: 'crewed', namespace_id: groupId, creator_id: 1 });
    join('boss', MASTER);
    join('dev', DEVELOPER);
    join('leaver', REPORTER);
  });

  describe('GET', () => {
    it("lists the project's members with their access level (paginated)", async () => {
      const res = await ctx().call('GET', `/projects/${project.id}/members`, { token: tokenOf('dev') });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-total')).toBe('3');
      expect(res.body[0]).toEqual({
        id: users.boss!.id,
        username: 'boss',
        email: 'boss@example.com',
        name: 'boss',
        state: 'active',
        created_at: users.boss!.created_at,
        access_level: MASTER,
      });
      expect(res.body.map((m: any) => m.username)).toEqual(['boss', 'dev', 'leaver']);
    });

    it.each([
      ['a part of a username', 'ea', ['leaver']],
      ['no match', 'zzz', []],
    ])('filters by query: %s', async (_name, query, expected) => {
      const res = await ctx().call('GET', '/projects/crew%2Fcrewed/members', {
        token: tokenOf('dev'),
        query: { query },
      });
      expect(res.body.map((m: any) => m.username)).toEqual(expected);
    });

    it('reads one member, and answers 404 for a non-member', async () => {
      const one = await ctx().call('GET', `/projects/${project.id}/members/${users.dev!.id}`, {
        token: tokenOf('dev'),
      });
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ id: users.dev!.id, access_level: DEVELOPER });
      const none = await ctx().call('GET', `/projects/${project.id}/members/${users.outsider!.id}`, {
        token: tokenOf('dev'),
      });
      expect(none.status).toBe(404);
      expect(none.body).toEqual({ message: '404 Not found' });
    });

    it('answers 404 for a private project to a non-member', async () => {
      const res = await ctx().call('GET', `/projects/${project.id}/members`, { token: tokenOf('outsider') });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Project Not Found' });
    });
  });

  describe('POST', () => {
    it('adds a member (201) and logs a joined event', async () => {
      const res = await ctx().call('POST', `/projects/${project.id}/members`, {
        token: tokenOf('boss'),
        form: { user_id: String(users.newbie!.id), access_level: String(REPORTER) },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ id: users.newbie!.id, username: 'newbie', access_level: REPORTER });
      const events = await ctx().call('GET', `/projects/${project.id}/events`);
      expect(events.body[0]).toMatchObject({ action_name: 'joined', author_id: users.newbie!.id });
    });

    it('is idempotent: adding an existing member leaves the membership unchanged (201)', async () => {
      const res = await ctx().call('POST', `/projects/${project.id}/members`, {
        token: tokenOf('boss'),
        body: { user_id: users.newbie!.id, access_level: MASTER },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ id: users.newbie!.id, access_level: REPORTER });
    });

    it.each([
      ['a developer', 'dev', 403],
      ['a non-member of the private project', 'outsider', 404],
    ])('refuses %s', async (_name, who, status) => {
      const res = await ctx().call('POST', `/projects/${project.id}/members`, {
        token: tokenOf(who),
        body: { user_id: users.another!.id, access_level: GUEST },
      });
      expect(res.status).toBe(status);
    });

    it.each([
      ['user_id', { access_level: GUEST }],
      ['access_level', { user_id: 1 }],
    ])('answers 400 without %s', async (field, body) => {
      const res = await ctx().call('POST', `/projects/${project.id}/members`, {
        token: tokenOf('boss'),
        body,
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: `400 (Bad request) "${field}" not given` });
    });

    it('answers 404 for an unknown user', async () => {
      const res = await ctx().call('POST', `/projects/${project.id}/members`, {
        token: tokenOf('boss'),
        body: { user_id: 9999, access_level: GUEST },
      });
      expect(res.status).toBe(404);
    });

    it.each([5, 50, 'lots'])('answers 422 for access level %s', async (level) => {
      const res = await ctx().call('POST', `/projects/${project.id}/members`, {
        token: tokenOf('boss'),
        body: { user_id: users.another!.id, access_level: level },
      });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message: ['is not included in the list'] });
    });
  });

  describe('PUT', () => {
    it('changes the access level', async () => {
      const res = await ctx().call('PUT', `/projects/${project.id}/members/${users.newbie!.id}`, {
        token: tokenOf('boss'),
        body: { access_level: DEVELOPER },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: users.newbie!.id, access_level: DEVELOPER });
    });

    it.each([
      [
        'without access_level',
        'boss',
        () => users.newbie!.id,
        {},
        400,
        { message: '400 (Bad request) "access_level" not given' },
      ],
      [
        'for a non-member',
        'boss',
        () => users.outsider!.id,
        { access_level: GUEST },
        404,
        { message: '404 User can not be found Not Found' },
      ],
      [
        'with an invalid level',
        'boss',
        () => users.newbie!.id,
        { access_level: 99 },
        422,
        { message: ['is not included in the list'] },
      ],
      [
        'by a developer',
        'dev',
        () => users.newbie!.id,
        { access_level: GUEST },
        403,
        { message: '403 Forbidden' },
      ],
    ])('refuses %s', async (_name, who, userId, body, status, answer) => {
      const res = await ctx().call('PUT', `/projects/${project.id}/members/${userId()}`, {
        token: tokenOf(who),
        body,
      });
      expect(res.status).toBe(status);
      expect(res.body).toEqual(answer);
    });
  });

  describe('DELETE', () => {
    it('removes a member (200), then succeeds again for the non-member (idempotent)', async () => {
      const removed = await ctx().call('DELETE', `/projects/${project.id}/members/${users.newbie!.id}`, {
        token: tokenOf('boss'),
      });
      expect(removed.status).toBe(200);
      expect(removed.body).toMatchObject({ id: users.newbie!.id, username: 'newbie' });
      const events = await ctx().call('GET', `/projects/${project.id}/events`);
      expect(events.body[0]).toMatchObject({ action_name: 'left', author_id: users.newbie!.id });
      const again = await ctx().call('DELETE', `/projects/${project.id}/members/${users.newbie!.id}`, {
        token: tokenOf('boss'),
      });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ message: 'Access revoked', id: users.newbie!.id });
    });

    it('lets a member leave by themselves', async () => {
      const res = await ctx().call('DELETE', `/projects/${project.id}/members/${users.leaver!.id}`, {
        token: tokenOf('leaver'),
      });
      expect(res.status).toBe(200);
      expect(
        ctx().db.data.members.some((m) => m.project_id === project.id && m.user_id === users.leaver!.id),
      ).toBe(false);
    });

    it.each([
      ['another member', () => users.boss!.id],
      ['a non-member', () => users.outsider!.id],
    ])('answers 403 to a developer removing %s', async (_name, userId) => {
      const res = await ctx().call('DELETE', `/projects/${project.id}/members/${userId()}`, {
        token: tokenOf('dev'),
      });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message: '403 Forbidden' });
    });
  });

  describe('POST /projects/:id/share', () => {
    it('shares with a group (201), which gives its members access', async () => {
      const before = await ctx().call('GET', `/projects/${project.id}`, { token: tokenOf('grouper') });
      expect(before.status).toBe(404);
      const res = await ctx().call('POST', `/projects/${project.id}/share`, {
        token: tokenOf('boss'),
        form: { group_id: String(friendsGroupId), group_access: String(REPORTER) },
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(Number),
        project_id: project.id,
        group_id: friendsGroupId,
        group_access: REPORTER,
        expires_at: null,
      });
      const after = await ctx().call('GET', `/projects/${project.id}`, { token: tokenOf('grouper') });
      expect(after.status).toBe(200);
    });

    it.each([
      [
        'a second share with the same group',
        () => ({ group_id: friendsGroupId, group_access: GUEST }),
        409,
        'Group already shared with this group',
      ],
      ['an unknown group', () => ({ group_id: 9999, group_access: GUEST }), 409, "Group can't be blank"],
      [
        'an invalid access level',
        () => ({ group_id: friendsGroupId, group_access: 50 }),
        409,
        'Group access is not included in the list',
      ],
      [
        "the project's own group",
        () => ({ group_id: groupId, group_access: GUEST }),
        409,
        'Project cannot be shared with the project it is in.',
      ],
    ])('answers 409 for %s', async (_name, body, status, message) => {
      const res = await ctx().call('POST', `/projects/${project.id}/share`, {
        token: tokenOf('boss'),
        body: body(),
      });
      expect(res.status).toBe(status);
      expect(res.body).toEqual({ message });
    });

    it.each([
      ['group_id', { group_access: GUEST }],
      ['group_access', { group_id: 1 }],
    ])('answers 400 without %s', async (field, body) => {
      const res = await ctx().call('POST', `/projects/${project.id}/share`, { token: tokenOf('boss'), body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: `400 (Bad request) "${field}" not given` });
    });

    it('answers 403 to a developer', async () => {
      const res = await ctx().call('POST', `/projects/${project.id}/share`, {
        token: tokenOf('dev'),
        body: { group_id: friendsGroupId, group_access: GUEST },
      });
      expect(res.status).toBe(403);
    });
  });
});
