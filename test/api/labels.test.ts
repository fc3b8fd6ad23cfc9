import { describe, expect, it } from 'vitest';
import type { Label, LabelEdit } from '../../src/api/labels.ts';
import deleted from '../fixtures/api/label-deleted.json' with { type: 'json' };
import labels from '../fixtures/api/labels.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

describe('labels client', () => {
  useNock();
  const client = testClient();

  it('lists labels; an answer without pagination headers (real servers) is one page', async () => {
    api().get('/projects/8/labels').query({ per_page: '100' }).reply(200, labels);
    const items = await collect(client.labels.list(8));
    expect(items.map((l) => [l.name, l.color])).toEqual([
      ['bug', '#d9534f'],
      ['confirmed', '#d9534f'],
      ['enhancement', '#5cb85c'],
    ]);
  });

  it('follows Link rel=next when a server does page labels', async () => {
    api().get('/projects/8/labels').query({ per_page: '100' }).reply(200, labels.slice(0, 2), {
      Link: '<http://git.test/api/v3/projects/8/labels?page=2&per_page=100>; rel="next"',
    });
    api().get('/projects/8/labels').query({ page: '2', per_page: '100' }).reply(200, labels.slice(2));
    expect(await collect(client.labels.list(8))).toHaveLength(3);
  });

  it('creates a label (200) with name, color and description', async () => {
    const body = { name: 'feature', color: '#5843AD', description: 'New feature introduced' };
    api().post('/projects/8/labels', body).reply(200, body);
    expect(await client.labels.create(8, body)).toEqual(body);
  });

  it('reports an existing label as a 409 conflict', async () => {
    api()
      .post('/projects/8/labels', { name: 'bug', color: '#d9534f' })
      .reply(409, { message: 'Label already exists' });
    await expect(client.labels.create(8, { name: 'bug', color: '#d9534f' })).rejects.toMatchObject({
      status: 409,
      kind: 'conflict',
      serverMessage: 'Label already exists',
    });
  });

  it('reports a bad color as a per-field error', async () => {
    api()
      .post('/projects/8/labels', { name: 'bug', color: 'red' })
      .reply(400, { message: { color: ['must be a valid color code'] } });
    const failure = await client.labels.create(8, { name: 'bug', color: 'red' }).catch((e: unknown) => e);
    expect(failure).toMatchObject({
      status: 400,
      kind: 'bad_request',
      fieldErrors: { color: ['must be a valid color code'] },
    });
  });

  it.each<[string, LabelEdit, Record<string, string>, Label]>([
    [
      'a rename',
      { new_name: 'defect' },
      { name: 'bug', new_name: 'defect' },
      { name: 'defect', color: '#d9534f', description: 'Bug reported by user' },
    ],
    [
      'a new color and description',
      { color: '#ff0000', description: 'Broken' },
      { name: 'bug', color: '#ff0000', description: 'Broken' },
      { name: 'bug', color: '#ff0000', description: 'Broken' },
    ],
  ])('updates with PUT: %s', async (_name, edit, body, answer) => {
    api().put('/projects/8/labels', body).reply(200, answer);
    expect(await client.labels.update(8, 'bug', edit)).toEqual(answer);
  });

  it.each([
    ['nothing', {}],
    ['a description alone', { description: 'Broken' }],
  ])('refuses an update with %s before any call', async (_name, edit) => {
    const fresh = testClient();
    await expect(fresh.labels.update(8, 'bug', edit)).rejects.toThrow(TypeError);
    expect(fresh.http.stats.calls).toBe(0);
  });

  it('retries a color change after a 502 but never a rename', async () => {
    const fresh = testClient();
    api().put('/projects/8/labels', { name: 'bug', color: '#ff0000' }).reply(502);
    api()
      .put('/projects/8/labels', { name: 'bug', color: '#ff0000' })
      .reply(200, { name: 'bug', color: '#ff0000' });
    api().put('/projects/8/labels', { name: 'bug', new_name: 'defect' }).reply(502);
    expect((await fresh.labels.update(8, 'bug', { color: '#ff0000' })).color).toBe('#ff0000');
    await expect(fresh.labels.update(8, 'bug', { new_name: 'defect' })).rejects.toMatchObject({
      status: 502,
      ambiguous: true,
    });
    expect(fresh.http.stats.calls).toBe(3);
  });

  it('deletes a label by name sent as a query parameter, as another user with sudo', async () => {
    apiAs('jane')
      .delete('/projects/8/labels')
      .query({ name: 'needs review' })
      .reply(200, { ...deleted, title: 'needs review' });
    await expect(client.labels.remove(8, 'needs review', { sudo: 'jane' })).resolves.toBeUndefined();
  });

  it('reports deleting an absent label as not_found', async () => {
    api().delete('/projects/8/labels').query({ name: 'nope' }).reply(404, { message: '404 Label Not Found' });
    await expect(client.labels.remove(8, 'nope')).rejects.toMatchObject({
      status: 404,
      kind: 'not_found',
      serverMessage: '404 Label Not Found',
    });
  });
});
