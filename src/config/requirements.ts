/**
 * Rules between keys, which no single key's schema can say. Checked on the merged values even
 * when some keys are malformed, so that one run lists every problem.
 */
import { getIn } from './env-overlay.ts';
import type { Problem } from './sources.ts';

export type ConfigMode = 'server' | 'sandbox';

const isSet = (value: unknown): boolean => typeof value === 'string' && value.trim() !== '';

/** No `api.url`: `npm start` runs the embedded sandbox and makes up the token and the secret itself. */
export function modeOf(raw: unknown): ConfigMode {
  return isSet(getIn(raw, ['api', 'url'])) ? 'server' : 'sandbox';
}

/**
 * `alreadyReported` holds keys with a problem of their own (an unreadable
 * secret file): saying it is also "required" would only repeat it.
 */
export function requirementProblems(raw: unknown, alreadyReported: ReadonlySet<string>): Problem[] {
  const problems: Problem[] = [];
  const require = (key: string, fileKey: string | undefined, when: boolean, message: string) => {
    const value = getIn(raw, key.split('.'));
    if (!when || isSet(value) || alreadyReported.has(key) || (fileKey && alreadyReported.has(fileKey)))
      return;
    problems.push({ key, message });
  };
  const server = modeOf(raw) === 'server';
  require('api.token', 'api.token_file', server, 'required when api.url is set');
  require('webhook.secret', 'webhook.secret_file', server &&
    getIn(raw, ['webhook', 'allow_open']) !== true, 'required unless webhook.allow_open is true');
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
