/**
 * Are we in a container? There the server must listen on every interface, or the published port
 * reaches nothing. Docker creates `/.dockerenv`; other runtimes (Podman, Kubernetes) do not, so
 * `HOOKBOT_IN_DOCKER=1` says it explicitly (an image can set it) and `HOOKBOT_IN_DOCKER=0` denies it.
 */
import { existsSync } from 'node:fs';

export function detectDocker(
  env: NodeJS.ProcessEnv,
  exists: (path: string) => boolean = existsSync,
): boolean {
  const flag = env.HOOKBOT_IN_DOCKER;
  if (flag === '1' || flag === 'true') return true;
  if (flag === '0' || flag === 'false') return false;
  return exists('/.dockerenv');
}
