import { beforeAll, describe, expect, it } from 'vitest';
import { addUser } from '../../src/sandbox/factories.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const FIELDS = [
  'after_sign_out_path',
  'avatar_service_enabled',
  'created_at',
  'default_branch_protection',
  'default_project_visibility',
  'default_projects_limit',
  'default_snippet_visibility',
  'home_page_url',
  'id',
  'max_attachment_size',
  'restricted_signup_domains',
  'restricted_visibility_levels',
  'session_expire_delay',
  'sign_in_text',
  'signin_enabled',
  'signup_enabled',
  'updated_at',
  'user_oauth_applications',
];

describe('sandbox application settings', () => {
  const ctx = useSandbox();
  let userToken: string;

  beforeAll(() => {
    userToken = addUser(ctx().db, { username: 'notadmin' }).private_token;
  });

  it('answers every field with the documented defaults', async () => {
    const res = await ctx().call('GET', '/application/settings');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(FIELDS);
    expect(res.body).toMatchObject({
      id: 1,
      default_projects_limit: 10,
      signup_enabled: true,
      signin_enabled: true,
      default_branch_protection: 1,
      restricted_visibility_levels: null,
      default_project_visibility: 0,
      default_snippet_visibility: 0,
      restricted_signup_domains: null,
    });
  });

  it.each([
    ['GET', undefined],
    ['PUT', { signup_enabled: false }],
  ])('%s is for admins only (403)', async (method, body) => {
    const res = await ctx().call(method, '/application/settings', { token: userToken, body });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ message: '403 Forbidden' });
  });

  it('updates fields from a JSON body and moves updated_at', async () => {
    const before = (await ctx().call('GET', '/application/settings')).body;
    await new Promise((r) => setTimeout(r, 5));
    const res = await ctx().call('PUT', '/application/settings', {
      body: {
        default_projects_limit: 42,
        signup_enabled: false,
        avatar_service_enabled: false,
        sign_in_text: 'Welcome',
        home_page_url: 'https://example.com/home',
        default_branch_protection: 2,
        restricted_visibility_levels: [2],
        max_attachment_size: 20,
        session_expire_delay: 60,
        default_project_visibility: 1,
        default_snippet_visibility: 2,
        restricted_signup_domains: ['example.com', 'example.org'],
        user_oauth_applications: false,
        after_sign_out_path: 'https://example.com/bye',
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      default_projects_limit: 42,
      signup_enabled: false,
      avatar_service_enabled: false,
      sign_in_text: 'Welcome',
      home_page_url: 'https://example.com/home',
      default_branch_protection: 2,
      restricted_visibility_levels: [2],
      max_attachment_size: 20,
      session_expire_delay: 60,
      default_project_visibility: 1,
      default_snippet_visibility: 2,
      restricted_signup_domains: ['example.com', 'example.org'],
      user_oauth_applications: false,
      after_sign_out_path: 'https://example.com/bye',
      created_at: before.created_at,
    });
    expect(res.body.updated_at > before.updated_at).toBe(true);
    expect((await ctx().call('GET', '/application/settings')).body).toEqual(res.body);
  });

  it('reads form fields: flags as strings, lists as comma-separated text, empty text clears a list', async () => {
    const res = await ctx().call('PUT', '/application/settings', {
      form: { signup_enabled: 'true', restricted_visibility_levels: '0,1', restricted_signup_domains: '' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      signup_enabled: true,
      restricted_visibility_levels: [0, 1],
      restricted_signup_domains: null,
    });
    const cleared = await ctx().call('PUT', '/application/settings', {
      body: { restricted_visibility_levels: null },
    });
    expect(cleared.body.restricted_visibility_levels).toBeNull();
  });

  it.each([
    [
      'default_branch_protection 3',
      { default_branch_protection: 3 },
      { default_branch_protection: ['is not included in the list'] },
    ],
    [
      'default_branch_protection -1',
      { default_branch_protection: -1 },
      { default_branch_protection: ['is not included in the list'] },
    ],
    [
      'default_project_visibility 10 (a project code)',
      { default_project_visibility: 10 },
      { default_project_visibility: ['is not included in the list'] },
    ],
    [
      'default_snippet_visibility 3',
      { default_snippet_visibility: 3 },
      { default_snippet_visibility: ['is not included in the list'] },
    ],
    [
      'restricted_visibility_levels with 20',
      { restricted_visibility_levels: [0, 20] },
      { restricted_visibility_levels: ["'20' is not a valid visibility level"] },
    ],
    [
      'default_projects_limit not a number',
      { default_projects_limit: 'lots' },
      { default_projects_limit: ['is not a number'] },
    ],
    [
      'default_projects_limit negative',
      { default_projects_limit: -5 },
      { default_projects_limit: ['must be greater than or equal to 0'] },
    ],
    [
      'max_attachment_size 0',
      { max_attachment_size: 0 },
      { max_attachment_size: ['must be greater than 0'] },
    ],
    [
      'session_expire_delay negative',
      { session_expire_delay: -1 },
      { session_expire_delay: ['must be greater than or equal to 0'] },
    ],
    ['home_page_url not a URL', { home_page_url: 'not a url' }, { home_page_url: ['must be a valid URL'] }],
    [
      'a flag that is no flag',
      { signup_enabled: 'maybe' },
      { signup_enabled: ['is not included in the list'] },
    ],
    [
      'two fields at once',
      { default_branch_protection: 9, default_project_visibility: 9 },
      {
        default_branch_protection: ['is not included in the list'],
        default_project_visibility: ['is not included in the list'],
      },
    ],
  ])('answers 400 per field for %s and changes nothing', async (_name, body, message) => {
    const before = (await ctx().call('GET', '/application/settings')).body;
    const res = await ctx().call('PUT', '/application/settings', {
      body: { ...body, sign_in_text: 'changed?' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message });
    expect((await ctx().call('GET', '/application/settings')).body).toEqual(before);
  });
});
