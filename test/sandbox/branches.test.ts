import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushEvent } from '../../src/sandbox/context.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { DEVELOPER, GUEST, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const ZERO = '0000000000000000000000000000000000000000';

describe('sandbox branches', () => {
  const sb = useSandbox();
  const pushes: PushEvent[] = [];
  const listener = (event: PushEvent) => {
    pushes.push(event);
  };
  beforeAll(() => {
    sb().ctx.on.push.push(listener);
  });
  afterAll(() => {
    const list = sb().ctx.on.push;
    list.splice(list.indexOf(listener), 1);
  });

  let n = 0;
  /** A project owned by a fresh user, with a developer, a reporter, a guest and a master. */
  async function world(options: { visibility_level?: 0 | 10 | 20; archived?: boolean } = {}) {
    const { ctx, db } = sb();
    n += 1;
    const owner = addUser(db, { username: `bowner${n}` });
    const project = await addProject(ctx, {
      name: `branches-${n}`,
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      visibility_level: options.visibility_level ?? 0,
      initialFiles: { 'README.md': '# hello\n' },
    });
    project.archived = options.archived ?? false;
    const member = (username: string, level: number) => {
      const user = addUser(db, { username: `${username}${n}` });
      db.data.members.push({
        project_id: project.id,
        user_id: user.id,
        access_level: level,
        created_at: db.now(),
      });
      return user;
    };
    const users = {
      master: member('bmaster', MASTER),
      developer: member('bdev', DEVELOPER),
      reporter: member('brep', REPORTER),
      guest: member('bguest', GUEST),
      stranger: addUser(db, { username: `bstranger${n}` }),
    };
    const base = `/projects/${project.id}/repository/branches`;
    const head = async (name = 'master') => (await ctx.git.branch(project.id, name))!;
    return { project, owner, users, base, head };
  }

  describe('GET /projects/:id/repository/branches', () => {
    it('lists the branches by name, in the Branch form, paginated', async () => {
      const { call } = sb();
      const w = await world();
      expect((await call('POST', w.base, { body: { branch_name: 'zeta', ref: 'master' } })).status).toBe(201);
      expect((await call('POST', w.base, { body: { branch_name: 'alpha', ref: 'master' } })).status).toBe(
        201,
      );
      const head = await w.head();
      const res = await call('GET', w.base);
      expect(res.status).toBe(200);
      expect(res.body.map((b: any) => b.name)).toEqual(['alpha', 'master', 'zeta']);
      expect(res.body[1]).toEqual({
        name: 'master',
        protected: false,
        commit: {
          id: head.id,
          parents: [],
          tree: head.tree,
          message: 'Initial commit',
          author: { name: w.owner.name, email: w.owner.email },
          committer: { name: w.owner.name, email: w.owner.email },
          authored_date: head.authored_date,
          committed_date: head.committed_date,
        },
        // Later 8.x servers: false, not null, on an unprotected branch.
        developers_can_push: false,
        developers_can_merge: false,
      });
      expect(res.body[1].commit.authored_date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
      expect(res.headers.get('x-total')).toBe('3');

      const page = await call('GET', w.base, { query: { per_page: 2, page: 2 } });
      expect(page.body.map((b: any) => b.name)).toEqual(['zeta']);
      expect(page.headers.get('x-total-pages')).toBe('2');
      expect(page.headers.get('x-prev-page')).toBe('1');
      expect(page.headers.get('link')).toContain('rel="prev"');
    });

    it.each([
      ['a guest of a private project', 403, 'guest'],
      ['a stranger to a private project', 404, 'stranger'],
      ['a reporter', 200, 'reporter'],
    ] as const)('answers %s with %i', async (_name, status, who) => {
      const w = await world();
      const res = await sb().call('GET', w.base, { token: w.users[who].private_token });
      expect(res.status).toBe(status);
    });

    it('lets anyone read the branches of a public project', async () => {
      const w = await world({ visibility_level: 20 });
      const res = await sb().call('GET', w.base, { token: w.users.stranger.private_token });
      expect(res.status).toBe(200);
      expect(res.body.map((b: any) => b.name)).toEqual(['master']);
    });
  });

  describe('GET /projects/:id/repository/branches/:branch', () => {
    it.each([
      ['encoded', 'feature%2Fone'],
      ['not encoded', 'feature/one'],
    ])('reads a branch whose name has a slash, %s', async (_name, inPath) => {
      const { call } = sb();
      const w = await world();
      await call('POST', w.base, { body: { branch_name: 'feature/one', ref: 'master' } });
      const res = await call('GET', `${w.base}/${inPath}`);
      expect(res.status).toBe(200);
      expect(res.body.name).toBe('feature/one');
      expect(res.body.commit.id).toBe((await w.head()).id);
    });

    it('reads through the namespace/project path', async () => {
      const w = await world();
      const res = await sb().call(
        'GET',
        `/projects/${w.owner.username}%2F${w.project.path}/repository/branches/master`,
      );
      expect(res.status).toBe(200);
      expect(res.body.name).toBe('master');
    });

    it.each([
      ['an unknown branch', (base: string) => `${base}/nope`, { message: '404 Branch Not Found' }],
      [
        'an unknown project',
        () => '/projects/999999/repository/branches/master',
        { message: '404 Project Not Found' },
      ],
    ])('answers 404 for %s', async (_name, path, body) => {
      const w = await world();
      const res = await sb().call('GET', path(w.base));
      expect(res.status).toBe(404);
      expect(res.body).toEqual(body);
    });
  });

  describe('PUT .../protect and .../unprotect', () => {
    it('protects and unprotects, answering the branch, idempotently', async () => {
      const { call, db } = sb();
      const w = await world();
      for (const round of [1, 2]) {
        const res = await call('PUT', `${w.base}/master/protect`, { token: w.users.master.private_token });
        expect([round, res.status, res.body.protected, res.body.name]).toEqual([round, 200, true, 'master']);
      }
      expect(db.data.protectedBranches.filter((b) => b.project_id === w.project.id)).toEqual([
        { project_id: w.project.id, name: 'master', developers_can_push: false, developers_can_merge: false },
      ]);
      expect((await call('GET', `${w.base}/master`)).body.protected).toBe(true);
      expect((await call('GET', w.base)).body[0].protected).toBe(true);
      for (const round of [1, 2]) {
        const res = await call('PUT', `${w.base}/master/unprotect`, { token: w.users.master.private_token });
        expect([round, res.status, res.body.protected]).toEqual([round, 200, false]);
      }
      expect(db.data.protectedBranches.filter((b) => b.project_id === w.project.id)).toEqual([]);
    });

    it('takes developers_can_push and developers_can_merge: a new protection sets both, a second one changes what it is given', async () => {
      const { call } = sb();
      const w = await world();
      const protect = async (body: Record<string, unknown>) =>
        (await call('PUT', `${w.base}/master/protect`, { body })).body;
      expect(await protect({ developers_can_push: true })).toMatchObject({
        protected: true,
        developers_can_push: true,
        developers_can_merge: false,
      });
      expect(await protect({ developers_can_merge: 'true' })).toMatchObject({
        developers_can_push: true,
        developers_can_merge: true,
      });
      expect(await protect({ developers_can_push: false })).toMatchObject({
        developers_can_push: false,
        developers_can_merge: true,
      });
      expect((await call('GET', `${w.base}/master`)).body).toMatchObject({
        protected: true,
        developers_can_push: false,
        developers_can_merge: true,
      });
      const unprotected = (await call('PUT', `${w.base}/master/unprotect`)).body;
      expect(unprotected).toMatchObject({
        protected: false,
        developers_can_push: false,
        developers_can_merge: false,
      });
      // Protected anew: what is not given is masters only again.
      expect(await protect({})).toMatchObject({ developers_can_push: false, developers_can_merge: false });
    });

    it('protects a branch whose name has a slash', async () => {
      const { call } = sb();
      const w = await world();
      await call('POST', w.base, { body: { branch_name: 'release/1.0', ref: 'master' } });
      const res = await call('PUT', `${w.base}/release%2F1.0/protect`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: 'release/1.0', protected: true });
    });

    it.each([
      ['protect', 'a developer', 403, 'developer', 'master', { message: '403 Forbidden' }],
      ['unprotect', 'a developer', 403, 'developer', 'master', { message: '403 Forbidden' }],
      ['protect', 'a master, missing branch', 404, 'master', 'nope', { message: '404 Branch Not Found' }],
      ['unprotect', 'a master, missing branch', 404, 'master', 'nope', { message: '404 Branch Not Found' }],
    ] as const)('%s by %s answers %i', async (action, _name, status, who, branch, body) => {
      const w = await world();
      const res = await sb().call('PUT', `${w.base}/${branch}/${action}`, {
        token: w.users[who].private_token,
      });
      expect(res.status).toBe(status);
      expect(res.body).toEqual(body);
    });
  });

  describe('POST /projects/:id/repository/branches', () => {
    it('creates a branch at a ref, answers 201 with it and tells the push listeners', async () => {
      const w = await world();
      const head = await w.head();
      pushes.length = 0;
      const res = await sb().call('POST', w.base, {
        token: w.users.developer.private_token,
        body: { branch_name: 'feature', ref: 'master' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name: 'feature', protected: false, commit: { id: head.id } });
      expect((await w.head('feature')).id).toBe(head.id);
      expect(pushes).toHaveLength(1);
      expect(pushes[0]).toMatchObject({ ref: 'refs/heads/feature', before: ZERO, after: head.id });
      expect(pushes[0]!.project.id).toBe(w.project.id);
      expect(pushes[0]!.user.id).toBe(w.users.developer.id);
    });

    it('creates from a sha, sent as a form', async () => {
      const w = await world();
      const head = await w.head();
      const res = await sb().call('POST', w.base, { form: { branch_name: 'from-sha', ref: head.id } });
      expect(res.status).toBe(201);
      expect(res.body.commit.id).toBe(head.id);
    });

    it.each([
      ['no branch_name', { ref: 'master' }, 400, { message: '400 (Bad request) "branch_name" not given' }],
      ['no ref', { branch_name: 'x' }, 400, { message: '400 (Bad request) "ref" not given' }],
      [
        'an existing name',
        { branch_name: 'master', ref: 'master' },
        400,
        { message: 'Branch already exists' },
      ],
      ['an unknown ref', { branch_name: 'x', ref: 'nope' }, 400, { message: 'Invalid reference name' }],
      ['an invalid name', { branch_name: 'a..b', ref: 'master' }, 400, { message: 'Branch name is invalid' }],
      [
        'a refs/heads/ name',
        { branch_name: 'refs/heads/x', ref: 'master' },
        400,
        { message: 'Branch name is invalid' },
      ],
    ])('refuses %s', async (_name, body, status, answer) => {
      const w = await world();
      pushes.length = 0;
      const res = await sb().call('POST', w.base, { body });
      expect(res.status).toBe(status);
      expect(res.body).toEqual(answer);
      expect(pushes).toEqual([]);
    });

    it.each([
      ['a reporter', 'reporter', false, 403],
      ['a developer of an archived project', 'developer', true, 403],
      ['a stranger to a private project', 'stranger', false, 404],
    ] as const)('refuses %s', async (_name, who, archived, status) => {
      const w = await world({ archived });
      const res = await sb().call('POST', w.base, {
        token: w.users[who].private_token,
        body: { branch_name: 'x', ref: 'master' },
      });
      expect(res.status).toBe(status);
    });
  });

  describe('DELETE /projects/:id/repository/branches/:branch', () => {
    it('deletes a branch, answers its name and tells the push listeners', async () => {
      const { call } = sb();
      const w = await world();
      await call('POST', w.base, { body: { branch_name: 'old/topic', ref: 'master' } });
      const head = await w.head();
      pushes.length = 0;
      const res = await call('DELETE', `${w.base}/old%2Ftopic`, { token: w.users.developer.private_token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ branch_name: 'old/topic' });
      expect((await call('GET', `${w.base}/old%2Ftopic`)).status).toBe(404);
      expect(pushes).toHaveLength(1);
      expect(pushes[0]).toMatchObject({ ref: 'refs/heads/old/topic', before: head.id, after: ZERO });
    });

    it.each([
      ['a missing branch', 'nope', false, 404, { message: 'No such branch' }],
      ['the default branch', 'master', false, 405, { message: 'Cannot remove HEAD branch' }],
      ['a protected branch', 'kept', true, 405, { message: 'Protected branch cant be removed' }],
    ])('refuses %s', async (_name, branch, protect, status, body) => {
      const { call } = sb();
      const w = await world();
      await call('POST', w.base, { body: { branch_name: 'kept', ref: 'master' } });
      if (protect) await call('PUT', `${w.base}/kept/protect`);
      const res = await call('DELETE', `${w.base}/${branch}`);
      expect(res.status).toBe(status);
      expect(res.body).toEqual(body);
    });

    it('refuses a reporter', async () => {
      const { call } = sb();
      const w = await world();
      await call('POST', w.base, { body: { branch_name: 'kept', ref: 'master' } });
      const res = await call('DELETE', `${w.base}/kept`, { token: w.users.reporter.private_token });
      expect(res.status).toBe(403);
      expect((await w.head('kept')).id).toBe((await w.head()).id);
    });
  });
});
