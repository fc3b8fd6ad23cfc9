/**
 * docs/configuration.md, written from the schema like config.example.yml (same script, same test),
 * so that the reference cannot drift from what the loader accepts.
 */
import { BOOLEAN_SPELLINGS } from './booleans.ts';
import { configKeys, leafKeys, type ConfigKey } from './config-keys.ts';
import { loadConfig } from './load-config.ts';
import { describeKey, GENERATED_NOTE, yamlValue } from './render-example.ts';
import { SECRET_KEYS } from './secrets.ts';
import { keyName } from './sources.ts';

export function renderConfigReference(keys: readonly ConfigKey[] = configKeys()): string {
  const leaves = leafKeys(keys);
  const envRows = leaves
    .filter((key) => key.env !== undefined)
    .map((key) => `| \`${key.env}\` | \`${key.name}\` |`);
  const secretRows = SECRET_KEYS.map((secret) => {
    const value = leaves.find((key) => key.name === keyName(secret.value));
    const file = leaves.find((key) => key.name === keyName(secret.file));
    const variables = [value?.env, file?.env]
      .filter((x): x is string => x !== undefined)
      .map((x) => `\`${x}\``);
    return `| \`${keyName(secret.value)}\` | \`${keyName(secret.file)}\` | ${variables.join(', ') || '—'} |`;
  });
  return [
    '# Configuration reference',
    '',
    `<!-- ${GENERATED_NOTE}; do not edit it by hand. A test checks that it is current. -->`,
    '',
    'hookbot reads its settings from a YAML file and from environment variables. With no setting at all,',
    '`npm start` runs the bot against the embedded sandbox; set `api.url` (or `HOOKBOT_API_URL`) to run',
    'against a real server. [`config.example.yml`](../config.example.yml) shows every key with its default.',
    '',
    '## Where values come from',
    '',
    'From weakest to strongest:',
    '',
    '1. the defaults below;',
    '2. the configuration file: `hookbot serve --config FILE`, or the file named by `HOOKBOT_CONFIG`;',
    '3. environment variables (the table below), which win over the file;',
    '4. for secrets, a file that holds the secret, named by a `*_file` key or variable (see [Secrets](#secrets)).',
    '',
    'A key with no value (`port:`) keeps its default.',
    '',
    '| Variable | Key |',
    '| --- | --- |',
    '| `HOOKBOT_CONFIG` | the configuration file to read |',
    ...envRows,
    '',
    'Four more are read outside the keys: `HOOKBOT_IN_DOCKER` and `HOOKBOT_CONTAINER_FILE` (see',
    '[In a container](#in-a-container)), `HOOKBOT_BOT_URL` (the bot `hookbot explain --bot` asks) and',
    '`HOOKBOT_DEMO_LOG` (`hookbot demo` logs the bot on stderr). Any other',
    '`HOOKBOT_*` variable is a warning naming the closest known one (`hookbot: HOOKBOT_PROT is set but',
    'hookbot reads no such variable (did you mean HOOKBOT_PORT?); it is ignored`), on stderr, from every',
    'command (`explain`, `check` and `--version` included), once, before the command runs: a misspelt',
    'variable would otherwise leave the default in force in silence (a misspelt database URL variable',
    'would leave `explain` reading the state file). `hookbot sweep` receives no deliveries, so it does not ask for the',
    'webhook secret.',
    '',
    '## Relative paths',
    '',
    'Every path is resolved once, when hookbot starts, from one base: **the folder hookbot is started in**',
    "(its working directory), whether the path comes from the file, a variable or a default. The configuration file's",
    'own folder does not count: `hookbot serve --config /etc/hookbot/config.yml` started in `/srv/hookbot` keeps',
    'its state in `/srv/hookbot/data/` and reads `/srv/hookbot/rules/`. So the defaults mean the same folders with',
    'a file or without one: `data/` and `rules/` of the clone for `npm start`, `/app/data` and `/app/rules` in the',
    'Docker image (its working directory is `/app`). The start banner, the logs and the messages show the',
    'resolved, absolute paths; nothing resolves them again later (git, for one, runs in other folders). The',
    'keys that hold paths:',
    '',
    ...pathKeys(leaves),
    '',
    'The paths commands take as arguments (`--config`, `HOOKBOT_CONFIG`, `hookbot check DIR`, `--rules`,',
    '`--state`, `hookbot sandbox --data FILE`) are read from the same folder.',
    '',
    '## Booleans',
    '',
    "In the configuration file a boolean is YAML's `true` or `false` (in YAML 1.2, `yes` and `on` are strings,",
    'and hookbot refuses them there with their place, as any YAML 1.2 tool would read them as text). An',
    'environment variable is text: every boolean variable (those of the table, `HOOKBOT_IN_DOCKER`,',
    `\`HOOKBOT_DEMO_LOG\`) reads ${BOOLEAN_SPELLINGS}, and anything else stops hookbot at start with the`,
    'variable and its value named (`server.public_ops: must be true or false (...); got "maybe" (set by',
    'HOOKBOT_ALLOW_PUBLIC_OPS)`). An empty variable counts as unset.',
    '',
    '## In a container',
    '',
    '`server.host` defaults to `127.0.0.1`. In a container, against a server (`api.url` set: `hookbot serve`, the',
    'Docker image), it defaults to `0.0.0.0`, so that a published port reaches the bot; the image sets',
    '`HOOKBOT_HOST=0.0.0.0` itself anyway. Beyond loopback the bot refuses to start without',
    '`server.status_auth` unless `server.public_ops` is true, and the refusal says where the address came from',
    '(the variable, the line of the file, or the container and what detected it) and what to set instead',
    '(`HOOKBOT_HOST=127.0.0.1`, the status credentials, or `HOOKBOT_ALLOW_PUBLIC_OPS=true`).',
    '',
    'The embedded sandbox (`npm start` with no `api.url`) listens on loopback wherever it runs, and so does the',
    'bot beside it: a first `npm start` in a dev container or a CI image comes up with nothing to set. To reach',
    'it from outside the container, set `HOOKBOT_HOST=0.0.0.0` with the status credentials (or',
    '`HOOKBOT_ALLOW_PUBLIC_OPS=true`).',
    '',
    'hookbot assumes a container when `HOOKBOT_IN_DOCKER` is true, or, when that variable is unset, when',
    '`/.dockerenv` exists (Docker creates it; Podman and Kubernetes do not: set `HOOKBOT_IN_DOCKER=1` there).',
    '`HOOKBOT_IN_DOCKER=0` says it is no container whatever the files say. `HOOKBOT_CONTAINER_FILE` names',
    'another file to look for instead of `/.dockerenv` (the tests use it to play a container without root).',
    '',
    '## Secrets',
    '',
    'The API token, the hook secret, the signature secret and the status page password can each be given in',
    'three ways. Prefer the environment or a file: a configuration file is easily committed or shared, and',
    'hookbot warns at start when a secret is written in it.',
    '',
    '- an environment variable, where there is one (`HOOKBOT_API_TOKEN`, `HOOKBOT_WEBHOOK_SECRET`);',
    '- a file that holds only the secret (a Docker or Kubernetes secret), named by the `*_file` key or its',
    '  variable (`HOOKBOT_API_TOKEN_FILE`, `HOOKBOT_WEBHOOK_SECRET_FILE`); a trailing newline is dropped, and a',
    '  missing, unreadable or empty file stops hookbot at start with the key and the path named;',
    '- the key itself in the configuration file.',
    '',
    'Setting a secret and its `*_file` in the same place (both in the file, or both in the environment) is an',
    "error; between the two places the environment wins. Secrets never appear in logs: hookbot's logger",
    'redacts them by key name and by value, including inside error messages and URLs (`private_token=...`).',
    '',
    '| Secret | File key | Variables |',
    '| --- | --- | --- |',
    ...secretRows,
    '',
    'When `api.url` is set, `api.token` is required, and so is `webhook.secret` unless',
    '`webhook.allow_open` is true. Without `api.url` (the embedded sandbox), hookbot makes up both.',
    '',
    '## Problems',
    '',
    'A bad configuration stops hookbot at start, listing every problem at once as `key: problem`, led by',
    'the place in the file where the value is written, or followed by the variable that set it. For example,',
    'this `config.yml`, with `HOOKBOT_PORT=http` in the environment:',
    '',
    '```yaml',
    SAMPLE_FILE.trimEnd(),
    '```',
    '',
    'gives:',
    '',
    '```text',
    ...sampleProblems(),
    '```',
    '',
    '## Keys',
    '',
    ...keys.flatMap((key) => renderSection(key)),
  ].join('\n');
}

const SAMPLE_FILE = `api:
  url: https://git.example.com
  token_type: bearer
sever:
  port: 3000
hooks:
  manage: true
`;

/** What the loader really says about SAMPLE_FILE, so the example cannot drift from the messages. */
function sampleProblems(): string[] {
  const result = loadConfig({
    file: 'config.yml',
    env: { HOOKBOT_PORT: 'http' },
    cwd: '/',
    inDocker: false,
    readFile: () => SAMPLE_FILE,
  });
  return result.ok ? [] : result.problems;
}

/** One line per key that holds a path, with its default and its variable. */
function pathKeys(leaves: readonly ConfigKey[]): string[] {
  return leaves
    .filter((key) => key.fsPath === true)
    .map((key) => {
      const parts = [
        key.hasDefault && key.default !== '' ? `default \`${String(key.default)}\`` : undefined,
        key.env && `\`${key.env}\``,
      ];
      const extra = parts.filter((part) => part !== undefined).join(', ');
      return `- \`${key.name}\`${extra ? ` (${extra})` : ''}`;
    });
}

function renderSection(section: ConfigKey): string[] {
  const rows = (section.children ?? []).flatMap(rowsOf);
  return [
    `### \`${section.name}\``,
    '',
    section.description,
    '',
    '| Key | Default | Variable | Description |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ];
}

function rowsOf(key: ConfigKey): string[] {
  if (key.children)
    return [`| \`${key.name}\` | | | ${cell(key.description)} |`, ...key.children.flatMap(rowsOf)];
  const variable = key.env ? `\`${key.env}\`` : '';
  return [`| \`${key.name}\` | ${defaultCell(key)} | ${variable} | ${cell(describeKey(key, 'reference'))} |`];
}

function defaultCell(key: ConfigKey): string {
  if (key.defaultNote !== undefined) return cell(key.defaultNote);
  if (!key.hasDefault || key.default === '') return 'not set';
  return `\`${yamlValue(key.default)}\``;
}

/** Table cells are Markdown: a pipe would end the cell and `<namespace>` would read as an HTML tag. */
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/</g, '&lt;').replace(/>/g, '&gt;');
