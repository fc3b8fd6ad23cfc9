import { describe, expect, it } from 'vitest';
import issue from '../fixtures/api/issue.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

describe('issues client', () => {
  useNock();
  const client = testClient();

  it('lists a project issues with filters, per_page=100 and labels comma-separated', async () => {
    api()
      .get('/projects/8/issues')
      .query({ per_page: '100', state: 'opened', labels: 'bug,ui', order_by: 'updated_at', sort: 'asc' })
      .reply(200, [issue]);
    const items = await collect(
      client.issues.list(8, { state: 'opened', labels: ['bug', 'ui'], order_by: 'updated_at', sort: 'asc' }),
    );
    expect(items.map((i) => i.id)).toEqual([43]);
  });

  it('lists the caller issues across projects', async () => {
    api().get('/issues').query({ per_page: '100', state: 'closed' }).reply(200, [issue]);
    expect(await collect(client.issues.listMine({ state: 'closed' }))).toHaveLength(1);
  });

  it('addresses a project by its encoded path', async () => {
    api().get('/projects/acme%2Fweb/issues/43').reply(200, issue);
    expect((await client.issues.get('acme/web', 43)).iid).toBe(3);
  });

  it('creates an issue with a JSON body', async () => {
    api()
      .post('/projects/8/issues', { title: 'Crash', description: 'boom', labels: 'bug,crash' })
      .reply(200, { ...issue, title: 'Crash' });
    expect(
      (await client.issues.create(8, { title: 'Crash', description: 'boom', labels: ['bug', 'crash'] }))
        .title,
    ).toBe('Crash');
  });

  it.each([
    ['update', { title: 'x' }, { title: 'x' }],
    ['close', undefined, { state_event: 'close' }],
    ['reopen', undefined, { state_event: 'reopen' }],
  ] as const)('%s sends PUT with %j', async (method, edit, body) => {
    api().put('/projects/8/issues/43', body).reply(200, issue);
    const result =
      method === 'update'
        ? await client.issues.update(8, 43, edit ?? {})
        : await client.issues[method](8, 43);
    expect(result.id).toBe(43);
  });

  it('deletes an issue', async () => {
    api().delete('/projects/8/issues/43').reply(200, issue);
    await expect(client.issues.remove(8, 43)).resolves.toBeUndefined();
  });

  it('moves an issue and returns the new one', async () => {
    api()
      .post('/projects/8/issues/43/move', { to_project_id: 9 })
      .reply(201, { ...issue, id: 44, project_id: 9 });
    expect((await client.issues.move(8, 43, 9)).project_id).toBe(9);
  });

  it('reports an unmovable issue with the server words', async () => {
    api()
      .post('/projects/8/issues/43/move', { to_project_id: 8 })
      .reply(400, { message: 'Cannot move issue to project it originates from!' });
    await expect(client.issues.move(8, 43, 8)).rejects.toMatchObject({
      status: 400,
      kind: 'bad_request',
      serverMessage: 'Cannot move issue to project it originates from!',
    });
  });

  it('subscribes (201) and reports already-subscribed (304) as unchanged', async () => {
    api()
      .post('/projects/8/issues/43/subscription')
      .reply(201, { ...issue, subscribed: true });
    api().post('/projects/8/issues/43/subscription').reply(304);
    expect(await client.issues.subscribe(8, 43)).toMatchObject({
      changed: true,
      value: { subscribed: true },
    });
    expect(await client.issues.subscribe(8, 43)).toEqual({ changed: false });
  });

  it('unsubscribes (200) and reports not-subscribed (304) as unchanged', async () => {
    api().delete('/projects/8/issues/43/subscription').reply(200, issue);
    api().delete('/projects/8/issues/43/subscription').reply(304);
    expect((await client.issues.unsubscribe(8, 43)).changed).toBe(true);
    expect((await client.issues.unsubscribe(8, 43)).changed).toBe(false);
  });

  it('acts as another user with sudo per call', async () => {
    apiAs('jane').get('/projects/8/issues/43').reply(200, issue);
    await client.issues.get(8, 43, { sudo: 'jane' });
  });

  it('refuses an answer that is not an issue with a clear error', async () => {
    api().get('/projects/8/issues/43').reply(200, { id: 'x' });
    await expect(client.issues.get(8, 43)).rejects.toThrow(
      /GET \/projects\/8\/issues\/43 failed: 200: unexpected answer: id:/,
    );
  });
});
