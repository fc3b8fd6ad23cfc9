/**
 * The paths of `git:` (cache_dir, ssh_key_file, ssh_known_hosts_file), taken from one base once, when
 * the configuration is read: the folder hookbot is started in (`LoadConfigOptions.cwd`). Nothing after
 * this reads them relative to anything else: git runs with `-C <cache repository>`, where a relative
 * path would mean another place (the default `data/git-cache` once ended up as
 * `data/git-cache/data/git-cache/<hash>.git`, and no git command found it).
 */
import path from 'node:path';
import type { Config } from './schema.ts';

export function resolveGitPaths(git: Config['git'], cwd: string): Config['git'] {
  const absolute = (file: string) => path.resolve(cwd, file);
  return {
    ...git,
    cache_dir: absolute(git.cache_dir),
    ...(git.ssh_key_file ? { ssh_key_file: absolute(git.ssh_key_file) } : {}),
    ...(git.ssh_known_hosts_file ? { ssh_known_hosts_file: absolute(git.ssh_known_hosts_file) } : {}),
  };
}
