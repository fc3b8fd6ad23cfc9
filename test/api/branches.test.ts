import { describe, expect, it } from 'vitest';
import branch from '../fixtures/api/branch.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

const feature = { ...branch, name: 'feature/login', protected: false };

describe('branches client', () => {
  useNock();
  const client = testClient();

  it('lists branches answered without pagination headers (real servers) as one page', async () => {
    api().get('/projects/8/repository/branches').query({ per_page: '100' }).reply(200, [branch, feature]);
    expect((await collect(client.branches.list(8))).map((b) => b.name)).toEqual(['master', 'feature/login']);
  });

  it.each([
    ['a plain name', 'master', '/projects/8/repository/branches/master', branch],
    [
      'a name with a slash, URL-encoded',
      'feature/login',
      '/projects/8/repository/branches/feature%2Flogin',
      feature,
    ],
  ] as const)('reads a branch by %s', async (_name, name, path, answer) => {
    api().get(path).reply(200, answer);
    expect(await client.branches.get(8, name)).toEqual(answer);
  });

  it.each([
    ['protect', true],
    ['unprotect', false],
  ] as const)('%s sends PUT .../branches/:branch/%s', async (action, isProtected) => {
    api()
      .put(`/projects/acme%2Fweb/repository/branches/feature%2Flogin/${action}`)
      .reply(200, { ...feature, protected: isProtected });
    expect((await client.branches[action]('acme/web', 'feature/login')).protected).toBe(isProtected);
  });

  it('creates a branch from a ref (201)', async () => {
    api()
      .post('/projects/8/repository/branches', { branch_name: 'feature/login', ref: 'master' })
      .reply(201, feature);
    expect(await client.branches.create(8, { branch_name: 'feature/login', ref: 'master' })).toEqual(feature);
  });

  it.each(['Branch already exists', 'Invalid reference name'])(
    'maps a refused create (400 %s) with the server words',
    async (message) => {
      api()
        .post('/projects/8/repository/branches', { branch_name: 'master', ref: 'nope' })
        .reply(400, { message });
      await expect(client.branches.create(8, { branch_name: 'master', ref: 'nope' })).rejects.toMatchObject({
        status: 400,
        kind: 'bad_request',
        serverMessage: message,
      });
    },
  );

  it('maps a missing branch to 404', async () => {
    api().get('/projects/8/repository/branches/gone').reply(404, { message: '404 Branch Not Found' });
    await expect(client.branches.get(8, 'gone')).rejects.toMatchObject({ status: 404, kind: 'not_found' });
  });

  it('acts as another user with sudo per call', async () => {
    apiAs('jane').put('/projects/8/repository/branches/master/protect').reply(200, branch);
    expect((await client.branches.protect(8, 'master', { sudo: 'jane' })).protected).toBe(true);
  });
});
