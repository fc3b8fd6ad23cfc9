/**
 * The sandbox's group members (`GET /groups/:id/members[/:user_id]`, as 8.x answers them): readable by
 * the group's members, administrators and whoever sees one of its projects; 404 otherwise.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import type { UserRec } from '../../src/sandbox/db.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { DEVELOPER, REPORTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';

describe('sandbox group members', () => {
  const ctx = useSandbox();
  const users: Record<string, UserRec> = {};
  let groupId = 0;
  let emptyGroupId = 0;

  beforeAll(async () => {
    const db = ctx().db;
    for (const name of ['gdev', 'gprojectmember', 'gstranger'])
      users[name] = addUser(db, { username: name, email: `${name}@example.com` });
    groupId = addGroup(db, {
      name: 'Guild',
      path: 'guild',
      owner_id: 1,
      members: [{ user_id: users.gdev!.id, access_level: DEVELOPER }],
    }).id;
    emptyGroupId = addGroup(db, { name: 'Hidden', path: 'hidden', owner_id: 1 }).id;
    const project = await addProject(ctx().ctx, { name: 'guilded', namespace_id: groupId, creator_id: 1 });
    db.data.members.push({
      project_id: project.id,
      user_id: users.gprojectmember!.id,
      access_level: REPORTER,
      created_at: db.now(),
    });
  });

  const get = (path: string, name: string) => ctx().call('GET', path, { token: users[name]!.private_token });

  it('answers a member with their access level, to a member of the group and to a member of one of its projects', async () => {
    for (const reader of ['gdev', 'gprojectmember']) {
      const res = await get(`/groups/${groupId}/members/${users.gdev!.id}`, reader);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: users.gdev!.id,
        username: 'gdev',
        state: 'active',
        access_level: 30,
      });
    }
    const list = await get(`/groups/${groupId}/members`, 'gdev');
    expect(list.status).toBe(200);
    expect(list.body.map((m: { username: string }) => m.username)).toEqual(['root', 'gdev']);
  });

  it('404 for a user who is not a member of the group (a project member is not a group member)', async () => {
    const res = await get(`/groups/${groupId}/members/${users.gprojectmember!.id}`, 'gdev');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: '404 Not found' });
  });

  it('404 Group Not Found for a group the caller cannot see, or that does not exist', async () => {
    for (const path of [`/groups/${emptyGroupId}/members/1`, '/groups/99999/members/1']) {
      const res = await get(path, 'gstranger');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Group Not Found' });
    }
  });
  it('lists the members with their access level in the group, paginated (the client follows the pages)', async () => {
    const first = await ctx().call('GET', `/groups/${groupId}/members`, {
      token: users.gdev!.private_token,
      query: { per_page: 1 },
    });
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(1);
    expect(first.headers.get('x-total')).toBe('2');
    const client = createClient({ baseUrl: ctx().sb.url, token: users.gdev!.private_token });
    const all = [];
    for await (const member of client.members.listGroup(groupId, { perPage: 1 })) all.push(member);
    expect(all.map((m) => [m.username, m.access_level])).toEqual([
      ['root', 50],
      ['gdev', 30],
    ]);
  });

  it('404 for a personal namespace: only groups have members here', async () => {
    const personal = ctx().db.data.namespaces.find((n) => n.kind === 'user')!;
    expect((await ctx().call('GET', `/groups/${personal.id}/members`)).status).toBe(404);
  });
});
