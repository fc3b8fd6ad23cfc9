/**
 * The status page's credentials (`server.status_auth`) as the bot itself reads them, for
 * `hookbot explain --bot`: the configuration file `HOOKBOT_CONFIG` names (the one the bot runs
 * with), the environment winning over it, the password from `password_file` too, all through the
 * one configuration loader. Only these keys are used: no API token and no webhook secret is asked
 * for, since explain calls neither the server nor receives hooks.
 */
import { describeSource, loadConfig } from '../config/index.ts';

export type StatusCredentials =
  { found: true; username: string; password: string; from: string } | { found: false; problem?: string };

export function statusCredentials(env: NodeJS.ProcessEnv): StatusCredentials {
  const file = env.HOOKBOT_CONFIG || undefined;
  const loaded = loadConfig({
    file,
    env,
    receivesHooks: false,
    callsApi: false,
    unknownVariables: false,
  });
  if (!loaded.ok)
    return {
      found: false,
      problem: `the configuration${file === undefined ? '' : ` ${file} (HOOKBOT_CONFIG)`} could not be read for server.status_auth: ${loaded.problems.join('; ')}`,
    };
  const { username, password } = loaded.config.server.status_auth;
  if (!username || !password) return { found: false };
  const of = (key: string) => {
    const source = loaded.sources[`server.status_auth.${key}`];
    return source === undefined ? 'the configuration' : describeSource(source);
  };
  const [user, pass] = [of('username'), of('password')];
  return {
    found: true,
    username,
    password,
    from: user === pass ? user : `${user} (username) and ${pass} (password)`,
  };
}
