/**
 * Token checks of the sandbox over HTTP: only a whole token opens the API (not a prefix, not a
 * token with one more or one different character), for private and OAuth tokens alike. The
 * comparison itself is constant-time (digests through timingSafeEqual, every user compared): no
 * test can time that reliably, so what is tested is that the check decides exactly as `===` did.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { addUser } from '../../src/sandbox/factories.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const PRIVATE = 'alice-private-token-0001';
const OAUTH = 'alice-oauth-token-0002';

describe('sandbox authentication', () => {
  const ctx = useSandbox();

  beforeAll(() => {
    const alice = addUser(ctx().db, { username: 'alice', private_token: PRIVATE });
    alice.oauth_tokens.push(OAUTH);
    addUser(ctx().db, { username: 'bob', private_token: 'bob-private-token-0003' });
  });

  it('opens the API to the whole private token, as its user', async () => {
    const me = await ctx().call('GET', '/user', { token: PRIVATE });
    expect(me.status).toBe(200);
    expect(me.body.username).toBe('alice');
  });

  it('opens the API to the whole OAuth token, as its user', async () => {
    const me = await ctx().call('GET', '/user', {
      token: null,
      headers: { authorization: `Bearer ${OAUTH}` },
    });
    expect(me.status).toBe(200);
    expect(me.body.username).toBe('alice');
  });

  it.each([
    { name: 'a prefix', token: PRIVATE.slice(0, -1) },
    { name: 'one character more', token: `${PRIVATE}1` },
    { name: 'the last character changed', token: `${PRIVATE.slice(0, -1)}2` },
    { name: 'the OAuth token sent as a private token', token: OAUTH },
    { name: 'an empty-looking token', token: ' ' },
  ])('answers 401 to $name', async ({ token }) => {
    const me = await ctx().call('GET', '/user', { token });
    expect(me.status).toBe(401);
    expect(me.body).toEqual({ message: '401 Unauthorized' });
  });

  it('answers 401 to a private token sent as an OAuth one', async () => {
    const me = await ctx().call('GET', '/user', {
      token: null,
      headers: { authorization: `Bearer ${PRIVATE}` },
    });
    expect(me.status).toBe(401);
  });
});
