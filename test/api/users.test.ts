import { describe, expect, it } from 'vitest';
import currentUser from '../fixtures/api/current-user.json' with { type: 'json' };
import sshKey from '../fixtures/api/ssh-key.json' with { type: 'json' };
import userAdmin from '../fixtures/api/user-admin.json' with { type: 'json' };
import user from '../fixtures/api/user.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

const email = { id: 1, email: 'john@example.com' };
const newUser = { email: 'jane@example.com', password: 'secret-pass', username: 'jane', name: 'Jane Doe' };

describe('users client', () => {
  useNock();
  const client = testClient();

  it('lists users with search and username filters, per_page=100', async () => {
    api().get('/users').query({ per_page: '100', search: 'john', username: 'john_smith' }).reply(200, [user]);
    const items = await collect(client.users.list({ search: 'john', username: 'john_smith' }));
    expect(items).toEqual([user]);
  });

  it('reads one user; an admin gets the admin view', async () => {
    api().get('/users/1').reply(200, userAdmin);
    const found = await client.users.get(1);
    expect('email' in found && found.email).toBe('john@example.com');
  });

  it('creates a user with a JSON body and answers the admin view', async () => {
    api()
      .post('/users', { ...newUser, messenger: 'jane.doe', admin: false, confirm: false })
      .reply(201, { ...userAdmin, id: 9, username: 'jane', messenger: 'jane.doe' });
    const created = await client.users.create({
      ...newUser,
      messenger: 'jane.doe',
      admin: false,
      confirm: false,
    });
    expect(created).toMatchObject({ id: 9, username: 'jane', messenger: 'jane.doe' });
  });

  it('reports a missing attribute with the server words', async () => {
    api()
      .post('/users', { password: 'secret-pass', username: 'jane', name: 'Jane Doe' })
      .reply(400, { message: '400 (Bad request) "email" not given' });
    const { email: _omitted, ...withoutEmail } = newUser;
    await expect(client.users.create(withoutEmail as typeof newUser)).rejects.toMatchObject({
      status: 400,
      kind: 'bad_request',
      serverMessage: '400 (Bad request) "email" not given',
      fieldErrors: undefined,
    });
  });

  it('edits a user with PUT', async () => {
    api()
      .put('/users/1', { bio: 'Writes tests', projects_limit: 20 })
      .reply(200, { ...userAdmin, bio: 'Writes tests', projects_limit: 20 });
    expect(await client.users.update(1, { bio: 'Writes tests', projects_limit: 20 })).toMatchObject({
      bio: 'Writes tests',
      projects_limit: 20,
    });
  });

  it('maps per-field validation messages of an edit to fieldErrors', async () => {
    api()
      .put('/users/1', { bio: 'x'.repeat(256) })
      .reply(400, { message: { bio: ['is too long (maximum is 255 characters)'] } });
    await expect(client.users.update(1, { bio: 'x'.repeat(256) })).rejects.toMatchObject({
      kind: 'bad_request',
      fieldErrors: { bio: ['is too long (maximum is 255 characters)'] },
    });
  });

  it.each([
    ['the user when it was deleted now', userAdmin, userAdmin],
    ['nothing for an empty body', '', undefined],
    ['nothing for a null body', 'null', undefined],
  ] as const)('deleting a user (always 200) answers %s', async (_name, body, expected) => {
    api().delete('/users/1').reply(200, body);
    expect(await client.users.remove(1)).toEqual(expected);
  });

  it('reads the current user, private_token included', async () => {
    api().get('/user').reply(200, currentUser);
    const me = await client.users.current();
    expect(me).toMatchObject({ id: 2, username: 'hookbot', is_admin: true, private_token: 'dd34asd13as' });
  });

  it('maps a missing or invalid token to 401', async () => {
    api().get('/user').reply(401, { message: '401 Unauthorized' });
    await expect(client.users.current()).rejects.toMatchObject({
      status: 401,
      kind: 'unauthorized',
      serverMessage: '401 Unauthorized',
    });
  });

  it.each(['block', 'unblock'] as const)('%s sends PUT /users/:uid/%s', async (action) => {
    api().put(`/users/5/${action}`).reply(200, 'true');
    await expect(client.users[action](5)).resolves.toBeUndefined();
  });

  it.each([
    ['block', 'LDAP blocked users cannot be modified by the API'],
    ['unblock', 'LDAP blocked users cannot be unblocked by the API'],
  ] as const)('%s of a directory-blocked user is a 403', async (action, message) => {
    api()
      .put(`/users/5/${action}`)
      .reply(403, { message: `403 Forbidden - ${message}` });
    await expect(client.users[action](5)).rejects.toMatchObject({
      status: 403,
      kind: 'forbidden',
      serverMessage: `403 Forbidden - ${message}`,
    });
  });

  it('block of an unknown user is a 404', async () => {
    api().put('/users/99/block').reply(404, { message: '404 User Not Found' });
    await expect(client.users.block(99)).rejects.toMatchObject({ status: 404, kind: 'not_found' });
  });

  const newKey = { title: 'laptop', key: sshKey.key };
  it.each([
    {
      name: 'listKeys reads GET /user/keys',
      call: () => collect(client.users.listKeys()),
      mock: () => api().get('/user/keys').query({ per_page: '100' }).reply(200, [sshKey]),
      expected: [sshKey],
    },
    {
      name: 'listUserKeys reads GET /users/:uid/keys',
      call: () => collect(client.users.listUserKeys(5)),
      mock: () => api().get('/users/5/keys').query({ per_page: '100' }).reply(200, [sshKey]),
      expected: [sshKey],
    },
    {
      name: 'getKey reads GET /user/keys/:id',
      call: () => client.users.getKey(1),
      mock: () => api().get('/user/keys/1').reply(200, sshKey),
      expected: sshKey,
    },
    {
      name: 'addKey sends POST /user/keys with title and key',
      call: () => client.users.addKey(newKey),
      mock: () =>
        api()
          .post('/user/keys', newKey)
          .reply(201, { ...sshKey, title: 'laptop' }),
      expected: { ...sshKey, title: 'laptop' },
    },
    {
      name: 'addUserKey sends POST /users/:id/keys with title and key',
      call: () => client.users.addUserKey(5, newKey),
      mock: () =>
        api()
          .post('/users/5/keys', newKey)
          .reply(201, { ...sshKey, title: 'laptop' }),
      expected: { ...sshKey, title: 'laptop' },
    },
    {
      name: 'removeKey sends DELETE /user/keys/:id',
      call: () => client.users.removeKey(1),
      mock: () => api().delete('/user/keys/1').reply(200, sshKey),
      expected: undefined,
    },
    {
      name: 'removeUserKey sends DELETE /users/:uid/keys/:id',
      call: () => client.users.removeUserKey(5, 1),
      mock: () => api().delete('/users/5/keys/1').reply(200, sshKey),
      expected: undefined,
    },
    {
      name: 'listEmails reads GET /user/emails',
      call: () => collect(client.users.listEmails()),
      mock: () => api().get('/user/emails').query({ per_page: '100' }).reply(200, [email]),
      expected: [email],
    },
    {
      name: 'listUserEmails reads GET /users/:uid/emails',
      call: () => collect(client.users.listUserEmails(5)),
      mock: () => api().get('/users/5/emails').query({ per_page: '100' }).reply(200, [email]),
      expected: [email],
    },
    {
      name: 'getEmail reads GET /user/emails/:id',
      call: () => client.users.getEmail(1),
      mock: () => api().get('/user/emails/1').reply(200, email),
      expected: email,
    },
    {
      name: 'addEmail sends POST /user/emails with email',
      call: () => client.users.addEmail('jane@example.com'),
      mock: () =>
        api()
          .post('/user/emails', { email: 'jane@example.com' })
          .reply(201, { id: 2, email: 'jane@example.com' }),
      expected: { id: 2, email: 'jane@example.com' },
    },
    {
      name: 'addUserEmail sends POST /users/:id/emails with email',
      call: () => client.users.addUserEmail(5, 'jane@example.com'),
      mock: () =>
        api()
          .post('/users/5/emails', { email: 'jane@example.com' })
          .reply(201, { id: 2, email: 'jane@example.com' }),
      expected: { id: 2, email: 'jane@example.com' },
    },
    {
      name: 'removeEmail sends DELETE /user/emails/:id',
      call: () => client.users.removeEmail(1),
      mock: () => api().delete('/user/emails/1').reply(200, email),
      expected: undefined,
    },
    {
      name: 'removeUserEmail sends DELETE /users/:uid/emails/:id',
      call: () => client.users.removeUserEmail(5, 1),
      mock: () => api().delete('/users/5/emails/1').reply(200, email),
      expected: undefined,
    },
  ])('$name', async ({ call, mock, expected }) => {
    mock();
    expect(await call()).toEqual(expected);
  });

  it('reads /user/keys answered without pagination headers (real servers) as one page', async () => {
    const second = { ...sshKey, id: 2, title: 'desktop' };
    api().get('/user/keys').query({ per_page: '100' }).reply(200, [sshKey, second]);
    expect((await collect(client.users.listKeys())).map((k) => k.id)).toEqual([1, 2]);
  });

  it.each([
    {
      name: 'a taken key',
      call: () => client.users.addKey(newKey),
      mock: () =>
        api()
          .post('/user/keys', newKey)
          .reply(400, {
            message: { fingerprint: ['has already been taken'], key: ['has already been taken'] },
          }),
      fieldErrors: { fingerprint: ['has already been taken'], key: ['has already been taken'] },
    },
    {
      name: 'a taken e-mail',
      call: () => client.users.addEmail('john@example.com'),
      mock: () =>
        api()
          .post('/user/emails', { email: 'john@example.com' })
          .reply(400, { message: { email: ['has already been taken'] } }),
      fieldErrors: { email: ['has already been taken'] },
    },
  ])('maps the per-field 400 for $name to fieldErrors', async ({ call, mock, fieldErrors }) => {
    mock();
    await expect(call()).rejects.toMatchObject({ status: 400, kind: 'bad_request', fieldErrors });
  });

  it.each([
    ['removeUserKey', () => client.users.removeUserKey(5, 77), '/users/5/keys/77'],
    ['removeUserEmail', () => client.users.removeUserEmail(5, 77), '/users/5/emails/77'],
  ] as const)(
    '%s of a missing item is a 404 (the admin path is not idempotent)',
    async (_name, call, path) => {
      api().delete(path).reply(404, { message: '404 Not found' });
      await expect(call()).rejects.toMatchObject({ status: 404, kind: 'not_found' });
    },
  );

  it('acts as another user with sudo per call', async () => {
    apiAs('jane').get('/user/emails').query({ per_page: '100' }).reply(200, [email]);
    expect(await collect(client.users.listEmails({ sudo: 'jane' }))).toEqual([email]);
  });

  it.each([
    [403, 'forbidden', '403 Forbidden: Must be admin to use sudo'],
    [404, 'not_found', '404 Not Found: No user id or username for: ghost'],
  ] as const)('maps a refused sudo (%i) with the server words', async (status, kind, message) => {
    apiAs('ghost').get('/user').reply(status, { message });
    await expect(client.users.current({ sudo: 'ghost' })).rejects.toMatchObject({
      status,
      kind,
      serverMessage: message,
    });
  });
});
