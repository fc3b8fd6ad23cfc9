import { describe, expect, it } from 'vitest';
import { detectDocker } from '../../src/config/docker.ts';

describe('detectDocker', () => {
  it.each([
    { name: 'HOOKBOT_IN_DOCKER=1', env: { HOOKBOT_IN_DOCKER: '1' }, dockerenv: false, expected: true },
    { name: 'HOOKBOT_IN_DOCKER=true', env: { HOOKBOT_IN_DOCKER: 'true' }, dockerenv: false, expected: true },
    {
      name: 'HOOKBOT_IN_DOCKER=0 overrides /.dockerenv',
      env: { HOOKBOT_IN_DOCKER: '0' },
      dockerenv: true,
      expected: false,
    },
    { name: '/.dockerenv exists', env: {}, dockerenv: true, expected: true },
    { name: 'neither', env: {}, dockerenv: false, expected: false },
  ])('$name', ({ env, dockerenv, expected }) => {
    const exists = (path: string) => dockerenv && path === '/.dockerenv';
    expect(detectDocker(env, exists)).toBe(expected);
  });
});
