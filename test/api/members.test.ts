import { describe, expect, it } from 'vitest';
import { AccessLevel } from '../../src/api/members.ts';
import member from '../fixtures/api/member.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

describe('members client', () => {
  useNock();
  const client = testClient();

  it('names the access levels of real servers', () => {
    expect(AccessLevel).toEqual({ guest: 10, reporter: 20, developer: 30, master: 40, owner: 50 });
  });

  it('lists members with a search query, per_page=100', async () => {
    api().get('/projects/acme%2Fweb/members').query({ per_page: '100', query: 'ray' }).reply(200, [member]);
    expect(await collect(client.members.list('acme/web', { query: 'ray' }))).toEqual([member]);
  });

  it('reads one member', async () => {
    api().get('/projects/8/members/1').reply(200, member);
    expect((await client.members.get(8, 1)).access_level).toBe(AccessLevel.master);
  });

  it("reads one member of a group (the project's own list holds only its own members)", async () => {
    api()
      .get('/groups/5/members/1')
      .reply(200, { ...member, access_level: 30 });
    expect((await client.members.getInGroup(5, 1)).access_level).toBe(AccessLevel.developer);
    api().get('/groups/5/members/2').reply(404, { message: '404 Not found' });
    await expect(client.members.getInGroup(5, 2)).rejects.toMatchObject({ status: 404 });
  });

  it('adds a member with user_id and access_level (201)', async () => {
    api()
      .post('/projects/8/members', { user_id: 1, access_level: 30 })
      .reply(201, { ...member, access_level: 30 });
    expect(await client.members.add(8, 1, AccessLevel.developer)).toMatchObject({ id: 1, access_level: 30 });
  });

  it('retries an add after a 503, as adding is idempotent', async () => {
    api().post('/projects/8/members', { user_id: 1, access_level: 30 }).reply(503, { message: 'busy' });
    api()
      .post('/projects/8/members', { user_id: 1, access_level: 30 })
      .reply(201, { ...member, access_level: 30 });
    expect((await client.members.add(8, 1, AccessLevel.developer)).access_level).toBe(30);
  });

  it('changes a member access level with PUT', async () => {
    api()
      .put('/projects/8/members/1', { access_level: 20 })
      .reply(200, { ...member, access_level: 20 });
    expect((await client.members.update(8, 1, AccessLevel.reporter)).access_level).toBe(20);
  });

  it.each([
    ['a member (body: the membership)', { ...member, project_id: 8 }],
    ['a non-member (body differs)', { message: 'Access revoked' }],
  ] as const)('removes %s and returns nothing', async (_name, body) => {
    api().delete('/projects/8/members/1').reply(200, body);
    await expect(client.members.remove(8, 1)).resolves.toBeUndefined();
  });

  it('maps a removal without rights to 403', async () => {
    api().delete('/projects/8/members/1').reply(403, { message: '403 Forbidden' });
    await expect(client.members.remove(8, 1)).rejects.toMatchObject({ status: 403, kind: 'forbidden' });
  });

  it('shares a project with a group (group_id, group_access)', async () => {
    api()
      .post('/projects/8/share', { group_id: 4, group_access: 30 })
      .reply(201, { id: 1, project_id: 8, group_id: 4, group_access: 30 });
    await expect(client.members.share(8, 4, AccessLevel.developer)).resolves.toBeUndefined();
  });

  it('maps a missing share parameter (400) with the server words', async () => {
    api()
      .post('/projects/8/share', { group_id: 4 })
      .reply(400, { message: '400 (Bad request) "group_access" not given' });
    await expect(client.members.share(8, 4, undefined as unknown as AccessLevel)).rejects.toMatchObject({
      kind: 'bad_request',
      serverMessage: '400 (Bad request) "group_access" not given',
    });
  });

  it('acts as another user with sudo per call', async () => {
    apiAs('jane').get('/projects/8/members/1').reply(200, member);
    expect((await client.members.get(8, 1, { sudo: 'jane' })).username).toBe('raymond_smith');
  });
});
