/**
 * Rules between keys, which no single key's schema can say. Checked on the merged values even
 * when some keys are malformed, so that one run lists every problem.
 */
import { configKeys, leafKeys } from './config-keys.ts';
import { getIn } from './env-overlay.ts';
import type { Problem } from './sources.ts';

export type ConfigMode = 'server' | 'sandbox';

const isSet = (value: unknown): boolean => typeof value === 'string' && value.trim() !== '';

/** No `api.url`: `npm start` runs the embedded sandbox and makes up the token and the secret itself. */
export function modeOf(raw: unknown): ConfigMode {
  return isSet(getIn(raw, ['api', 'url'])) ? 'server' : 'sandbox';
}

/** How to set a key that is missing: its variable (and the one naming a file that holds it). */
function howToSet(key: string, fileKey: string | undefined): string {
  const byName = new Map(leafKeys(configKeys()).map((k) => [k.name, k.env]));
  const env = byName.get(key);
  const fileEnv = fileKey ? byName.get(fileKey) : undefined;
  const fromFile = fileEnv ?? fileKey;
  if (env !== undefined)
    return fromFile === undefined
      ? `set ${env} (or ${key} in the configuration file)`
      : `set ${env}, or ${fromFile} to a file holding it`;
  return fromFile === undefined
    ? `set ${key} in the configuration file`
    : `set ${fromFile} to a file holding it (or ${key})`;
}

/**
 * `alreadyReported` holds keys with a problem of their own (an unreadable
 * secret file): saying it is also "required" would only repeat it. A command that receives no
 * deliveries (`receivesHooks: false`, `hookbot sweep`) needs no webhook secret; one that calls no
 * API (`callsApi: false`, `hookbot explain --bot` reading the status credentials) needs no token.
 */
export function requirementProblems(
  raw: unknown,
  alreadyReported: ReadonlySet<string>,
  options: { receivesHooks: boolean; callsApi?: boolean } = { receivesHooks: true },
): Problem[] {
  const problems: Problem[] = [];
  const require = (key: string, fileKey: string | undefined, when: boolean, message: string) => {
    const value = getIn(raw, key.split('.'));
    if (!when || isSet(value) || alreadyReported.has(key) || (fileKey && alreadyReported.has(fileKey)))
      return;
    problems.push({ key, message: `${message}: ${howToSet(key, fileKey)}` });
  };
  const server = modeOf(raw) === 'server';
  require('api.token', 'api.token_file', server &&
    options.callsApi !== false, "required when api.url is set (the bot user's private token)");
  require('webhook.secret', 'webhook.secret_file', server &&
    options.receivesHooks &&
    getIn(raw, ['webhook', 'allow_open']) !==
      true, "required unless webhook.allow_open is true (the secret token of the projects' hook)");
  require('hooks.url', undefined, getIn(raw, ['hooks', 'manage']) ===
    true, 'required when hooks.manage is true');
  const auth = (name: string) => getIn(raw, ['server', 'status_auth', name]);
  require('server.status_auth.password', 'server.status_auth.password_file', isSet(
    auth('username'),
  ), 'required when server.status_auth.username is set');
  require('server.status_auth.username', undefined, isSet(
    auth('password'),
  ), 'required when server.status_auth.password is set');
  return problems;
}
