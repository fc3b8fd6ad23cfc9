import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectContainer } from '../../src/config/docker.ts';

describe('detectContainer', () => {
  it.each([
    { name: 'HOOKBOT_IN_DOCKER=1', env: { HOOKBOT_IN_DOCKER: '1' }, dockerenv: false, expected: true },
    { name: 'HOOKBOT_IN_DOCKER=true', env: { HOOKBOT_IN_DOCKER: 'true' }, dockerenv: false, expected: true },
    { name: 'HOOKBOT_IN_DOCKER=yes', env: { HOOKBOT_IN_DOCKER: 'yes' }, dockerenv: false, expected: true },
    { name: 'HOOKBOT_IN_DOCKER=ON', env: { HOOKBOT_IN_DOCKER: 'ON' }, dockerenv: false, expected: true },
    {
      name: 'HOOKBOT_IN_DOCKER=0 overrides /.dockerenv',
      env: { HOOKBOT_IN_DOCKER: '0' },
      dockerenv: true,
      expected: false,
    },
    { name: 'HOOKBOT_IN_DOCKER=off', env: { HOOKBOT_IN_DOCKER: 'off' }, dockerenv: true, expected: false },
    { name: 'HOOKBOT_IN_DOCKER=No', env: { HOOKBOT_IN_DOCKER: 'No' }, dockerenv: true, expected: false },
    { name: '/.dockerenv exists', env: {}, dockerenv: true, expected: true },
    {
      name: 'an empty HOOKBOT_IN_DOCKER is unset',
      env: { HOOKBOT_IN_DOCKER: '' },
      dockerenv: true,
      expected: true,
    },
    { name: 'neither', env: {}, dockerenv: false, expected: false },
  ])('$name', ({ env, dockerenv, expected }) => {
    const exists = (file: string) => dockerenv && file === '/.dockerenv';
    expect(detectContainer(env, exists)).toMatchObject({ inContainer: expected });
  });

  it('says what decided it', () => {
    expect(detectContainer({}, (file) => file === '/.dockerenv')).toEqual({
      inContainer: true,
      because: '/.dockerenv exists',
    });
    expect(detectContainer({ HOOKBOT_IN_DOCKER: '1' }, () => false)).toEqual({
      inContainer: true,
      because: 'HOOKBOT_IN_DOCKER=1',
    });
  });

  it('refuses a HOOKBOT_IN_DOCKER that is no boolean, naming the variable, instead of guessing', () => {
    expect(detectContainer({ HOOKBOT_IN_DOCKER: 'maybe' }, () => true)).toEqual({
      problem:
        'HOOKBOT_IN_DOCKER is "maybe": use true or false (also 1 or 0, yes or no, on or off, in any case)',
    });
  });

  it('HOOKBOT_CONTAINER_FILE names the file to look for instead of /.dockerenv (tests play a container without root)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-container-'));
    try {
      const marker = path.join(dir, 'dockerenv');
      const env = { HOOKBOT_CONTAINER_FILE: marker };
      // The real file system: no such file yet, whatever /.dockerenv says on this machine.
      expect(detectContainer(env)).toEqual({ inContainer: false, because: `there is no ${marker}` });
      writeFileSync(marker, '');
      expect(detectContainer(env)).toEqual({ inContainer: true, because: `${marker} exists` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
