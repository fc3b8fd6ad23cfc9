/**
 * git's path, looked up once in PATH: starting a bare `git` looks it up again in every PATH entry
 * each time, which costs a failed exec per entry before it (nine on a machine with toolchains in
 * front of /usr/bin).
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

const found = new Map<string, string>();

export function gitBinary(searchPath = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'): string {
  const known = found.get(searchPath);
  if (known) return known;
  let result = 'git';
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'git');
    try {
      accessSync(candidate, constants.X_OK);
      result = candidate;
      break;
    } catch {
      // not here
    }
  }
  found.set(searchPath, result);
  return result;
}
