import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { generateConfigFiles } from '../../scripts/gen-config-example.ts';
import { configKeys, leafKeys } from '../../src/config/config-keys.ts';
import { getIn } from '../../src/config/env-overlay.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { expectGenerated } from '../helpers/generated.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const example = `${root}config.example.yml`;
const SECRETS = { HOOKBOT_API_TOKEN: 'api-token-1234', HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' };

describe('files generated from the schema', () => {
  it('config.example.yml and docs/configuration.md are current (npx tsx scripts/gen-config-example.ts)', async () => {
    const files = await generateConfigFiles();
    expect(files.map((file) => file.path)).toEqual(['config.example.yml', 'docs/configuration.md']);
    for (const file of files) expectGenerated(file.path, file.text, 'npx tsx scripts/gen-config-example.ts');
  });

  it.each([
    { name: 'on the embedded sandbox', env: SECRETS, mode: 'sandbox' },
    {
      name: 'against a server',
      env: { ...SECRETS, HOOKBOT_API_URL: 'https://git.example.com' },
      mode: 'server',
    },
  ])('loading config.example.yml $name gives the defaults', ({ env, mode }) => {
    const fromExample = loadConfig({ file: example, env, cwd: root, inDocker: false });
    const fromNothing = loadConfig({ env, cwd: root, inDocker: false });
    if (!fromExample.ok || !fromNothing.ok) throw new Error('both should load');
    expect(fromExample.mode).toBe(mode);
    expect(fromExample.config).toEqual(fromNothing.config);
    expect(fromExample.warnings).toEqual([]);
  });

  it('the example does not pin the host: in Docker it is 0.0.0.0', () => {
    // Against a server, as the image serves with it (the embedded sandbox stays on loopback).
    const env = {
      HOOKBOT_API_URL: 'https://git.example.com',
      HOOKBOT_API_TOKEN: 'api-token-1234',
      HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678',
    };
    const result = loadConfig({ file: example, env, cwd: root, inDocker: true });
    expect(result.ok && result.config.server.host).toBe('0.0.0.0');
  });

  it('every key is in the example, with its description as a comment, and no secret has a value', () => {
    const text = readFileSync(example, 'utf8');
    const data: unknown = parse(text);
    // Comments wrap; compare their words, not their lines.
    const comments = text
      .split('\n')
      .filter((line) => line.trim().startsWith('#'))
      .map((line) => line.trim().replace(/^#\s?/, ''))
      .join(' ');
    for (const key of leafKeys(configKeys())) {
      const name = key.path[key.path.length - 1];
      const written = getIn(data, key.path) !== undefined;
      const commentedOut = new RegExp(`^\\s*# ${name}: `, 'm').test(text);
      expect(written || commentedOut, key.name).toBe(true);
      expect(comments, key.name).toContain(key.description);
      if (key.secret) expect(getIn(data, key.path), key.name).toBe('');
    }
  });

  it('the reference lists every key and every variable', () => {
    const reference = readFileSync(`${root}docs/configuration.md`, 'utf8');
    for (const key of leafKeys(configKeys())) {
      expect(reference, key.name).toContain(`| \`${key.name}\``);
      if (key.env) expect(reference, key.name).toContain(`\`${key.env}\``);
    }
  });
});
