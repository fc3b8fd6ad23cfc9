/**
 * Relative paths in the configuration (state file, rules folder, git cache, key files, secret
 * files, the sandbox's data) are resolved once, when the configuration is loaded, from one base:
 * the folder hookbot is started in (the working directory). Everything after the loader sees
 * absolute paths, so no part resolves them again from somewhere else: the merge queue's git cache
 * was once joined with itself (`data/git-cache/data/git-cache/...`) because git ran inside it.
 *
 * The working directory and not the configuration file's folder: the defaults (`rules`, `data/...`)
 * hold with no file at all, and `npm start` in a clone, the Docker image (`/app`) and a
 * `--config /etc/hookbot.yml` all mean the same folders as the README and the example file say.
 */
import { isAbsolute, resolve } from 'node:path';
import { leafKeys, type ConfigKey } from './config-keys.ts';
import { getIn, setIn } from './env-overlay.ts';

/** `path` resolved from `base` (the working directory hookbot started in); absolute paths as given. */
export function resolveFromBase(path: string, base: string): string {
  return isAbsolute(path) ? resolve(path) : resolve(base, path);
}

/** Every key marked `fsPath` in the schema, when set, made absolute from `base`, in place. */
export function resolveConfigPaths(config: object, keys: readonly ConfigKey[], base: string): void {
  for (const key of leafKeys(keys)) {
    if (key.fsPath !== true) continue;
    const value = getIn(config, key.path);
    if (typeof value === 'string' && value !== '')
      setIn(config as Record<string, unknown>, key.path, resolveFromBase(value, base));
  }
}
