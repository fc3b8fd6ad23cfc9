/**
 * Whom a build of the simulated CI runs as. A build runs a repository's own script, written by
 * whoever may push (any developer, any fork's merge request): it must not reach what the sandbox
 * holds. When the sandbox runs as root, the build runs as the unprivileged user `nobody` (its uid and
 * group from /etc/passwd, 65534 when the machine has no such user), which can read neither the
 * sandbox's data file, repositories and temporary folders (all 0600 or 0700, root's), nor the
 * environment or memory of root's processes (/proc/<pid>/environ is readable by its owner only).
 * When the sandbox runs as any other user there is no one to switch to: the build runs as that same
 * user, and can reach whatever that user can (docs/sandbox.md#what-a-build-can-reach).
 */
import { readFileSync } from 'node:fs';

export interface BuildUser {
  uid: number;
  gid: number;
  name: string;
}

const NOBODY = 65534;

/** `nobody` when this process runs as root; undefined (the build runs as this process's user) otherwise. */
export function buildUser(): BuildUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return lookUp('nobody') ?? { uid: NOBODY, gid: NOBODY, name: 'nobody' };
}

function lookUp(name: string): BuildUser | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user !== name) continue;
    const ids = [Number(uid), Number(gid)];
    // Never root, whatever the file says.
    if (ids.some((id) => !Number.isInteger(id) || id <= 0)) return undefined;
    return { uid: ids[0]!, gid: ids[1]!, name };
  }
  return undefined;
}
