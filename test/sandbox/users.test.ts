import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { addGroup, addUser } from '../../src/sandbox/factories.ts';
import { useSandbox } from '../helpers/sandbox.ts';

/** A syntactically real ed25519 public key (random key material), as `ssh-keygen` would print it. */
function sshKey(comment = 'someone@example.com', material: Buffer = randomBytes(32)): string {
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const type = Buffer.from('ssh-ed25519');
  const blob = Buffer.concat([u32(type.length), type, u32(material.length), material]);
  return `ssh-ed25519 ${blob.toString('base64')} ${comment}`;
}

const NORMAL_VIEW = ['avatar_url', 'id', 'name', 'state', 'username', 'web_url'];
const SINGLE_VIEW = [
  ...NORMAL_VIEW,
  'bio',
  'created_at',
  'is_admin',
  'jobnetwork',
  'location',
  'messenger',
  'microblog',
  'website_url',
];
const ADMIN_VIEW = [
  ...SINGLE_VIEW,
  'can_create_group',
  'can_create_project',
  'color_scheme_id',
  'current_sign_in_at',
  'email',
  'extern_uid',
  'external',
  'projects_limit',
  'provider',
  'theme_id',
  'two_factor_enabled',
];
const ADMIN_SINGLE_VIEW = [...ADMIN_VIEW, 'confirmed_at', 'last_sign_in_at'];
const CURRENT_USER_VIEW = [
  'bio',
  'can_create_group',
  'can_create_project',
  'color_scheme_id',
  'created_at',
  'email',
  'id',
  'is_admin',
  'jobnetwork',
  'location',
  'messenger',
  'microblog',
  'name',
  'private_token',
  'projects_limit',
  'state',
  'theme_id',
  'username',
  'website_url',
];
const sorted = (keys: string[]) => [...keys].sort();
/** fetch refuses a body on GET: send one only with the other methods. */
const bodyFor = (method: string, body: unknown) => (method === 'GET' ? {} : { body });

describe('sandbox users', () => {
  const ctx = useSandbox();
  let plain: { id: number; token: string };

  beforeAll(() => {
    const user = addUser(ctx().db, { username: 'plain', name: 'Plain User', email: 'plain@example.com' });
    plain = { id: user.id, token: user.private_token };
  });

  describe('GET /users', () => {
    it('answers the admin view to an admin and the normal view to a user', async () => {
      const asAdmin = await ctx().call('GET', '/users');
      expect(asAdmin.status).toBe(200);
      expect(sorted(Object.keys(asAdmin.body[0]))).toEqual(sorted(ADMIN_VIEW));
      const asUser = await ctx().call('GET', '/users', { token: plain.token });
      expect(asUser.status).toBe(200);
      expect(sorted(Object.keys(asUser.body[0]))).toEqual(sorted(NORMAL_VIEW));
      expect(asUser.headers.get('x-total')).toBe(String(ctx().db.data.users.length));
    });

    it.each([
      ['search by username part', { search: 'lai' }, ['plain']],
      ['search by e-mail', { search: 'plain@example' }, ['plain']],
      ['search is case-insensitive', { search: 'PLAIN' }, ['plain']],
      ['search does not match the display name only', { search: 'Plain User' }, []],
      ['username filter (exact)', { username: 'plain' }, ['plain']],
      ['username filter does not match a part', { username: 'pla' }, []],
    ])('filters: %s', async (_name, query, expected) => {
      const res = await ctx().call('GET', '/users', { query });
      expect(res.status).toBe(200);
      expect(res.body.map((u: any) => u.username)).toEqual(expected);
    });
  });

  describe('GET /users/:id', () => {
    it('answers the single-user admin view to an admin', async () => {
      const res = await ctx().call('GET', `/users/${plain.id}`);
      expect(res.status).toBe(200);
      expect(sorted(Object.keys(res.body))).toEqual(sorted(ADMIN_SINGLE_VIEW));
      expect(res.body).toMatchObject({ id: plain.id, username: 'plain', email: 'plain@example.com' });
    });

    it('answers the single-user view to a user', async () => {
      const res = await ctx().call('GET', '/users/1', { token: plain.token });
      expect(res.status).toBe(200);
      expect(sorted(Object.keys(res.body))).toEqual(sorted(SINGLE_VIEW));
      expect(res.body).toMatchObject({ id: 1, username: 'root', is_admin: true });
    });

    it.each(['999', 'nobody'])('answers 404 for an unknown user %s', async (id) => {
      const res = await ctx().call('GET', `/users/${id}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 User Not Found' });
    });
  });

  describe('POST /users', () => {
    const valid = { email: 'new@example.com', password: 'secret-pass', username: 'newbie', name: 'New Bie' };

    it('is for admins only', async () => {
      const res = await ctx().call('POST', '/users', { token: plain.token, body: valid });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message: '403 Forbidden' });
    });

    it.each(['email', 'password', 'name', 'username'])('answers 400 without %s', async (field) => {
      const body: Record<string, string> = { ...valid };
      delete body[field];
      const res = await ctx().call('POST', '/users', { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: `400 (Bad request) "${field}" not given` });
    });

    it.each([
      [
        'a bio over 255 characters',
        { bio: 'x'.repeat(256) },
        { bio: ['is too long (maximum is 255 characters)'] },
      ],
      ['a malformed e-mail', { email: 'not-an-email' }, { email: ['is invalid'] }],
      ['a short password', { password: 'short' }, { password: ['is too short (minimum is 8 characters)'] }],
      [
        'a username with spaces',
        { username: 'has space' },
        {
          username: [
            "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-' or end in '.'.",
          ],
        },
      ],
      [
        'a negative projects_limit',
        { projects_limit: '-1' },
        { projects_limit: ['must be greater than or equal to 0'] },
      ],
    ])('answers 400 per field for %s', async (_name, override, message) => {
      const res = await ctx().call('POST', '/users', {
        body: { ...valid, username: 'invalid1', ...override },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message });
    });

    it('creates a user (201, admin view) from a form, unconfirmed by default', async () => {
      const res = await ctx().call('POST', '/users', {
        form: { ...valid, bio: 'Hello', projects_limit: '3', can_create_group: 'false', admin: 'true' },
      });
      expect(res.status).toBe(201);
      expect(sorted(Object.keys(res.body))).toEqual(sorted(ADMIN_SINGLE_VIEW));
      expect(res.body).toMatchObject({
        username: 'newbie',
        name: 'New Bie',
        email: 'new@example.com',
        bio: 'Hello',
        projects_limit: 3,
        can_create_group: false,
        is_admin: true,
        state: 'active',
        confirmed_at: null,
      });
      const confirmed = await ctx().call('POST', '/users', {
        body: { ...valid, email: 'conf@example.com', username: 'confirmed', confirm: false },
      });
      expect(confirmed.status).toBe(201);
      expect(confirmed.body.confirmed_at).toEqual(expect.any(String));
      expect(confirmed.body.is_admin).toBe(false);
    });

    it.each([
      ['e-mail', { username: 'other1' }, 'Email has already been taken'],
      ['username', { email: 'other1@example.com' }, 'Username has already been taken'],
    ])('answers 409 for a taken %s (as real servers)', async (_name, override, message) => {
      const res = await ctx().call('POST', '/users', { body: { ...valid, ...override } });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ message });
    });

    it("answers 400 for a username taken by a group's path", async () => {
      addGroup(ctx().db, { name: 'Widgets', path: 'widgets', owner_id: 1 });
      const res = await ctx().call('POST', '/users', {
        body: { ...valid, email: 'w@example.com', username: 'widgets' },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: { username: ['has already been taken'] } });
    });
  });

  describe('PUT /users/:id', () => {
    it('is for admins only', async () => {
      const res = await ctx().call('PUT', `/users/${plain.id}`, { token: plain.token, body: { name: 'X' } });
      expect(res.status).toBe(403);
    });

    it('answers 404 for an unknown user', async () => {
      const res = await ctx().call('PUT', '/users/999', { body: { name: 'X' } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 User Not Found' });
    });

    it('edits the given fields and leaves admin alone when not given', async () => {
      const user = addUser(ctx().db, { username: 'editme', is_admin: true });
      const res = await ctx().call('PUT', `/users/${user.id}`, {
        form: { name: 'Edited', bio: 'New bio', messenger: 'im:edited', projects_limit: '7' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: 'Edited',
        bio: 'New bio',
        messenger: 'im:edited',
        projects_limit: 7,
        is_admin: true,
      });
      const demoted = await ctx().call('PUT', `/users/${user.id}`, { body: { admin: false } });
      expect(demoted.body.is_admin).toBe(false);
    });

    it('renames the personal namespace with the username', async () => {
      const user = addUser(ctx().db, { username: 'renameme' });
      const res = await ctx().call('PUT', `/users/${user.id}`, { body: { username: 'renamed' } });
      expect(res.status).toBe(200);
      expect(res.body.username).toBe('renamed');
      const ns = ctx().db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === user.id);
      expect(ns).toMatchObject({ path: 'renamed', name: 'renamed' });
    });

    it.each([
      ['an e-mail taken by another user', { email: 'plain@example.com' }],
      ['a username taken by another user', { username: 'plain' }],
      ['a username taken by a group', { username: 'widgets' }],
    ])('answers 404 (docs/api-v3.md#errors rule 4) for %s', async (_name, body) => {
      const user = addUser(ctx().db, { username: `conflict${randomBytes(3).toString('hex')}` });
      const res = await ctx().call('PUT', `/users/${user.id}`, { body });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Not found' });
    });

    it('answers 400 per field for a failed validation', async () => {
      const res = await ctx().call('PUT', `/users/${plain.id}`, { body: { bio: 'b'.repeat(300) } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: { bio: ['is too long (maximum is 255 characters)'] } });
    });
  });

  describe('DELETE /users/:id', () => {
    it('is for admins only', async () => {
      const res = await ctx().call('DELETE', `/users/${plain.id}`, { token: plain.token });
      expect(res.status).toBe(403);
    });

    it('answers 200 with the user, then 200 with an empty body (idempotent)', async () => {
      const user = addUser(ctx().db, { username: 'doomed' });
      const { addProject } = await import('../../src/sandbox/factories.ts');
      const ns = ctx().db.data.namespaces.find((n) => n.owner_id === user.id && n.kind === 'user')!;
      const project = await addProject(ctx().ctx, { name: 'gone', namespace_id: ns.id, creator_id: user.id });
      const first = await ctx().call('DELETE', `/users/${user.id}`);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ id: user.id, username: 'doomed' });
      expect(ctx().db.data.users.some((u) => u.id === user.id)).toBe(false);
      expect(ctx().db.data.projects.some((p) => p.id === project.id)).toBe(false);
      const again = await ctx().call('DELETE', `/users/${user.id}`);
      expect(again.status).toBe(200);
      expect(again.text).toBe('');
    });

    it('keeps the only owner of a group (200, empty body)', async () => {
      const user = addUser(ctx().db, { username: 'groupowner' });
      addGroup(ctx().db, { name: 'Solo', path: 'solo', owner_id: user.id });
      const res = await ctx().call('DELETE', `/users/${user.id}`);
      expect(res.status).toBe(200);
      expect(res.text).toBe('');
      expect(ctx().db.data.users.some((u) => u.id === user.id)).toBe(true);
    });
  });

  describe('GET /user', () => {
    it('answers the current-user view with the private token', async () => {
      const res = await ctx().call('GET', '/user', { token: plain.token });
      expect(res.status).toBe(200);
      expect(sorted(Object.keys(res.body))).toEqual(sorted(CURRENT_USER_VIEW));
      expect(res.body).toMatchObject({ id: plain.id, username: 'plain', private_token: plain.token });
    });

    it('answers as the sudo user when an admin uses sudo', async () => {
      const res = await ctx().call('GET', '/user', { headers: { sudo: 'plain' } });
      expect(res.body.username).toBe('plain');
    });
  });

  describe('authentication', () => {
    let oauthUser: { token: string; oauth: string; username: string };
    beforeAll(() => {
      const user = addUser(ctx().db, { username: 'oauthy' });
      user.oauth_tokens.push('oauth-token-123');
      oauthUser = { token: user.private_token, oauth: 'oauth-token-123', username: user.username };
    });

    it.each([
      ['the PRIVATE-TOKEN header', () => ({ token: oauthUser.token })],
      ['the private_token query', () => ({ token: null, query: { private_token: oauthUser.token } })],
      ['the access_token query', () => ({ token: null, query: { access_token: oauthUser.oauth } })],
      ['a Bearer header', () => ({ token: null, headers: { authorization: `Bearer ${oauthUser.oauth}` } })],
    ])('accepts %s', async (_name, options) => {
      const res = await ctx().call('GET', '/user', options());
      expect(res.status).toBe(200);
      expect(res.body.username).toBe('oauthy');
    });

    it('accepts the private_token form field of a form-encoded body', async () => {
      const res = await ctx().call('POST', '/user/emails', {
        token: null,
        form: { private_token: oauthUser.token, email: 'oauthy.form@example.com' },
      });
      expect(res.status).toBe(201);
      expect(ctx().db.data.emails.find((e) => e.id === res.body.id)?.user_id).toBe(
        ctx().db.data.users.find((u) => u.username === 'oauthy')!.id,
      );
    });

    it('rejects an oauth token sent as a private token', async () => {
      const res = await ctx().call('GET', '/user', { token: oauthUser.oauth });
      expect(res.status).toBe(401);
    });

    it('accepts a JSON {} body on GET, as old clients send', async () => {
      const url = new URL(`${ctx().sb.apiUrl}/user`);
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          url,
          {
            method: 'GET',
            headers: {
              'private-token': plain.token,
              'content-type': 'application/json',
              'content-length': '2',
            },
          },
          (res) => {
            let body = '';
            res.on('data', (chunk) => (body += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body).username).toBe('plain');
    });
  });

  describe('SSH keys', () => {
    let keyOwner: { id: number; token: string };
    beforeAll(() => {
      const user = addUser(ctx().db, { username: 'keyowner' });
      keyOwner = { id: user.id, token: user.private_token };
    });

    it("adds, lists (paginated), reads and deletes (idempotent) the caller's keys", async () => {
      const key = sshKey('keyowner@laptop');
      const created = await ctx().call('POST', '/user/keys', {
        token: keyOwner.token,
        body: { title: 'laptop', key },
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.any(Number),
        title: 'laptop',
        key,
        created_at: expect.any(String),
      });

      const list = await ctx().call('GET', '/user/keys', { token: keyOwner.token });
      expect(list.status).toBe(200);
      expect(list.body).toEqual([created.body]);
      expect(list.headers.get('x-total')).toBe('1');
      expect(list.headers.get('link')).toContain('rel="first"');

      const one = await ctx().call('GET', `/user/keys/${created.body.id}`, { token: keyOwner.token });
      expect(one.body).toEqual(created.body);
      const notMine = await ctx().call('GET', `/user/keys/${created.body.id}`, { token: plain.token });
      expect(notMine.status).toBe(404);
      expect(notMine.body).toEqual({ message: '404 Not found' });

      const removed = await ctx().call('DELETE', `/user/keys/${created.body.id}`, { token: keyOwner.token });
      expect(removed.status).toBe(200);
      expect(removed.body).toEqual(created.body);
      const again = await ctx().call('DELETE', `/user/keys/${created.body.id}`, { token: keyOwner.token });
      expect(again.status).toBe(200);
      expect(again.text).toBe('');
    });

    it.each(['title', 'key'])('answers 400 without %s', async (field) => {
      const body: Record<string, string> = { title: 't', key: sshKey() };
      delete body[field];
      const res = await ctx().call('POST', '/user/keys', { token: keyOwner.token, body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: `400 (Bad request) "${field}" not given` });
    });

    it('answers 400 per field for a taken key, and for the same key material with another comment', async () => {
      const material = randomBytes(32);
      const key = sshKey('first', material);
      expect(
        (await ctx().call('POST', '/user/keys', { token: keyOwner.token, body: { title: 'a', key } })).status,
      ).toBe(201);
      const taken = await ctx().call('POST', '/user/keys', { token: plain.token, body: { title: 'b', key } });
      expect(taken.status).toBe(400);
      expect(taken.body).toEqual({
        message: { fingerprint: ['has already been taken'], key: ['has already been taken'] },
      });
      const sameMaterial = await ctx().call('POST', '/user/keys', {
        token: plain.token,
        body: { title: 'c', key: sshKey('second', material) },
      });
      expect(sameMaterial.status).toBe(400);
      expect(sameMaterial.body).toEqual({ message: { fingerprint: ['has already been taken'] } });
    });

    it.each([
      ['not a key at all', 'hello world', { key: ['is invalid'], fingerprint: ['cannot be generated'] }],
      ['a key type with a broken blob', 'ssh-rsa AAAAB3NzaC1 me', { fingerprint: ['cannot be generated'] }],
    ])('answers 400 per field for %s', async (_name, key, message) => {
      const res = await ctx().call('POST', '/user/keys', {
        token: keyOwner.token,
        body: { title: 'x', key },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message });
    });

    describe('admin paths', () => {
      it("lists, adds and deletes another user's keys", async () => {
        const key = sshKey('admin-added');
        const added = await ctx().call('POST', `/users/${keyOwner.id}/keys`, {
          body: { title: 'by admin', key },
        });
        expect(added.status).toBe(201);
        expect(added.body).toMatchObject({ title: 'by admin', key });
        const list = await ctx().call('GET', `/users/${keyOwner.id}/keys`);
        expect(list.status).toBe(200);
        expect(list.body.map((k: any) => k.id)).toContain(added.body.id);
        const removed = await ctx().call('DELETE', `/users/${keyOwner.id}/keys/${added.body.id}`);
        expect(removed.status).toBe(200);
        expect(removed.body).toEqual(added.body);
        const again = await ctx().call('DELETE', `/users/${keyOwner.id}/keys/${added.body.id}`);
        expect(again.status).toBe(404);
        expect(again.body).toEqual({ message: '404 Key Not Found' });
      });

      it.each([
        ['GET', '/users/:uid/keys'],
        ['POST', '/users/:uid/keys'],
        ['DELETE', '/users/:uid/keys/1'],
      ])('%s %s is for admins only', async (method, path) => {
        const res = await ctx().call(method, path.replace(':uid', String(keyOwner.id)), {
          token: plain.token,
          ...bodyFor(method, { title: 't', key: sshKey() }),
        });
        expect(res.status).toBe(403);
      });

      it.each([
        ['GET', '/users/999/keys', '404 User Not Found'],
        ['DELETE', '/users/999/keys/1', '404 User Not Found'],
        ['POST', '/users/999/keys', '404 Not found'],
      ])('%s %s answers 404 for an unknown user', async (method, path, message) => {
        const res = await ctx().call(method, path, bodyFor(method, { title: 't', key: sshKey() }));
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message });
      });

      it('answers 404 for an invalid key on the admin path (docs/api-v3.md#users: 404 on failure)', async () => {
        const res = await ctx().call('POST', `/users/${keyOwner.id}/keys`, {
          body: { title: 't', key: 'nonsense' },
        });
        expect(res.status).toBe(404);
      });
    });
  });

  describe('e-mails', () => {
    let mailer: { id: number; token: string };
    beforeAll(() => {
      const user = addUser(ctx().db, { username: 'mailer' });
      mailer = { id: user.id, token: user.private_token };
    });

    it("adds, lists (paginated), reads and deletes (idempotent) the caller's e-mails", async () => {
      const created = await ctx().call('POST', '/user/emails', {
        token: mailer.token,
        body: { email: 'mailer.second@example.com' },
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ id: expect.any(Number), email: 'mailer.second@example.com' });
      const list = await ctx().call('GET', '/user/emails', { token: mailer.token });
      expect(list.body).toEqual([created.body]);
      expect(list.headers.get('x-total')).toBe('1');
      const one = await ctx().call('GET', `/user/emails/${created.body.id}`, { token: mailer.token });
      expect(one.body).toEqual(created.body);
      const notMine = await ctx().call('GET', `/user/emails/${created.body.id}`, { token: plain.token });
      expect(notMine.status).toBe(404);
      const removed = await ctx().call('DELETE', `/user/emails/${created.body.id}`, { token: mailer.token });
      expect(removed.status).toBe(200);
      expect(removed.body).toEqual(created.body);
      const again = await ctx().call('DELETE', `/user/emails/${created.body.id}`, { token: mailer.token });
      expect(again.status).toBe(200);
      expect(again.text).toBe('');
    });

    it.each([
      ['a primary e-mail of another user', 'plain@example.com', { email: ['has already been taken'] }],
      ['a malformed address', 'nope', { email: ['is invalid'] }],
    ])('answers 400 per field for %s', async (_name, email, message) => {
      const res = await ctx().call('POST', '/user/emails', { token: mailer.token, body: { email } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message });
    });

    it('answers 400 for a secondary e-mail already taken', async () => {
      await ctx().call('POST', '/user/emails', {
        token: mailer.token,
        body: { email: 'shared@example.com' },
      });
      const res = await ctx().call('POST', '/user/emails', {
        token: plain.token,
        body: { email: 'shared@example.com' },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: { email: ['has already been taken'] } });
    });

    it('answers 400 without email', async () => {
      const res = await ctx().call('POST', '/user/emails', { token: mailer.token, body: {} });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: '400 (Bad request) "email" not given' });
    });

    it("lets an admin list, add and delete another user's e-mails", async () => {
      const added = await ctx().call('POST', `/users/${mailer.id}/emails`, {
        body: { email: 'by.admin@example.com' },
      });
      expect(added.status).toBe(201);
      const list = await ctx().call('GET', `/users/${mailer.id}/emails`);
      expect(list.body.map((e: any) => e.email)).toContain('by.admin@example.com');
      const removed = await ctx().call('DELETE', `/users/${mailer.id}/emails/${added.body.id}`);
      expect(removed.status).toBe(200);
      expect(removed.body).toEqual(added.body);
      const again = await ctx().call('DELETE', `/users/${mailer.id}/emails/${added.body.id}`);
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ message: '404 Email Not Found' });
    });

    it.each([
      ['GET', '/users/999/emails', '404 User Not Found'],
      ['DELETE', '/users/999/emails/1', '404 User Not Found'],
      ['POST', '/users/999/emails', '404 Not found'],
    ])('%s %s answers 404 for an unknown user', async (method, path, message) => {
      const res = await ctx().call(method, path, bodyFor(method, { email: 'ghost@example.com' }));
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message });
    });

    it('answers 404 for a taken e-mail on the admin path', async () => {
      const res = await ctx().call('POST', `/users/${mailer.id}/emails`, {
        body: { email: 'plain@example.com' },
      });
      expect(res.status).toBe(404);
    });

    it.each(['GET', 'POST'])('%s /users/:uid/emails is for admins only', async (method) => {
      const res = await ctx().call(method, `/users/${mailer.id}/emails`, {
        token: plain.token,
        ...bodyFor(method, { email: 'x@example.com' }),
      });
      expect(res.status).toBe(403);
    });
  });

  describe('block and unblock', () => {
    it('blocks (true), refuses the blocked token, then false when already blocked; unblock likewise', async () => {
      const user = addUser(ctx().db, { username: 'blockee' });
      const block = await ctx().call('PUT', `/users/${user.id}/block`);
      expect(block.status).toBe(200);
      expect(block.body).toBe(true);
      expect((await ctx().call('GET', '/user', { token: user.private_token })).status).toBe(401);
      const again = await ctx().call('PUT', `/users/${user.id}/block`);
      expect(again.status).toBe(200);
      expect(again.body).toBe(false);
      const listed = await ctx().call('GET', `/users/${user.id}`);
      expect(listed.body.state).toBe('blocked');

      const unblock = await ctx().call('PUT', `/users/${user.id}/unblock`);
      expect(unblock.status).toBe(200);
      expect(unblock.body).toBe(true);
      expect((await ctx().call('GET', '/user', { token: user.private_token })).status).toBe(200);
      const unblockAgain = await ctx().call('PUT', `/users/${user.id}/unblock`);
      expect(unblockAgain.body).toBe(false);
    });

    it.each(['block', 'unblock'])(
      '%s is for admins only and answers 404 for an unknown user',
      async (action) => {
        expect((await ctx().call('PUT', `/users/${plain.id}/${action}`, { token: plain.token })).status).toBe(
          403,
        );
        const missing = await ctx().call('PUT', `/users/999/${action}`);
        expect(missing.status).toBe(404);
        expect(missing.body).toEqual({ message: '404 User Not Found' });
      },
    );

    it.each([
      ['block', '403 Forbidden - LDAP blocked users cannot be modified by the API'],
      ['unblock', '403 Forbidden - LDAP blocked users cannot be unblocked by the API'],
    ])('%s answers 403 for a user blocked by directory synchronization', async (action, message) => {
      const user = addUser(ctx().db, { username: `ldap${action}` });
      user.state = 'blocked';
      user.ldap_blocked = true;
      const res = await ctx().call('PUT', `/users/${user.id}/${action}`);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message });
      expect(user.state).toBe('blocked');
    });
  });
});
