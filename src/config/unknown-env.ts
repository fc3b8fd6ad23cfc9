/**
 * `HOOKBOT_*` variables hookbot does not read: a typo (`HOOKBOT_PROT=8080`) would otherwise pass in
 * silence and the default stay in force. Each one is a warning naming the closest variable: said by
 * every command (cli/main.ts checks once, at the entry of the command line), and by loadConfig for
 * whoever loads a configuration outside the command line.
 */
import { closest } from '../text/index.ts';
import { configKeys, leafKeys, type ConfigKey } from './config-keys.ts';

/** Variables read outside the configuration schema (their keys have no place in a config file). */
export const OTHER_VARIABLES: readonly string[] = [
  'HOOKBOT_CONFIG', // the configuration file
  'HOOKBOT_IN_DOCKER', // container detection, forced on or off
  'HOOKBOT_CONTAINER_FILE', // container detection: the file to look for instead of /.dockerenv
  'HOOKBOT_BOT_URL', // `hookbot explain --bot`: the running bot to ask
  'HOOKBOT_DEMO_LOG', // `hookbot demo`: the bot's debug log on stderr during the demo
  'HOOKBOT_SANDBOX_TMPDIR', // the sandbox: the folder for its git work files (docs/sandbox.md)
];

export function unknownEnvWarnings(env: NodeJS.ProcessEnv, keys: readonly ConfigKey[]): string[] {
  const known = new Set([
    ...leafKeys(keys).flatMap((key) => (key.env === undefined ? [] : [key.env])),
    ...OTHER_VARIABLES,
  ]);
  return Object.keys(env)
    .filter((name) => name.startsWith('HOOKBOT_') && !known.has(name))
    .sort()
    .map((name) => {
      const near = nearest(name, known);
      const hint = near ? `did you mean ${near}?` : 'the variables are listed in docs/configuration.md';
      return `${name} is set but hookbot reads no such variable (${hint}); it is ignored`;
    });
}

/** The same, against every variable of the configuration: what the command line checks at its entry. */
export function unknownVariableWarnings(env: NodeJS.ProcessEnv): string[] {
  return unknownEnvWarnings(env, configKeys());
}

/**
 * Compared without the shared `HOOKBOT_` (every name would otherwise look close): a typo of the rest
 * (`PROT`), else a known name holding it whole (`TOKEN` in `API_TOKEN`).
 */
function nearest(name: string, known: ReadonlySet<string>): string | undefined {
  const rest = (variable: string) => variable.slice('HOOKBOT_'.length);
  const word = rest(name);
  const byRest = new Map([...known].map((variable) => [rest(variable), variable]));
  const typo = closest(word, byRest.keys());
  if (typo !== undefined) return byRest.get(typo);
  return word.length >= 4 ? [...known].find((variable) => rest(variable).includes(word)) : undefined;
}
