/**
 * The paths of `git:` are taken from the folder hookbot is started in, once, when the configuration is
 * read: the default `data/git-cache` included (a relative cache folder once made every git command of
 * the merge queue fail). Absolute paths stay as they are.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectOk, loadIn, useTempDir } from './helpers.ts';

describe('git paths', () => {
  const tempDir = useTempDir();

  it('the default cache folder and relative key files are absolute, under the folder hookbot starts in', () => {
    const dir = tempDir();
    const { config } = expectOk(
      loadIn(dir, {
        env: {
          HOOKBOT_GIT_SSH_KEY_FILE: 'keys/id_bot',
          HOOKBOT_GIT_SSH_KNOWN_HOSTS_FILE: './keys/known_hosts',
        },
      }),
    );
    expect(config.git.cache_dir).toBe(join(dir, 'data', 'git-cache'));
    expect(config.git.ssh_key_file).toBe(join(dir, 'keys', 'id_bot'));
    expect(config.git.ssh_known_hosts_file).toBe(join(dir, 'keys', 'known_hosts'));
  });

  it('leaves absolute paths as they are, and a relative one from the file is not taken from the file’s folder', () => {
    const dir = tempDir();
    const { config } = expectOk(
      loadIn(dir, {
        yaml: 'git:\n  cache_dir: /var/cache/hookbot-git\n  ssh_key_file: /run/secrets/key\n',
      }),
    );
    expect(config.git.cache_dir).toBe('/var/cache/hookbot-git');
    expect(config.git.ssh_key_file).toBe('/run/secrets/key');
    const other = tempDir();
    const relative = expectOk(
      loadIn(dir, {
        yaml: 'git:\n  cache_dir: cache\n',
        options: { cwd: other, file: join(dir, 'config.yml') },
      }),
    );
    expect(relative.config.git.cache_dir).toBe(join(other, 'cache'));
  });
});
