import { beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { DEVELOPER, MASTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const HOOK_FIELDS = [
  'build_events',
  'created_at',
  'enable_ssl_verification',
  'id',
  'issues_events',
  'merge_requests_events',
  'note_events',
  'pipeline_events',
  'project_id',
  'push_events',
  'tag_push_events',
  'url',
];

describe('sandbox project hooks', () => {
  const ctx = useSandbox();
  let master: UserRec;
  let developer: UserRec;
  let project: ProjectRec;
  const path = (suffix = '') => `/projects/${project.id}/hooks${suffix}`;

  beforeAll(async () => {
    const db = ctx().db;
    master = addUser(db, { username: 'hookmaster' });
    developer = addUser(db, { username: 'hookdev' });
    const group = addGroup(db, {
      name: 'Hooked',
      path: 'hooked',
      owner_id: 1,
      members: [
        { user_id: master.id, access_level: MASTER },
        { user_id: developer.id, access_level: DEVELOPER },
      ],
    });
    project = await addProject(ctx().ctx, { name: 'hooked', namespace_id: group.id, creator_id: 1 });
  });

  it("adds a hook with the real servers' defaults (push on, the rest off, SSL verified)", async () => {
    const res = await ctx().call('POST', path(), {
      token: master.private_token,
      body: { url: 'http://127.0.0.1:9/a' },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(HOOK_FIELDS);
    expect(res.body).toEqual({
      id: expect.any(Number),
      url: 'http://127.0.0.1:9/a',
      project_id: project.id,
      push_events: true,
      issues_events: false,
      merge_requests_events: false,
      tag_push_events: false,
      note_events: false,
      build_events: false,
      pipeline_events: false,
      enable_ssl_verification: true,
      created_at: expect.any(String),
    });
  });

  it('reads every flag and the secret token from a form (flags answered as booleans, token never shown)', async () => {
    const res = await ctx().call('POST', path(), {
      token: master.private_token,
      form: {
        url: 'https://127.0.0.1:9/b',
        push_events: 'false',
        issues_events: 'true',
        merge_requests_events: 'true',
        tag_push_events: '1',
        note_events: 'true',
        build_events: 'true',
        pipeline_events: 'true',
        enable_ssl_verification: 'false',
        token: 's3cret',
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      push_events: false,
      issues_events: true,
      merge_requests_events: true,
      tag_push_events: true,
      note_events: true,
      build_events: true,
      pipeline_events: true,
      enable_ssl_verification: false,
    });
    expect(res.body).not.toHaveProperty('token');
    expect(ctx().db.data.hooks.find((h) => h.id === res.body.id)?.token).toBe('s3cret');
  });

  it('lists (paginated) and reads hooks', async () => {
    const list = await ctx().call('GET', path(), { token: master.private_token });
    expect(list.status).toBe(200);
    expect(list.headers.get('x-total')).toBe('2');
    const one = await ctx().call('GET', path(`/${list.body[0].id}`), { token: master.private_token });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(list.body[0]);
  });

  it.each([
    ['GET', '/9999'],
    ['PUT', '/9999'],
  ])('%s of an unknown hook answers 404', async (method, suffix) => {
    const res = await ctx().call(method, path(suffix), {
      token: master.private_token,
      ...(method === 'PUT' ? { body: { url: 'http://127.0.0.1:9/x' } } : {}),
    });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: '404 Not found' });
  });

  it.each([
    ['POST', () => path()],
    ['PUT', () => path(`/${ctx().db.data.hooks[0]!.id}`)],
  ])('%s answers 400 without url and 422 for an invalid one', async (method, target) => {
    const missing = await ctx().call(method, target(), {
      token: master.private_token,
      body: { push_events: true },
    });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ message: '400 (Bad request) "url" not given' });
    const invalid = await ctx().call(method, target(), {
      token: master.private_token,
      body: { url: 'not a url' },
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body).toEqual({ message: 'Invalid url given' });
  });

  it('edits the url and only the flags given', async () => {
    const created = await ctx().call('POST', path(), {
      token: master.private_token,
      body: { url: 'http://127.0.0.1:9/c', note_events: true },
    });
    const res = await ctx().call('PUT', path(`/${created.body.id}`), {
      token: master.private_token,
      body: { url: 'http://127.0.0.1:9/d', issues_events: true },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: created.body.id,
      url: 'http://127.0.0.1:9/d',
      push_events: true,
      note_events: true,
      issues_events: true,
    });
  });

  it('deletes a hook (200 with the hook), then 200 with an empty body (idempotent)', async () => {
    const created = await ctx().call('POST', path(), {
      token: master.private_token,
      body: { url: 'http://127.0.0.1:9/e' },
    });
    const removed = await ctx().call('DELETE', path(`/${created.body.id}`), { token: master.private_token });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual(created.body);
    const again = await ctx().call('DELETE', path(`/${created.body.id}`), { token: master.private_token });
    expect(again.status).toBe(200);
    expect(again.text).toBe('');
  });

  it.each([
    ['GET', ''],
    ['POST', ''],
    ['GET', '/1'],
    ['PUT', '/1'],
    ['DELETE', '/1'],
  ])('%s hooks%s answers 403 to a developer', async (method, suffix) => {
    const res = await ctx().call(method, path(suffix), {
      token: developer.private_token,
      ...(method === 'POST' || method === 'PUT' ? { body: { url: 'http://127.0.0.1:9/f' } } : {}),
    });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ message: '403 Forbidden' });
  });

  it('answers 404 to a non-member of the private project', async () => {
    const outsider = addUser(ctx().db, { username: 'hookoutsider' });
    const res = await ctx().call('GET', path(), { token: outsider.private_token });
    expect(res.status).toBe(404);
  });
});
