import { describe, expect, it } from 'vitest';
import { exposureProblem, exposureWarning, isLoopbackHost } from '../../src/receiver/exposure.ts';
import { hostName, isAllowedHost } from '../../src/receiver/host-check.ts';

describe('isLoopbackHost', () => {
  it.each([
    '127.0.0.1',
    '127.1.2.3',
    '::1',
    '[::1]',
    'localhost',
    'LOCALHOST',
    'bot.localhost',
    '::ffff:127.0.0.1',
  ])('%s is loopback', (host) => expect(isLoopbackHost(host)).toBe(true));
  it.each(['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'bot.example.com', '128.0.0.1'])(
    '%s is beyond loopback',
    (host) => expect(isLoopbackHost(host)).toBe(false),
  );
});

describe('exposureProblem', () => {
  it('refuses beyond loopback without authentication or public_ops, and only then', () => {
    expect(exposureProblem({ host: '0.0.0.0', authenticated: false, publicOps: false })).toMatch(
      /^server\.host is 0\.0\.0\.0, beyond loopback, and server\.status_auth is not set:/,
    );
    expect(exposureProblem({ host: '0.0.0.0', authenticated: true, publicOps: false })).toBeUndefined();
    expect(exposureProblem({ host: '0.0.0.0', authenticated: false, publicOps: true })).toBeUndefined();
    expect(exposureProblem({ host: '127.0.0.1', authenticated: false, publicOps: false })).toBeUndefined();
  });

  it('warns only when public_ops opens the routes', () => {
    expect(exposureWarning({ host: '0.0.0.0', authenticated: false, publicOps: true })).toContain(
      'public_ops',
    );
    expect(exposureWarning({ host: '0.0.0.0', authenticated: true, publicOps: true })).toBeUndefined();
    expect(exposureWarning({ host: '127.0.0.1', authenticated: false, publicOps: true })).toBeUndefined();
  });
});

describe('the Host check', () => {
  it.each([
    ['bot.example.com:3000', 'bot.example.com'],
    ['[::1]:3000', '::1'],
    ['[::1]', '::1'],
    ['Bot.Example.COM.', 'bot.example.com'],
    ['10.0.0.1', '10.0.0.1'],
  ])('reads %s as %s', (header, name) => expect(hostName(header)).toBe(name));

  it('allows configured names, and subdomains of a leading-dot entry only', () => {
    const allowed = ['hookbot.example.com', '.ops.example.org'];
    expect(isAllowedHost('hookbot.example.com:443', allowed)).toBe(true);
    expect(isAllowedHost('x.hookbot.example.com', allowed)).toBe(false);
    expect(isAllowedHost('ops.example.org', allowed)).toBe(true);
    expect(isAllowedHost('a.ops.example.org', allowed)).toBe(true);
    expect(isAllowedHost('evilops.example.org', allowed)).toBe(false);
    expect(isAllowedHost('example.com', allowed)).toBe(false);
  });
});
