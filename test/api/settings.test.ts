import { describe, expect, it } from 'vitest';
import settings from '../fixtures/api/application-settings.json' with { type: 'json' };
import { api, apiAs, testClient, useNock } from '../helpers/nock.ts';

describe('application settings client', () => {
  useNock();
  const client = testClient();

  it('reads the settings with their neutral names', async () => {
    api().get('/application/settings').reply(200, settings);
    expect(await client.settings.get()).toMatchObject({
      default_projects_limit: 10,
      avatar_service_enabled: true,
      default_branch_protection: 1,
      restricted_visibility_levels: null,
      session_expire_delay: 10080,
    });
  });

  it('changes settings with PUT, lists sent as JSON arrays, and answers the whole object', async () => {
    const edit = {
      signup_enabled: false,
      restricted_visibility_levels: [2 as const],
      restricted_signup_domains: ['example.com'],
      default_project_visibility: 1 as const,
    };
    api()
      .put('/application/settings', edit)
      .reply(200, { ...settings, ...edit });
    expect(await client.settings.update(edit)).toEqual({ ...settings, ...edit });
  });

  it('maps a non-admin caller to 403', async () => {
    api().get('/application/settings').reply(403, { message: '403 Forbidden' });
    await expect(client.settings.get()).rejects.toMatchObject({
      status: 403,
      kind: 'forbidden',
      serverMessage: '403 Forbidden',
    });
  });

  it('maps sudo by a non-admin to 403 with the server words', async () => {
    apiAs('jane').put('/application/settings', { signup_enabled: true }).reply(403, {
      message: '403 Forbidden: Must be admin to use sudo',
    });
    await expect(client.settings.update({ signup_enabled: true }, { sudo: 'jane' })).rejects.toMatchObject({
      kind: 'forbidden',
      serverText: '403 Forbidden: Must be admin to use sudo',
    });
  });

  it('reads the settings as another user with sudo', async () => {
    apiAs('root').get('/application/settings').reply(200, settings);
    expect((await client.settings.get({ sudo: 'root' })).id).toBe(1);
  });
});
