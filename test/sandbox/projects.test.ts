import { beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import { recordEvent } from '../../src/sandbox/events.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { DEVELOPER, GUEST, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';

/** Every documented field (docs/api-v3.md#project) that a create answer carries (not permissions). */
const PROJECT_FIELDS = [
  'archived',
  'avatar_url',
  'builds_enabled',
  'created_at',
  'creator_id',
  'default_branch',
  'description',
  'forks_count',
  'http_url_to_repo',
  'id',
  'issues_enabled',
  'last_activity_at',
  'merge_requests_enabled',
  'name',
  'name_with_namespace',
  'namespace',
  'open_issues_count',
  'path',
  'path_with_namespace',
  'public',
  'public_builds',
  'shared_runners_enabled',
  'snippets_enabled',
  'ssh_url_to_repo',
  'star_count',
  'tag_list',
  'visibility_level',
  'web_url',
  'wiki_enabled',
];

describe('sandbox projects', () => {
  const ctx = useSandbox();
  const users: Record<string, UserRec> = {};
  const tokenOf = (name: string) => users[name]!.private_token;
  let groupId: number;
  let secret: ProjectRec;

  beforeAll(async () => {
    const db = ctx().db;
    for (const name of ['pat', 'dev', 'rep', 'guest', 'mae', 'outsider'])
      users[name] = addUser(db, { username: name, name: name.toUpperCase(), projects_limit: 50 });
    groupId = addGroup(db, {
      name: 'Team',
      path: 'team',
      owner_id: 1,
      members: [
        { user_id: users.mae!.id, access_level: MASTER },
        { user_id: users.dev!.id, access_level: DEVELOPER },
      ],
    }).id;
    // A private group project with one member of each level.
    secret = await addProject(ctx().ctx, {
      name: 'secret',
      namespace_id: groupId,
      creator_id: 1,
      description: 'Top secret',
    });
    db.data.members.push(
      { project_id: secret.id, user_id: users.rep!.id, access_level: REPORTER, created_at: db.now() },
      { project_id: secret.id, user_id: users.guest!.id, access_level: GUEST, created_at: db.now() },
    );
  });

  describe('POST /projects', () => {
    it('answers 400 without a name', async () => {
      const res = await ctx().call('POST', '/projects', {
        token: tokenOf('pat'),
        body: { description: 'x' },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: '400 (Bad request) "name" not given' });
    });

    it("creates a project in the caller's namespace with every documented field (201)", async () => {
      const res = await ctx().call('POST', '/projects', {
        token: tokenOf('pat'),
        form: { name: 'My App', description: 'An app', wiki_enabled: 'false' },
      });
      expect(res.status).toBe(201);
      for (const field of PROJECT_FIELDS) expect(res.body).toHaveProperty(field);
      expect(res.body).not.toHaveProperty('permissions');
      const base = ctx().sb.url;
      expect(res.body).toMatchObject({
        name: 'My App',
        path: 'my-app',
        path_with_namespace: 'pat/my-app',
        name_with_namespace: 'pat / My App',
        description: 'An app',
        default_branch: 'master',
        visibility_level: 0,
        public: false,
        archived: false,
        wiki_enabled: false,
        issues_enabled: true,
        web_url: `${base}/pat/my-app`,
        http_url_to_repo: `${base}/pat/my-app.git`,
        ssh_url_to_repo: 'git@127.0.0.1:pat/my-app.git',
        owner: { id: users.pat!.id, name: 'PAT', created_at: users.pat!.created_at },
        namespace: { name: 'pat', path: 'pat' },
        creator_id: users.pat!.id,
        runners_token: expect.any(String),
        star_count: 0,
        forks_count: 0,
        open_issues_count: 0,
        tag_list: [],
      });
      // Real servers make the creator of a personal project a master member, and log the creation.
      const got = await ctx().call('GET', `/projects/${res.body.id}`, { token: tokenOf('pat') });
      expect(got.body.permissions).toEqual({
        project_access: { access_level: MASTER, notification_level: 3 },
        group_access: null,
      });
      const events = await ctx().call('GET', `/projects/${res.body.id}/events`, { token: tokenOf('pat') });
      expect(events.body.map((e: any) => e.action_name)).toEqual(['created']);
    });

    it.each([
      ['public: true', { public: true }, 20],
      ['public: false', { public: false }, 0],
      ['visibility_level 10', { visibility_level: 10 }, 10],
      ['visibility_level wins over public', { visibility_level: 10, public: true }, 10],
    ])('sets the visibility from %s', async (name, body, level) => {
      const res = await ctx().call('POST', '/projects', {
        token: tokenOf('pat'),
        body: { name: `vis ${name.replace(/[^a-z0-9]+/gi, ' ')}`, ...body },
      });
      expect(res.status).toBe(201);
      expect(res.body.visibility_level).toBe(level);
      expect(res.body.public).toBe(level === 20);
    });

    it('answers 409 for a name taken in the namespace (docs/api-v3.md#errors)', async () => {
      const res = await ctx().call('POST', '/projects', { token: tokenOf('pat'), body: { name: 'My App' } });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        message: { name: ['has already been taken'], path: ['has already been taken'] },
      });
    });

    it.each([
      [
        'an unknown visibility level',
        { name: 'bad vis', visibility_level: 5 },
        { visibility_level: ['is not included in the list'] },
      ],
      [
        'a path with a slash',
        { name: 'badpath', path: 'a/b' },
        {
          path: [
            "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'",
          ],
        },
      ],
      [
        'a name starting with a dash',
        { name: '-dash', path: 'dash' },
        {
          name: [
            "can contain only letters, digits, '_', '.', dash and space. It must start with letter, digit or '_'.",
          ],
        },
      ],
    ])('answers 400 per field for %s', async (_name, body, message) => {
      const res = await ctx().call('POST', '/projects', { token: tokenOf('pat'), body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message });
    });

    it('creates in a group namespace for a group master, and refuses it to a developer', async () => {
      const ok = await ctx().call('POST', '/projects', {
        token: tokenOf('mae'),
        body: { name: 'group-made', namespace_id: groupId },
      });
      expect(ok.status).toBe(201);
      expect(ok.body.path_with_namespace).toBe('team/group-made');
      expect(ok.body).not.toHaveProperty('owner');
      const refused = await ctx().call('POST', '/projects', {
        token: tokenOf('dev'),
        body: { name: 'dev-made', namespace_id: groupId },
      });
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ message: { namespace: ['is not valid'] } });
    });

    it('enforces the per-user project limit with 403 (as real servers)', async () => {
      const limited = addUser(ctx().db, { username: 'limited', projects_limit: 1 });
      const first = await ctx().call('POST', '/projects', {
        token: limited.private_token,
        body: { name: 'one' },
      });
      expect(first.status).toBe(201);
      const second = await ctx().call('POST', '/projects', {
        token: limited.private_token,
        body: { name: 'two' },
      });
      expect(second.status).toBe(403);
      expect(second.body).toEqual({
        message: ['Your project limit is 1 projects! Please contact your administrator to increase it'],
      });
      const none = addUser(ctx().db, { username: 'nolimit', projects_limit: 0 });
      const refused = await ctx().call('POST', '/projects', {
        token: none.private_token,
        body: { name: 'x' },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.message[0]).toMatch(/^Personal project creation is not allowed/);
    });

    it('refuses a visibility the settings restrict to non-admins, but not to admins', async () => {
      await ctx().call('PUT', '/application/settings', { body: { restricted_visibility_levels: [2] } });
      try {
        const refused = await ctx().call('POST', '/projects', {
          token: tokenOf('pat'),
          body: { name: 'too public', public: true },
        });
        expect(refused.status).toBe(400);
        expect(refused.body).toEqual({
          message: { visibility_level: ['Public visibility has been restricted by the administrator.'] },
        });
        const admin = await ctx().call('POST', '/projects', { body: { name: 'admin public', public: true } });
        expect(admin.status).toBe(201);
      } finally {
        await ctx().call('PUT', '/application/settings', { body: { restricted_visibility_levels: null } });
      }
    });
  });

  describe('POST /projects/user/:user_id', () => {
    it('lets an admin create a project owned by another user', async () => {
      const res = await ctx().call('POST', `/projects/user/${users.outsider!.id}`, {
        body: { name: 'Given', description: 'a gift', default_branch: 'main' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        path_with_namespace: 'outsider/given',
        owner: { id: users.outsider!.id },
        creator_id: users.outsider!.id,
        default_branch: 'main',
      });
    });

    it.each([
      ['a non-admin', () => ({ token: tokenOf('pat'), path: `/projects/user/${users.outsider!.id}` }), 403],
      ['an unknown user', () => ({ token: undefined, path: '/projects/user/9999' }), 404],
    ])('refuses %s', async (_name, input, status) => {
      const { token, path } = input();
      const res = await ctx().call('POST', path, { token, body: { name: 'nope' } });
      expect(res.status).toBe(status);
    });

    it('answers 400 without a name, and limit_reached as a validation error', async () => {
      const missing = await ctx().call('POST', `/projects/user/${users.outsider!.id}`, { body: {} });
      expect(missing.status).toBe(400);
      const full = addUser(ctx().db, { username: 'fulluser', projects_limit: 0 });
      const res = await ctx().call('POST', `/projects/user/${full.id}`, { body: { name: 'over' } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        message: {
          limit_reached: [
            'Personal project creation is not allowed. Please contact your administrator with questions',
          ],
        },
      });
    });
  });

  describe('GET /projects/:id', () => {
    it.each([
      ['its id', () => String(secret.id)],
      ['its URL-encoded path', () => 'team%2Fsecret'],
      ['its path in another case', () => 'Team%2FSecret'],
    ])('finds a project by %s', async (_name, ref) => {
      const res = await ctx().call('GET', `/projects/${ref()}`, { token: tokenOf('rep') });
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(secret.id);
    });

    it("answers the caller's permissions; runners_token only to masters and above", async () => {
      const asRep = await ctx().call('GET', `/projects/${secret.id}`, { token: tokenOf('rep') });
      expect(asRep.body.permissions).toEqual({
        project_access: { access_level: REPORTER, notification_level: 3 },
        group_access: null,
      });
      expect(asRep.body).not.toHaveProperty('runners_token');
      const asDev = await ctx().call('GET', `/projects/${secret.id}`, { token: tokenOf('dev') });
      expect(asDev.body.permissions).toEqual({
        project_access: null,
        group_access: { access_level: DEVELOPER, notification_level: 3 },
      });
      expect(asDev.body).not.toHaveProperty('runners_token');
      const asMaster = await ctx().call('GET', `/projects/${secret.id}`, { token: tokenOf('mae') });
      expect(asMaster.body.runners_token).toBe(secret.runners_token);
      // A group project has no owner field.
      expect(asMaster.body).not.toHaveProperty('owner');
    });

    it.each([
      ['by id', () => String(secret.id)],
      ['by path', () => 'team%2Fsecret'],
    ])('hides a private project from a non-member (404) %s', async (_name, ref) => {
      const res = await ctx().call('GET', `/projects/${ref()}`, { token: tokenOf('outsider') });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Project Not Found' });
    });

    it('answers 404 for an unknown project', async () => {
      const res = await ctx().call('GET', '/projects/99999');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Project Not Found' });
    });

    it('shows what the sudo user sees', async () => {
      const asOutsider = await ctx().call('GET', `/projects/${secret.id}`, { query: { sudo: 'outsider' } });
      expect(asOutsider.status).toBe(404);
      const asRep = await ctx().call('GET', `/projects/${secret.id}`, {
        headers: { sudo: String(users.rep!.id) },
      });
      expect(asRep.status).toBe(200);
      expect(asRep.body.permissions.project_access.access_level).toBe(REPORTER);
    });
  });

  describe('lists', () => {
    let lister: UserRec;
    const made: Record<string, ProjectRec> = {};

    beforeAll(async () => {
      const db = ctx().db;
      lister = addUser(db, { username: 'lister', projects_limit: 50 });
      const ns = db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === lister.id)!;
      const specs: [string, Partial<ProjectRec>][] = [
        ['alpha', { visibility_level: 0 }],
        ['bravo', { visibility_level: 10, description: 'has the word zebra' }],
        ['charlie', { visibility_level: 20, archived: true }],
      ];
      for (const [name, extra] of specs) {
        const p = await addProject(ctx().ctx, { name, namespace_id: ns.id, creator_id: lister.id });
        Object.assign(p, extra);
        made[name] = p;
      }
      // Distinct creation times, older than `secret`'s, so the default order (created_at desc) shows.
      made.alpha!.created_at = '2020-01-01T00:00:00.000Z';
      made.bravo!.created_at = '2020-01-02T00:00:00.000Z';
      made.charlie!.created_at = '2020-01-03T00:00:00.000Z';
      // A member of a private group project too.
      db.data.members.push({
        project_id: secret.id,
        user_id: lister.id,
        access_level: GUEST,
        created_at: db.now(),
      });
    });

    const names = (body: any[]) => body.map((p) => p.name);

    it.each([
      ['default order: created_at desc', {}, ['secret', 'charlie', 'bravo', 'alpha']],
      ['order_by name asc', { order_by: 'name', sort: 'asc' }, ['alpha', 'bravo', 'charlie', 'secret']],
      ['order_by id asc', { order_by: 'id', sort: 'asc' }, ['secret', 'alpha', 'bravo', 'charlie']],
      [
        'an unknown order_by falls back to created_at',
        { order_by: 'stars' },
        ['secret', 'charlie', 'bravo', 'alpha'],
      ],
      ['sort asc', { sort: 'asc' }, ['alpha', 'bravo', 'charlie', 'secret']],
      ['archived=true', { archived: true }, ['charlie']],
      ['archived=false', { archived: false }, ['secret', 'bravo', 'alpha']],
      ['visibility=public', { visibility: 'public' }, ['charlie']],
      ['visibility=internal', { visibility: 'internal' }, ['bravo']],
      ['visibility=private', { visibility: 'private' }, ['secret', 'alpha']],
      ['search in the name', { search: 'ALP' }, ['alpha']],
      ['search in the description', { search: 'zebra' }, ['bravo']],
      ['search in the namespace name', { search: 'team' }, ['secret']],
    ])('GET /projects lists the member projects: %s', async (_name, query, expected) => {
      const res = await ctx().call('GET', '/projects', { token: lister.private_token, query });
      expect(res.status).toBe(200);
      expect(names(res.body).filter((n: string) => n in made || n === 'secret')).toEqual(expected);
      expect(res.body[0]).toHaveProperty('permissions');
    });

    it('GET /projects leaves out public projects the caller is no member of', async () => {
      const res = await ctx().call('GET', '/projects', { token: tokenOf('outsider') });
      expect(names(res.body)).not.toContain('charlie');
    });

    it("GET /projects/owned lists the caller's own namespace only", async () => {
      const res = await ctx().call('GET', '/projects/owned', {
        token: lister.private_token,
        query: { order_by: 'name', sort: 'asc' },
      });
      expect(res.status).toBe(200);
      expect(names(res.body)).toEqual(['alpha', 'bravo', 'charlie']);
    });

    it('GET /projects/starred lists the starred projects the caller can see', async () => {
      const star = await ctx().call('POST', `/projects/${made.bravo!.id}/star`, {
        token: tokenOf('outsider'),
      });
      expect(star.status).toBe(201);
      const res = await ctx().call('GET', '/projects/starred', { token: tokenOf('outsider') });
      expect(names(res.body)).toEqual(['bravo']);
      expect(res.body[0].star_count).toBe(1);
    });

    it('GET /projects/all is for admins only', async () => {
      const refused = await ctx().call('GET', '/projects/all', { token: lister.private_token });
      expect(refused.status).toBe(403);
      const all = await ctx().call('GET', '/projects/all', { query: { per_page: 100 } });
      expect(all.status).toBe(200);
      expect(Number(all.headers.get('x-total'))).toBe(ctx().db.data.projects.length);
    });

    it.each([
      ['matches a part of the name', 'rav', {}, ['bravo']],
      ['is case-insensitive', 'CHAR', {}, ['charlie']],
      ['hides private projects of others', 'alpha', {}, []],
      ['orders by name desc', 'a', { order_by: 'name', sort: 'desc' }, ['charlie', 'bravo']],
    ])('GET /projects/search/:query %s', async (_name, query, params, expected) => {
      const res = await ctx().call('GET', `/projects/search/${query}`, {
        token: tokenOf('outsider'),
        query: params,
      });
      expect(res.status).toBe(200);
      expect(names(res.body).filter((n: string) => n in made)).toEqual(expected);
    });
  });

  describe('pagination', () => {
    let many: UserRec;
    beforeAll(async () => {
      many = addUser(ctx().db, { username: 'many', projects_limit: 100 });
      const ns = ctx().db.data.namespaces.find((n) => n.kind === 'user' && n.owner_id === many.id)!;
      for (let i = 1; i <= 45; i++)
        await addProject(ctx().ctx, {
          name: `p${String(i).padStart(2, '0')}`,
          namespace_id: ns.id,
          creator_id: many.id,
        });
    });

    const rels = (link: string | null) =>
      Object.fromEntries(
        (link ?? '').split(', ').map((part) => {
          const [, url, rel] = /<([^>]+)>; rel="(\w+)"/.exec(part)!;
          const u = new URL(url!);
          return [rel, `${u.searchParams.get('page')}/${u.searchParams.get('per_page')}`];
        }),
      );

    it('pages 45 projects by 20 with every header and Link relation', async () => {
      const first = await ctx().call('GET', '/projects/owned', {
        token: many.private_token,
        query: { order_by: 'name', sort: 'asc' },
      });
      expect(first.body).toHaveLength(20);
      expect(first.body[0].name).toBe('p01');
      expect(
        Object.fromEntries(
          ['x-total', 'x-total-pages', 'x-per-page', 'x-page', 'x-next-page', 'x-prev-page'].map((h) => [
            h,
            first.headers.get(h),
          ]),
        ),
      ).toEqual({
        'x-total': '45',
        'x-total-pages': '3',
        'x-per-page': '20',
        'x-page': '1',
        'x-next-page': '2',
        'x-prev-page': '',
      });
      expect(rels(first.headers.get('link'))).toEqual({ next: '2/20', first: '1/20', last: '3/20' });

      const second = await ctx().call('GET', '/projects/owned', {
        token: many.private_token,
        query: { order_by: 'name', sort: 'asc', page: 2 },
      });
      expect(second.body[0].name).toBe('p21');
      expect(rels(second.headers.get('link'))).toEqual({
        prev: '1/20',
        next: '3/20',
        first: '1/20',
        last: '3/20',
      });

      const last = await ctx().call('GET', '/projects/owned', {
        token: many.private_token,
        query: { order_by: 'name', sort: 'asc', page: 3 },
      });
      expect(last.body).toHaveLength(5);
      expect(last.headers.get('x-next-page')).toBe('');
      expect(last.headers.get('x-prev-page')).toBe('2');
      expect(rels(last.headers.get('link'))).toEqual({ prev: '2/20', first: '1/20', last: '3/20' });
    });

    it('caps per_page at 100 and never echoes the token in Link', async () => {
      const res = await ctx().call('GET', '/projects/owned', {
        token: null,
        query: { private_token: many.private_token, per_page: 500 },
      });
      expect(res.body).toHaveLength(45);
      expect(res.headers.get('x-per-page')).toBe('100');
      expect(res.headers.get('x-total-pages')).toBe('1');
      expect(res.headers.get('link')).not.toContain(many.private_token);
    });
  });

  describe('PUT /projects/:id', () => {
    let project: ProjectRec;
    beforeAll(async () => {
      project = await addProject(ctx().ctx, { name: 'editable', namespace_id: groupId, creator_id: 1 });
    });

    it('lets a master edit the description and features', async () => {
      const res = await ctx().call('PUT', `/projects/${project.id}`, {
        token: tokenOf('mae'),
        form: { description: 'Edited', issues_enabled: 'false', default_branch: 'develop' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        description: 'Edited',
        issues_enabled: false,
        default_branch: 'develop',
      });
      expect(res.body).not.toHaveProperty('permissions');
    });

    it.each([
      ['a developer', 'dev', { description: 'x' }],
      ['a master renaming', 'mae', { name: 'renamed' }],
      ['a master changing visibility', 'mae', { visibility_level: 20 }],
    ])('answers 403 to %s', async (_name, who, body) => {
      const res = await ctx().call('PUT', `/projects/${project.id}`, { token: tokenOf(who), body });
      expect(res.status).toBe(403);
    });

    it('lets the owner rename and change visibility', async () => {
      const res = await ctx().call('PUT', `/projects/${project.id}`, {
        body: { name: 'Editable Two', path: 'editable-two', public: true },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: 'Editable Two',
        path_with_namespace: 'team/editable-two',
        visibility_level: 20,
      });
    });

    it.each([
      ['a taken name', { name: 'secret' }, { name: ['has already been taken'] }],
      ['a taken path', { path: 'secret' }, { path: ['has already been taken'] }],
      [
        'an unknown visibility level',
        { visibility_level: 15 },
        { visibility_level: ['is not included in the list'] },
      ],
      [
        'a path ending in .git',
        { path: 'x.git' },
        {
          path: [
            "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'",
          ],
        },
      ],
    ])('answers 400 for %s', async (_name, body, message) => {
      const res = await ctx().call('PUT', `/projects/${project.id}`, { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message });
    });
  });

  describe('forks', () => {
    it("forks into the caller's namespace, counts it, and refuses a second fork (409)", async () => {
      const source = await addProject(ctx().ctx, {
        name: 'forkme',
        namespace_id: groupId,
        creator_id: 1,
        visibility_level: 10,
        description: 'orig',
      });
      const res = await ctx().call('POST', `/projects/fork/${source.id}`, { token: tokenOf('outsider') });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        name: 'forkme',
        path_with_namespace: 'outsider/forkme',
        description: 'orig',
        visibility_level: 10,
        forked_from_project: { id: source.id, path_with_namespace: 'team/forkme' },
        owner: { id: users.outsider!.id },
      });
      const origin = await ctx().call('GET', `/projects/${source.id}`);
      expect(origin.body.forks_count).toBe(1);
      const again = await ctx().call('POST', `/projects/fork/${source.id}`, { token: tokenOf('outsider') });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({
        message: { name: ['has already been taken'], path: ['has already been taken'] },
      });
    });

    it.each([
      ['a non-member of a private project', 'outsider', 404],
      ['a guest of a private project', 'guest', 403],
    ])('refuses %s', async (_name, who, status) => {
      const res = await ctx().call('POST', `/projects/fork/${secret.id}`, { token: tokenOf(who) });
      expect(res.status).toBe(status);
    });

    it('lets a reporter fork a private project', async () => {
      const res = await ctx().call('POST', `/projects/fork/team%2Fsecret`, { token: tokenOf('rep') });
      expect(res.status).toBe(201);
      expect(res.body.path_with_namespace).toBe('rep/secret');
    });

    describe('fork relations (admin only)', () => {
      let a: ProjectRec;
      let b: ProjectRec;
      beforeAll(async () => {
        a = await addProject(ctx().ctx, { name: 'rel-a', namespace_id: groupId, creator_id: 1 });
        b = await addProject(ctx().ctx, { name: 'rel-b', namespace_id: groupId, creator_id: 1 });
      });

      it('creates (201), refuses a second (409), removes (200) and removes again (200, empty)', async () => {
        const made = await ctx().call('POST', `/projects/${b.id}/fork/${a.id}`);
        expect(made.status).toBe(201);
        expect(made.body).toMatchObject({ forked_to_project_id: b.id, forked_from_project_id: a.id });
        expect((await ctx().call('GET', `/projects/${b.id}`)).body.forked_from_project.id).toBe(a.id);
        const again = await ctx().call('POST', `/projects/${b.id}/fork/${a.id}`);
        expect(again.status).toBe(409);
        expect(again.body).toEqual({ message: 'Project already forked' });
        const removed = await ctx().call('DELETE', `/projects/${b.id}/fork`);
        expect(removed.status).toBe(200);
        expect(removed.body).toMatchObject({ forked_to_project_id: b.id, forked_from_project_id: a.id });
        expect((await ctx().call('GET', `/projects/${b.id}`)).body).not.toHaveProperty('forked_from_project');
        const removedAgain = await ctx().call('DELETE', `/projects/${b.id}/fork`);
        expect(removedAgain.status).toBe(200);
        expect(removedAgain.text).toBe('');
      });

      it('answers 404 for an unknown source and 403 to non-admins', async () => {
        const unknown = await ctx().call('POST', `/projects/${b.id}/fork/99999`);
        expect(unknown.status).toBe(404);
        expect(unknown.body).toEqual({ message: '404 Source Project Not Found' });
        expect(
          (await ctx().call('POST', `/projects/${b.id}/fork/${a.id}`, { token: tokenOf('mae') })).status,
        ).toBe(403);
        expect((await ctx().call('DELETE', `/projects/${b.id}/fork`, { token: tokenOf('mae') })).status).toBe(
          403,
        );
      });
    });
  });

  describe('star', () => {
    it('stars (201), answers 304 when starred, unstars (200), answers 304 when not starred', async () => {
      const p = await addProject(ctx().ctx, {
        name: 'starry',
        namespace_id: groupId,
        creator_id: 1,
        visibility_level: 20,
      });
      const star = await ctx().call('POST', `/projects/${p.id}/star`, { token: tokenOf('pat') });
      expect(star.status).toBe(201);
      expect(star.body).toMatchObject({ id: p.id, star_count: 1 });
      const again = await ctx().call('POST', `/projects/${p.id}/star`, { token: tokenOf('pat') });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      const unstar = await ctx().call('DELETE', `/projects/${p.id}/star`, { token: tokenOf('pat') });
      expect(unstar.status).toBe(200);
      expect(unstar.body).toMatchObject({ id: p.id, star_count: 0 });
      const unstarAgain = await ctx().call('DELETE', `/projects/${p.id}/star`, { token: tokenOf('pat') });
      expect(unstarAgain.status).toBe(304);
    });

    it('answers 404 for a private project of others', async () => {
      const res = await ctx().call('POST', `/projects/${secret.id}/star`, { token: tokenOf('outsider') });
      expect(res.status).toBe(404);
    });
  });

  describe('archive and unarchive', () => {
    it.each(['archive', 'unarchive'])(
      '%s is for the owner or an admin (403 for a master, 404 when hidden)',
      async (action) => {
        expect(
          (await ctx().call('POST', `/projects/${secret.id}/${action}`, { token: tokenOf('mae') })).status,
        ).toBe(403);
        expect(
          (await ctx().call('POST', `/projects/${secret.id}/${action}`, { token: tokenOf('outsider') }))
            .status,
        ).toBe(404);
      },
    );

    it('archives and unarchives idempotently with 201', async () => {
      const res = await ctx().call('POST', '/projects', {
        token: tokenOf('pat'),
        body: { name: 'archivable' },
      });
      const id = res.body.id;
      for (const [action, archived] of [
        ['archive', true],
        ['archive', true],
        ['unarchive', false],
        ['unarchive', false],
      ] as const) {
        const answer = await ctx().call('POST', `/projects/${id}/${action}`, { token: tokenOf('pat') });
        expect(answer.status).toBe(201);
        expect(answer.body).toMatchObject({ id, archived });
      }
      const byAdmin = await ctx().call('POST', `/projects/${id}/archive`);
      expect(byAdmin.status).toBe(201);
      expect(byAdmin.body.archived).toBe(true);
    });
  });

  describe('DELETE /projects/:id', () => {
    it('is for the owner or an admin', async () => {
      const res = await ctx().call('DELETE', `/projects/${secret.id}`, { token: tokenOf('mae') });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message: '403 Forbidden' });
    });

    it('removes the project and everything that belongs to it', async () => {
      const created = await ctx().call('POST', '/projects', {
        token: tokenOf('pat'),
        body: { name: 'doomed' },
      });
      const id = created.body.id;
      const db = ctx().db;
      const now = db.now();
      db.data.labels.push({
        id: db.nextId('labels'),
        project_id: id,
        title: 'bug',
        color: '#ff0000',
        description: null,
        template: false,
        created_at: now,
        updated_at: now,
      });
      db.data.hooks.push({
        id: db.nextId('hooks'),
        project_id: id,
        url: 'http://127.0.0.1:1/h',
        token: null,
        push_events: true,
        issues_events: false,
        merge_requests_events: false,
        tag_push_events: false,
        note_events: false,
        build_events: false,
        pipeline_events: false,
        enable_ssl_verification: true,
        created_at: now,
      });
      db.data.stars.push({ project_id: id, user_id: 1 });
      const res = await ctx().call('DELETE', `/projects/${id}`, { token: tokenOf('pat') });
      expect(res.status).toBe(200);
      expect(res.body).toBe(true);
      expect((await ctx().call('GET', `/projects/${id}`)).status).toBe(404);
      for (const kind of ['labels', 'hooks', 'stars', 'members', 'events'] as const)
        expect(db.data[kind].some((r) => r.project_id === id)).toBe(false);
    });
  });

  describe('GET /projects/:id/events', () => {
    it('answers the feed newest first, with the note of a Note event and the data of a push', async () => {
      const p = await addProject(ctx().ctx, { name: 'eventful', namespace_id: groupId, creator_id: 1 });
      const db = ctx().db;
      const push = {
        before: '0'.repeat(40),
        after: 'a'.repeat(40),
        ref: 'refs/heads/master',
        user_id: 1,
        user_name: 'Administrator',
        total_commits_count: 0,
        commits: [],
        repository: { name: 'eventful', url: 'x', description: null, homepage: 'y' },
      };
      recordEvent(db, { project_id: p.id, author_id: 1, action_name: 'pushed to', data: push });
      const now = db.now();
      const note = {
        id: db.nextId('notes'),
        project_id: p.id,
        body: '+1 looks good',
        author_id: users.dev!.id,
        noteable_type: 'Issue' as const,
        noteable_id: 77,
        commit_id: null,
        path: null,
        line: null,
        line_type: null,
        system: false,
        created_at: now,
        updated_at: now,
      };
      db.data.notes.push(note);
      recordEvent(db, {
        project_id: p.id,
        author_id: users.dev!.id,
        action_name: 'commented on',
        target_id: note.id,
        target_type: 'Note',
      });

      const res = await ctx().call('GET', `/projects/${p.id}/events`, { token: tokenOf('dev') });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-total')).toBe('2');
      const [comment, pushed] = res.body;
      expect(comment).toMatchObject({
        title: null,
        project_id: p.id,
        action_name: 'commented on',
        target_id: note.id,
        target_type: 'Note',
        target_title: null,
        author_id: users.dev!.id,
        author_username: 'dev',
        author: { id: users.dev!.id, username: 'dev', name: 'DEV', state: 'active' },
        data: null,
        note: {
          id: note.id,
          body: '+1 looks good',
          attachment: null,
          author: { id: users.dev!.id, username: 'dev' },
          system: false,
          upvote: true,
          downvote: false,
          noteable_id: 77,
          noteable_type: 'Issue',
        },
      });
      expect(pushed).toMatchObject({ action_name: 'pushed to', target_type: null, data: push });
      expect(pushed).not.toHaveProperty('note');
    });

    it('answers 404 for a hidden project', async () => {
      const res = await ctx().call('GET', `/projects/${secret.id}/events`, { token: tokenOf('outsider') });
      expect(res.status).toBe(404);
    });
  });

  describe('POST /projects/:id/uploads', () => {
    async function upload(
      projectId: number,
      token: string,
      file?: { name: string; content: Buffer; type: string },
    ) {
      const form = new FormData();
      if (file) form.append('file', new Blob([file.content], { type: file.type }), file.name);
      else form.append('other', 'x');
      const res = await fetch(`${ctx().sb.apiUrl}/projects/${projectId}/uploads`, {
        method: 'POST',
        headers: { 'private-token': token },
        body: form,
      });
      return { status: res.status, body: (await res.json()) as any };
    }

    it.each([
      ['an image', 'shot.png', 'image/png', true, 'shot'],
      ['a text file', 'notes.txt', 'text/plain', false, 'notes.txt'],
      ['a name with odd characters', 'my file[1].txt', 'text/plain', false, 'my_file_1_.txt'],
    ])('stores %s and answers 201 with the Markdown link', async (_name, filename, type, isImage, alt) => {
      const res = await upload(secret.id, tokenOf('rep'), {
        name: filename,
        content: Buffer.from('data'),
        type,
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        alt,
        url: expect.stringMatching(/^\/uploads\/[0-9a-f]{32}\/[\w.+-]+$/),
        is_image: isImage,
        markdown: `${isImage ? '!' : ''}[${alt}](${res.body.url})`,
      });
      const stored = ctx().db.data.uploads.find((u) => res.body.url.includes(u.secret));
      expect(stored).toMatchObject({
        project_id: secret.id,
        content_type: type,
        content_base64: Buffer.from('data').toString('base64'),
      });
    });

    it('answers 400 without a file', async () => {
      const res = await upload(secret.id, tokenOf('rep'));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: '400 (Bad request) "file" not given' });
    });

    it('answers 400 for a file over max_attachment_size', async () => {
      await ctx().call('PUT', '/application/settings', { body: { max_attachment_size: 1 } });
      try {
        const res = await upload(secret.id, tokenOf('rep'), {
          name: 'big.bin',
          content: Buffer.alloc(1024 * 1024 + 10),
          type: 'application/octet-stream',
        });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ message: { file: ['is too big (should be at most 1 MB)'] } });
      } finally {
        await ctx().call('PUT', '/application/settings', { body: { max_attachment_size: 10 } });
      }
    });

    it('answers 404 for a hidden project', async () => {
      const res = await upload(secret.id, tokenOf('outsider'), {
        name: 'a.txt',
        content: Buffer.from('x'),
        type: 'text/plain',
      });
      expect(res.status).toBe(404);
    });
  });
});
