/**
 * Reads the configuration: the file (`--config FILE` or `HOOKBOT_CONFIG`), then the environment,
 * which wins, then secrets from the files that hold them; validates the result against the schema
 * and lists every problem at once, each as `key: problem` with its place.
 */
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { resolve } from 'node:path';
import { fileErrorReason } from './file-error.ts';
import { configKeys, leafKeys, type ConfigKey } from './config-keys.ts';
import { detectContainer, type ContainerSignal } from './docker.ts';
import { deleteIn, envValues, getIn, setIn } from './env-overlay.ts';
import { resolveConfigPaths } from './paths.ts';
import { modeOf, requirementProblems, type ConfigMode } from './requirements.ts';
import { createConfigSchema, type Config } from './schema.ts';
import { schemaProblems } from './schema-problems.ts';
import { readSecrets, SECRET_KEYS } from './secrets.ts';
import { unknownEnvWarnings } from './unknown-env.ts';
import {
  formatProblem,
  keyName,
  sortProblems,
  type ConfigSource,
  type ConfigSources,
  type Problem,
} from './sources.ts';
import { parseYamlSource, type KeyPath, type YamlSource } from './yaml-source.ts';

export type { ConfigMode } from './requirements.ts';

export interface LoadConfigOptions {
  /** From `--config FILE`; otherwise `HOOKBOT_CONFIG`; otherwise no file (defaults and environment). */
  file?: string | undefined;
  env: NodeJS.ProcessEnv;
  /**
   * The base of every relative path: the config file, secret files, the state file, the rules
   * folder, the git cache... (paths.ts). Default: process.cwd(), the folder hookbot is started in.
   */
  cwd?: string;
  /**
   * Running in a container? Default: detected (`/.dockerenv`, `HOOKBOT_IN_DOCKER`,
   * `HOOKBOT_CONTAINER_FILE`: docker.ts). Tests set it.
   */
  inDocker?: boolean;
  /** Reads a file as text; tests may replace it. */
  readFile?: (path: string) => string;
  /**
   * Whether the command receives hook deliveries (default true). `hookbot sweep` does not, so it
   * does not ask for the webhook secret.
   */
  receivesHooks?: boolean;
  /**
   * Whether the command calls the server's API (default true). `hookbot explain --bot` reads only
   * the status page's credentials from the configuration, so it does not ask for the API token
   * (which the bot's own environment may hold).
   */
  callsApi?: boolean;
  /**
   * Whether to list the `HOOKBOT_*` variables hookbot does not read (default true). The command
   * line checks them once at its entry for every command (cli/main.ts) and passes false, so that
   * they are not said twice.
   */
  unknownVariables?: boolean;
}

export type LoadConfigResult =
  | {
      ok: true;
      config: Config;
      /** `sandbox` when api.url is empty: the start command runs the embedded sandbox and makes up the secrets. */
      mode: ConfigMode;
      /** The configuration file read, as given, if any. */
      file: string | undefined;
      /** Where each value that is not a default came from, by dotted key. */
      sources: ConfigSources;
      /** Worth saying at start, not worth refusing to start (a secret written in the file). */
      warnings: string[];
      /** In a container or not, and why: messages about the listening address say it. */
      container: ContainerSignal;
    }
  | { ok: false; problems: string[] };

export function loadConfig(options: LoadConfigOptions): LoadConfigResult {
  const cwd = options.cwd ?? process.cwd();
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const file = options.file ?? (options.env.HOOKBOT_CONFIG || undefined);
  const keys = configKeys();

  let yaml: YamlSource | undefined;
  if (file !== undefined) {
    let text: string;
    try {
      text = readFile(resolve(cwd, file));
    } catch (error) {
      return {
        ok: false,
        problems: [`${file}: cannot read the configuration file: ${fileErrorReason(error)}`],
      };
    }
    const parsed = parseYamlSource(file, text);
    if (!parsed.ok) return parsed;
    yaml = parsed.source;
    if (!isMapping(yaml.data))
      return {
        ok: false,
        problems: [`${file}:1:1: the configuration must be a mapping of keys (api:, server:, ...)`],
      };
  }

  const raw: Record<string, unknown> = isMapping(yaml?.data) ? structuredClone(yaml.data) : {};
  dropEmptyValues(raw, keys);
  const sources: ConfigSources = {};
  if (yaml) recordFileSources(raw, [], yaml, sources);
  const fileOnly = structuredClone(raw);
  const overridden: { name: string; path: readonly string[] }[] = [];
  const variableProblems: Problem[] = [];
  for (const { name, path, value, problem } of envValues(options.env, keys)) {
    if (problem !== undefined) {
      variableProblems.push({ key: keyName(path), message: problem, source: { from: 'env', name } });
      continue;
    }
    if (sources[keyName(path)]?.from === 'file') overridden.push({ name, path });
    if (setIn(raw, path, value)) sources[keyName(path)] = { from: 'env', name };
  }

  const secretProblems = readSecrets(raw, sources, { cwd, readFile });
  const problems = [...variableProblems, ...secretProblems];

  const fileSource = (position: { line: number; column: number } | undefined): ConfigSource | undefined =>
    position && yaml ? { from: 'file', file: yaml.file, ...position } : undefined;
  const detected: ContainerSignal | { problem: string } =
    options.inDocker === undefined
      ? detectContainer(options.env)
      : { inContainer: options.inDocker, because: 'the caller says so' };
  const container = 'problem' in detected ? { inContainer: false, because: detected.problem } : detected;
  if ('problem' in detected) problems.push({ key: '', message: detected.problem });
  // Every interface in a container, so that a published port reaches the bot; but only against a
  // server: the embedded sandbox listens on loopback, and a bot on every interface would only meet
  // the public-listener guard (status_auth) on a first `npm start` in a dev container.
  const schema = createConfigSchema({ inDocker: container.inContainer && modeOf(raw) === 'server' });
  const result = schema.safeParse(raw);
  if (!result.success)
    problems.push(
      ...schemaProblems(result.error.issues, keys, {
        valueSource: (path) => envSourceOf(path, sources) ?? fileSource(yaml?.valueAt(path)),
        keySource: (path) => fileSource(yaml?.keyAt(path)),
      }),
    );
  problems.push(
    ...requirementProblems(raw, new Set(secretProblems.map((p) => p.key)), {
      receivesHooks: options.receivesHooks ?? true,
      callsApi: options.callsApi ?? true,
    }),
  );

  const variableWarnings = options.unknownVariables === false ? [] : unknownEnvWarnings(options.env, keys);
  // A misspelt variable is often why a key is missing (HOOKBOT_API_TOKN): listed with the problems.
  if (!result.success || problems.length > 0)
    return { ok: false, problems: [...sortProblems(problems).map(formatProblem), ...variableWarnings] };
  // Relative paths resolved once, from the working directory (paths.ts).
  resolveConfigPaths(result.data, keys, cwd);
  return {
    ok: true,
    config: result.data,
    container,
    mode: modeOf(raw),
    file,
    sources,
    warnings: [
      ...variableWarnings,
      ...warningsOf(sources, keys, raw),
      ...overriddenProblems(schema.safeParse(fileOnly), overridden, keys, fileSource, yaml),
    ],
  };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `token:` with nothing after it (null) means "not set", as does a section whose keys are all commented out. */
function dropEmptyValues(raw: Record<string, unknown>, keys: readonly ConfigKey[]): void {
  for (const key of keys) {
    const value = getIn(raw, key.path);
    if (value === null) deleteIn(raw, key.path);
    else if (key.children && isMapping(value)) dropEmptyValues(raw, key.children);
  }
}

/** Every value the file sets, down to lists (a list is one value: `hooks.projects`). */
function recordFileSources(node: unknown, path: string[], yaml: YamlSource, sources: ConfigSources): void {
  if (isMapping(node) && path.length < 8) {
    for (const [name, value] of Object.entries(node))
      recordFileSources(value, [...path, name], yaml, sources);
    return;
  }
  const position = yaml.valueAt(path);
  if (position) sources[keyName(path)] = { from: 'file', file: yaml.file, ...position };
}

/** A variable that set this key, or a mapping above it. */
function envSourceOf(path: KeyPath, sources: ConfigSources): ConfigSource | undefined {
  for (let length = path.length; length > 0; length--) {
    const source = sources[keyName(path.slice(0, length))];
    if (source?.from === 'env') return source;
  }
  return undefined;
}

function warningsOf(sources: ConfigSources, keys: readonly ConfigKey[], raw: unknown): string[] {
  const warnings: string[] = [];
  const byName = new Map(leafKeys(keys).map((key) => [key.name, key]));
  for (const secret of SECRET_KEYS) {
    const name = keyName(secret.value);
    const source = sources[name];
    // `token: ''` (as in config.example.yml) writes no secret.
    if (source?.from !== 'file' || getIn(raw, secret.value) === '') continue;
    const env = byName.get(name)?.env;
    const instead = [env, keyName(secret.file)].filter((x) => x !== undefined).join(' or ');
    warnings.push(
      formatProblem({
        key: name,
        message: `a secret written in the configuration file: prefer ${instead}`,
        source,
      }),
    );
  }
  if (modeOf(raw) === 'server' && getIn(raw, ['webhook', 'allow_open']) === true)
    warnings.push(
      'webhook.allow_open is true: anyone who can reach the server can send deliveries that trigger rules',
    );
  return warnings;
}

/**
 * A file value that is wrong but overridden by an environment variable: the configuration in force
 * is valid, so it is a warning, not a refusal; but the file would fail the day the variable goes,
 * so it is said now, with its place in the file.
 */
function overriddenProblems(
  fileResult: { success: true } | { success: false; error: { issues: z.core.$ZodIssue[] } },
  overridden: readonly { name: string; path: readonly string[] }[],
  keys: readonly ConfigKey[],
  fileSource: (position: { line: number; column: number } | undefined) => ConfigSource | undefined,
  yaml: YamlSource | undefined,
): string[] {
  if (fileResult.success || overridden.length === 0) return [];
  const within = (issuePath: readonly PropertyKey[], path: readonly string[]) =>
    path.every((part, i) => String(issuePath[i]) === part);
  const issues = fileResult.error.issues.filter((issue) =>
    overridden.some(({ path }) => within(issue.path, path)),
  );
  return schemaProblems(issues, keys, {
    valueSource: (path) => fileSource(yaml?.valueAt(path)),
    keySource: (path) => fileSource(yaml?.keyAt(path)),
  }).map((problem) => {
    const by = overridden.find(({ path }) => keyName(path) === problem.key)?.name;
    return `${formatProblem(problem)} (not in force: ${by ?? 'an environment variable'} overrides it)`;
  });
}
