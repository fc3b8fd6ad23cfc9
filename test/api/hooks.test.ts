import { describe, expect, expectTypeOf, it } from 'vitest';
import hook from '../fixtures/api/hook.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

/** The fixture (flags as docs/api-v3.md#project-hooks samples them, strings) as the client returns it. */
const normalised = {
  ...hook,
  push_events: true,
  issues_events: true,
  merge_requests_events: true,
  note_events: false,
  enable_ssl_verification: true,
};

const settings = {
  url: 'http://bot.example.com/hooks',
  push_events: true,
  issues_events: true,
  merge_requests_events: true,
  tag_push_events: false,
  note_events: true,
  build_events: false,
  pipeline_events: true,
  enable_ssl_verification: true,
  token: 'hook-secret',
};

/** How a real server answers: booleans, the later 8.x flags, no token. */
const { token: _secret, ...settingsWithoutToken } = settings;
const realAnswer = {
  id: 2,
  project_id: 8,
  created_at: '2016-08-12T15:23:28.000Z',
  wiki_page_events: false,
  ...settingsWithoutToken,
};

describe('project hooks client', () => {
  useNock();
  const client = testClient();

  it.each([
    ['strings "true"/"false" (docs/api-v3.md#project-hooks samples)', hook, normalised],
    ['booleans (real servers)', realAnswer, realAnswer],
  ])('lists hooks with flags sent as %s, returned as booleans', async (_name, answer, expected) => {
    api().get('/projects/8/hooks').query({ per_page: '100' }).reply(200, [answer]);
    expect(await collect(client.hooks.list(8))).toEqual([expected]);
  });

  it('reads one hook', async () => {
    api().get('/projects/acme%2Fweb/hooks/1').reply(200, hook);
    const found = await client.hooks.get('acme/web', 1);
    expect(found).toEqual(normalised);
    expectTypeOf(found.push_events).toEqualTypeOf<boolean>();
    expectTypeOf(found.tag_push_events).toEqualTypeOf<boolean | undefined>();
  });

  it('creates a hook with every flag and the secret token', async () => {
    api().post('/projects/8/hooks', settings).reply(201, realAnswer);
    expect(await client.hooks.create(8, settings)).toEqual(realAnswer);
  });

  it('never returns a token a server echoes back', async () => {
    api()
      .post('/projects/8/hooks', { url: settings.url, token: 'hook-secret' })
      .reply(201, { ...hook, token: 'hook-secret' });
    const created = await client.hooks.create(8, { url: settings.url, token: 'hook-secret' });
    expect(created).not.toHaveProperty('token');
    expect(created).toEqual(normalised);
  });

  it('does not retry a create after a 502 (a second POST would add a second hook)', async () => {
    api().post('/projects/8/hooks', { url: settings.url }).reply(502);
    await expect(client.hooks.create(8, { url: settings.url })).rejects.toMatchObject({
      status: 502,
      ambiguous: true,
    });
  });

  it('edits a hook with PUT (url required)', async () => {
    api()
      .put('/projects/8/hooks/1', { url: 'http://bot.example.com/v2', note_events: true })
      .reply(200, { ...hook, url: 'http://bot.example.com/v2', note_events: 'true' });
    expect(await client.hooks.update(8, 1, { url: 'http://bot.example.com/v2', note_events: true })).toEqual({
      ...normalised,
      url: 'http://bot.example.com/v2',
      note_events: true,
    });
  });

  it.each([
    ['the removed hook', hook, normalised],
    ['nothing for an empty body (no such hook)', '', undefined],
    ['nothing for a null body', 'null', undefined],
  ] as const)('deleting a hook answers %s', async (_name, body, expected) => {
    api().delete('/projects/8/hooks/1').reply(200, body);
    expect(await client.hooks.remove(8, 1)).toEqual(expected);
  });

  it('maps a missing project to 404', async () => {
    api()
      .get('/projects/9/hooks')
      .query({ per_page: '100' })
      .reply(404, { message: '404 Project Not Found' });
    await expect(collect(client.hooks.list(9))).rejects.toMatchObject({
      status: 404,
      kind: 'not_found',
      serverMessage: '404 Project Not Found',
    });
  });

  it('refuses a hook with an unreadable flag', async () => {
    api()
      .get('/projects/8/hooks/1')
      .reply(200, { ...hook, push_events: 'yes' });
    await expect(client.hooks.get(8, 1)).rejects.toMatchObject({
      kind: 'invalid_response',
      message: expect.stringMatching(/unexpected answer: push_events:/),
    });
  });

  it('acts as another user with sudo per call', async () => {
    apiAs('jane').delete('/projects/8/hooks/1').reply(200, '');
    expect(await client.hooks.remove(8, 1, { sudo: 'jane' })).toBeUndefined();
  });
});
