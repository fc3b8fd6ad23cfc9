/**
 * Are we in a container? There `hookbot serve` must listen on every interface, or the published port
 * reaches nothing (schema.ts: the default host). Docker creates `/.dockerenv`; other runtimes
 * (Podman, Kubernetes) do not, so `HOOKBOT_IN_DOCKER=1` says it explicitly (the image sets it) and
 * `HOOKBOT_IN_DOCKER=0` denies it. `HOOKBOT_CONTAINER_FILE` names another file to look for instead of
 * `/.dockerenv`: tests play "in a container" (or "not") with a file of their own, without root.
 */
import { existsSync } from 'node:fs';
import { booleanVariable } from './booleans.ts';

export const CONTAINER_FILE = '/.dockerenv';

export interface ContainerSignal {
  inContainer: boolean;
  /** What decided it, in words for messages: `/.dockerenv exists`, `HOOKBOT_IN_DOCKER=1`. */
  because: string;
}

export function detectContainer(
  env: NodeJS.ProcessEnv,
  exists: (path: string) => boolean = existsSync,
): ContainerSignal | { problem: string } {
  const flag = booleanVariable(env, 'HOOKBOT_IN_DOCKER');
  if (flag.set)
    return 'problem' in flag
      ? { problem: flag.problem }
      : { inContainer: flag.value, because: `HOOKBOT_IN_DOCKER=${env.HOOKBOT_IN_DOCKER?.trim()}` };
  const file = env.HOOKBOT_CONTAINER_FILE?.trim() || CONTAINER_FILE;
  return exists(file)
    ? { inContainer: true, because: `${file} exists` }
    : { inContainer: false, because: `there is no ${file}` };
}
