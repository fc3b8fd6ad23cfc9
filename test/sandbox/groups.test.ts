/**
 * Group members (`GET /groups/:id/members`), the real 8.x call the bot reads to learn the access a
 * group's projects inherit (the plan of a merge request's `.hookbot.yml`, docs/repository-rules.md).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { useSandbox } from '../helpers/sandbox.ts';

describe('sandbox: group members', () => {
  const ctx = useSandbox();
  let group = 0;
  let other = 0;
  const tokens = { member: 'group-member-token', stranger: 'group-stranger-token' };

  beforeAll(async () => {
    const { db } = ctx();
    const member = addUser(db, { username: 'gm-member', private_token: tokens.member });
    addUser(db, { username: 'gm-stranger', private_token: tokens.stranger });
    const reporter = addUser(db, { username: 'gm-reporter' });
    group = addGroup(db, {
      name: 'gm',
      owner_id: 1,
      members: [
        { user_id: member.id, access_level: 30 },
        { user_id: reporter.id, access_level: 20 },
      ],
    }).id;
    // A group whose only project is private: strangers may not see it.
    other = addGroup(db, { name: 'gm-private', owner_id: 1 }).id;
    await addProject(ctx().ctx, { name: 'hidden', namespace_id: other, creator_id: 1, visibility_level: 0 });
  });

  it('lists the members with their access level in the group, paginated', async () => {
    const { call } = ctx();
    const first = await call('GET', `/groups/${group}/members`, {
      token: tokens.member,
      query: { per_page: 2 },
    });
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(2);
    expect(first.body[0]).toEqual(
      expect.objectContaining({ id: 1, username: 'root', access_level: 50, state: 'active' }),
    );
    expect(first.headers.get('x-total')).toBe('3');
    const client = createClient({ baseUrl: ctx().sb.url, token: tokens.member });
    const all = [];
    for await (const member of client.members.listGroup(group, { perPage: 1 })) all.push(member);
    expect(all.map((m) => [m.username, m.access_level])).toEqual([
      ['root', 50],
      ['gm-member', 30],
      ['gm-reporter', 20],
    ]);
  });

  it('404 for an unknown group or a personal namespace; 403 for a caller who may not see it', async () => {
    const { call, db } = ctx();
    expect((await call('GET', '/groups/99999/members')).status).toBe(404);
    const personal = db.data.namespaces.find((n) => n.kind === 'user')!;
    expect((await call('GET', `/groups/${personal.id}/members`)).status).toBe(404);
    const refused = await call('GET', `/groups/${other}/members`, { token: tokens.stranger });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('403 Forbidden - gm-stranger lacks sufficient access to gm-private');
    // Admins see every group.
    expect((await call('GET', `/groups/${other}/members`)).status).toBe(200);
  });
});
