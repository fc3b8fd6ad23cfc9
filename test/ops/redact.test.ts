import { describe, expect, it } from 'vitest';
import { isSecretKey, REDACTED, redactText, redactValue, secretMatcher } from '../../src/ops/redact.ts';

const TOKEN = 'glpat-Abc123Def456';

describe('redactText', () => {
  it.each([
    {
      name: 'a known value anywhere',
      text: `calling with ${TOKEN} now`,
      expected: `calling with ${REDACTED} now`,
    },
    {
      name: 'private_token in a query string',
      text: 'GET http://git.test/api/v3/user?private_token=zzz999&page=2',
      expected: `GET http://git.test/api/v3/user?private_token=${REDACTED}&page=2`,
    },
    {
      name: 'access_token in a query string',
      text: 'https://git.test/api/v3/projects?access_token=oauth-1',
      expected: `https://git.test/api/v3/projects?access_token=${REDACTED}`,
    },
    {
      name: 'a PRIVATE-TOKEN header line',
      text: 'PRIVATE-TOKEN: abcdef',
      expected: `PRIVATE-TOKEN: ${REDACTED}`,
    },
    {
      name: 'an Authorization header with a scheme',
      text: 'Authorization: Bearer xyz.abc',
      expected: `Authorization: Bearer ${REDACTED}`,
    },
    {
      name: 'an X-Gitlab-Token header',
      text: "X-Gitlab-Token='hooksecret'",
      expected: `X-Gitlab-Token='${REDACTED}'`,
    },
    {
      name: 'a password in a URL',
      text: 'cloning https://bot:hunter22@git.test/acme/web.git',
      expected: `cloning https://bot:${REDACTED}@git.test/acme/web.git`,
    },
    {
      name: 'a URL-encoded known value',
      text: `?x=${encodeURIComponent('a b/c+d')}`,
      expected: `?x=${REDACTED}`,
    },
    { name: 'ordinary text is left alone', text: 'token_type is private', expected: 'token_type is private' },
  ])('$name', ({ text, expected }) => {
    expect(redactText(text, [TOKEN, 'a b/c+d'])).toBe(expected);
  });

  it('ignores values too short to be secrets (they would blank out ordinary words)', () => {
    expect(redactText('a b c', ['a'])).toBe('a b c');
  });

  it('keeps a JSON line valid when a secret needs escaping or sits next to an escape', () => {
    const secret = 'we"ird\\sec';
    const line = JSON.stringify({ msg: `got ${secret} and "private_token=abc" and \n${'nice-secret'}` });
    const redacted = redactText(line, secretMatcher([secret, 'nice-secret']));
    const parsed = JSON.parse(redacted) as { msg: string };
    expect(parsed.msg).not.toContain(secret);
    expect(parsed.msg).not.toContain('nice-secret');
    expect(parsed.msg).toContain(`private_token=${REDACTED}`);
  });

  it('does not take a secret that starts inside a JSON escape', () => {
    // `\n` followed by "nabc": the secret "nabc" must not match from the n of the escape.
    const line = JSON.stringify({ msg: 'x\nabcd' });
    expect(JSON.parse(redactText(line, secretMatcher(['nabc'])))).toEqual({ msg: 'x\nabcd' });
  });
});

describe('isSecretKey', () => {
  it.each([
    ['token', true],
    ['private_token', true],
    ['privateToken', true],
    ['x-gitlab-token', true],
    ['PRIVATE-TOKEN', true],
    ['authorization', true],
    ['webhook_secret', true],
    ['password', true],
    ['token_type', false],
    ['secret_file', false],
    ['tokens_used', false],
    ['kind', false],
  ])('%s: %s', (key, expected) => {
    expect(isSecretKey(key)).toBe(expected);
  });
});

describe('redactValue', () => {
  it('blanks secret keys at any depth, scrubs strings, and leaves the original untouched', () => {
    const original = { a: { b: { c: { d: { token: 'deep', note: `has ${TOKEN}` } } } }, token_type: 'oauth' };
    const copy = redactValue(original, secretMatcher([TOKEN]));
    expect(copy).toEqual({
      a: { b: { c: { d: { token: REDACTED, note: `has ${REDACTED}` } } } },
      token_type: 'oauth',
    });
    expect(original.a.b.c.d.token).toBe('deep');
  });

  it('turns errors into plain objects with their message and stack scrubbed', () => {
    const error = Object.assign(new Error(`failed for ${TOKEN}`), { status: 401 });
    const copy = redactValue({ err: error }, secretMatcher([TOKEN])) as { err: Record<string, unknown> };
    expect(copy.err).toMatchObject({ type: 'Error', message: `failed for ${REDACTED}`, status: 401 });
    expect(copy.err.stack).toContain(`failed for ${REDACTED}`);
    expect(JSON.stringify(copy)).not.toContain(TOKEN);
  });

  it('survives cycles', () => {
    const node: Record<string, unknown> = { name: 'a' };
    node.self = node;
    expect(redactValue(node, undefined)).toEqual({ name: 'a', self: '[Circular]' });
  });
});
