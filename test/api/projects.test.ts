import { describe, expect, it } from 'vitest';
import { VisibilityLevel, type NewUserProject } from '../../src/api/projects.ts';
import events from '../fixtures/api/project-events.json' with { type: 'json' };
import project from '../fixtures/api/project.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

const upload = {
  alt: 'shot',
  url: '/uploads/66dbcd21ec5d24ed6ea225176098d52b/shot.png',
  is_image: true,
  markdown: '![shot](/uploads/66dbcd21ec5d24ed6ea225176098d52b/shot.png)',
};

/** nock hands a body that is not valid UTF-8 (a binary upload) to a matcher hex-encoded. */
function bytesOf(body: unknown): Buffer {
  const text = String(body);
  return /^(?:[0-9a-f]{2})+$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text);
}

describe('projects client', () => {
  useNock();
  const client = testClient();

  it.each([
    ['list', '/projects'],
    ['listOwned', '/projects/owned'],
    ['listStarred', '/projects/starred'],
    ['listAll', '/projects/all'],
  ] as const)('%s reads GET %s with every filter', async (method, path) => {
    api()
      .get(path)
      .query({
        per_page: '100',
        archived: 'false',
        visibility: 'private',
        order_by: 'last_activity_at',
        sort: 'asc',
        search: 'web',
      })
      .reply(200, [project]);
    const items = await collect(
      client.projects[method]({
        archived: false,
        visibility: 'private',
        order_by: 'last_activity_at',
        sort: 'asc',
        search: 'web',
      }),
    );
    expect(items.map((p) => p.path_with_namespace)).toEqual(['acme/web']);
  });

  it('follows Link rel=next through the pages of a list', async () => {
    api().get('/projects').query({ per_page: '100' }).reply(200, [project], {
      Link: '<http://git.test/api/v3/projects?page=2&per_page=100>; rel="next"',
    });
    api()
      .get('/projects')
      .query({ page: '2', per_page: '100' })
      .reply(200, [{ ...project, id: 9, path: 'api', path_with_namespace: 'acme/api' }]);
    expect((await collect(client.projects.list())).map((p) => p.id)).toEqual([8, 9]);
  });

  it('searches by name with the text URL-encoded in the path', async () => {
    api()
      .get('/projects/search/web%20app')
      .query({ per_page: '100', order_by: 'name', sort: 'desc' })
      .reply(200, [project]);
    const found = await collect(client.projects.search('web app', { order_by: 'name', sort: 'desc' }));
    expect(found).toHaveLength(1);
  });

  it.each([
    ['its integer id', 8, '/projects/8'],
    ['its encoded path', 'acme/web', '/projects/acme%2Fweb'],
  ] as const)('reads a project by %s', async (_name, ref, path) => {
    api().get(path).reply(200, project);
    const found = await client.projects.get(ref);
    expect(found).toMatchObject({
      id: 8,
      default_branch: 'master',
      visibility_level: VisibilityLevel.private,
      archived: false,
      namespace: { id: 3, path: 'acme' },
    });
    // fields the schema does not check still come through
    expect(found['star_count']).toBe(0);
  });

  it.each(['.', '..'])(
    'refuses the project id %s before any request (it would name the list)',
    async (ref) => {
      // No interceptor: a request would fail differently (nock refuses it).
      await expect(client.projects.get(ref)).rejects.toThrow(`parameter id cannot be "${ref}"`);
    },
  );

  it('accepts a project whose repository is empty (default_branch null)', async () => {
    api()
      .get('/projects/8')
      .reply(200, { ...project, default_branch: null });
    expect((await client.projects.get(8)).default_branch).toBeNull();
  });

  it('refuses an answer that is not a project with a clear error', async () => {
    const { namespace: _dropped, ...broken } = project;
    api().get('/projects/8').reply(200, broken);
    await expect(client.projects.get(8)).rejects.toMatchObject({
      kind: 'invalid_response',
      message: expect.stringMatching(/GET \/projects\/8 failed: 200: unexpected answer: namespace:/),
    });
  });

  it('reads the activity feed with push data and notes', async () => {
    api().get('/projects/8/events').query({ per_page: '100' }).reply(200, events);
    const [push, comment] = await collect(client.projects.events(8));
    expect(push?.data).toMatchObject({
      ref: 'refs/heads/master',
      total_commits_count: 1,
      commits: [{ author: { email: 'john@example.com' } }],
    });
    expect(comment).toMatchObject({ target_type: 'Note', data: null, note: { noteable_type: 'Issue' } });
  });

  it('creates a project with a JSON body (201)', async () => {
    api()
      .post('/projects', { name: 'web', namespace_id: 3, visibility_level: 10, issues_enabled: true })
      .reply(201, { ...project, visibility_level: 10 });
    const created = await client.projects.create({
      name: 'web',
      namespace_id: 3,
      visibility_level: VisibilityLevel.internal,
      issues_enabled: true,
    });
    expect(created.visibility_level).toBe(10);
  });

  it('maps a taken project name (409) with its field messages', async () => {
    api()
      .post('/projects', { name: 'web' })
      .reply(409, { message: { name: ['has already been taken'] } });
    await expect(client.projects.create({ name: 'web' })).rejects.toMatchObject({
      status: 409,
      kind: 'conflict',
      fieldErrors: { name: ['has already been taken'] },
    });
  });

  it('maps a missing name (400) with the server words', async () => {
    api()
      .post('/projects/user/5', { description: 'x' })
      .reply(400, { message: '400 (Bad request) "name" not given' });
    await expect(
      client.projects.createForUser(5, { description: 'x' } as unknown as NewUserProject),
    ).rejects.toMatchObject({
      status: 400,
      kind: 'bad_request',
      serverMessage: '400 (Bad request) "name" not given',
    });
  });

  it('creates a project for another user (admin)', async () => {
    api()
      .post('/projects/user/5', { name: 'tools', public: true })
      .reply(201, { ...project, id: 12, name: 'tools', path: 'tools', path_with_namespace: 'jane/tools' });
    expect(
      (await client.projects.createForUser(5, { name: 'tools', public: true })).path_with_namespace,
    ).toBe('jane/tools');
  });

  it('edits a project with PUT', async () => {
    api()
      .put('/projects/8', { default_branch: 'main', description: 'new' })
      .reply(200, { ...project, default_branch: 'main', description: 'new' });
    expect(
      (await client.projects.update(8, { default_branch: 'main', description: 'new' })).default_branch,
    ).toBe('main');
  });

  it('forks into the caller namespace', async () => {
    api()
      .post('/projects/fork/8')
      .reply(201, { ...project, id: 20, path_with_namespace: 'jane/web' });
    expect((await client.projects.fork(8)).id).toBe(20);
  });

  it('stars (201) and reports already-starred (304) as unchanged', async () => {
    api()
      .post('/projects/8/star')
      .reply(201, { ...project, star_count: 1 });
    api().post('/projects/8/star').reply(304);
    expect(await client.projects.star(8)).toMatchObject({ changed: true, value: { star_count: 1 } });
    expect(await client.projects.star(8)).toEqual({ changed: false });
  });

  it('unstars (200) and reports not-starred (304) as unchanged', async () => {
    api().delete('/projects/8/star').reply(200, project);
    api().delete('/projects/8/star').reply(304);
    expect(await client.projects.unstar(8)).toMatchObject({ changed: true, value: { id: 8 } });
    expect(await client.projects.unstar(8)).toEqual({ changed: false });
  });

  it.each([
    ['archive', '/projects/8/archive', true],
    // real servers route unarchive on its own path (docs/api-v3.md#projects is ambiguous)
    ['unarchive', '/projects/8/unarchive', false],
  ] as const)('%s sends POST %s (201)', async (method, path, archived) => {
    api()
      .post(path)
      .reply(201, { ...project, archived });
    expect((await client.projects[method](8)).archived).toBe(archived);
  });

  it('retries archive after a 503, as it is idempotent', async () => {
    api().post('/projects/8/archive').reply(503, { message: 'busy' });
    api()
      .post('/projects/8/archive')
      .reply(201, { ...project, archived: true });
    expect((await client.projects.archive(8)).archived).toBe(true);
  });

  it.each([
    [403, 'forbidden', '403 Forbidden'],
    [404, 'not_found', '404 Project Not Found'],
  ] as const)('archive maps %i', async (status, kind, message) => {
    api().post('/projects/8/archive').reply(status, { message });
    await expect(client.projects.archive(8)).rejects.toMatchObject({ status, kind, serverMessage: message });
  });

  it.each([
    ['remove', () => client.projects.remove(8), () => api().delete('/projects/8').reply(200, 'true')],
    [
      'addForkRelation',
      () => client.projects.addForkRelation(8, 3),
      () =>
        api().post('/projects/8/fork/3').reply(201, { forked_to_project_id: 8, forked_from_project_id: 3 }),
    ],
    [
      'removeForkRelation',
      () => client.projects.removeForkRelation(8),
      () => api().delete('/projects/8/fork').reply(200),
    ],
  ] as const)('%s calls the server and returns nothing', async (_name, call, mock) => {
    mock();
    await expect(call()).resolves.toBeUndefined();
  });

  it.each([
    ['a Buffer', Buffer.from([0x89, 0x50, 0x4e, 0x47]), 'image/png', 'image/png'],
    ['a string', 'plain words', undefined, 'application/octet-stream'],
  ] as const)('uploads %s as multipart field "file"', async (_name, content, contentType, sentType) => {
    api()
      .post('/projects/8/uploads', (body: unknown) => {
        const sent = bytesOf(body);
        return (
          sent.includes('Content-Disposition: form-data; name="file"; filename="shot.png"') &&
          sent.includes(`Content-Type: ${sentType}`) &&
          sent.includes(Buffer.from(content))
        );
      })
      .matchHeader('content-type', /^multipart\/form-data; boundary=/)
      .reply(201, upload);
    const result = await client.projects.upload(8, {
      filename: 'shot.png',
      content,
      ...(contentType ? { contentType } : {}),
    });
    expect(result).toEqual(upload);
  });

  it('acts as another user with sudo per call', async () => {
    apiAs('jane').post('/projects/8/star').reply(304);
    expect(await client.projects.star(8, { sudo: 'jane' })).toEqual({ changed: false });
  });
});
