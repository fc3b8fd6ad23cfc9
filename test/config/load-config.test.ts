import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { configKeys, leafKeys } from '../../src/config/config-keys.ts';
import { getIn, setIn } from '../../src/config/env-overlay.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createConfigSchema } from '../../src/config/schema.ts';
import { expectOk, expectProblems, loadIn, useTempDir } from './helpers.ts';

const SERVER = 'api:\n  url: https://git.example.com\n';
/** The secrets a server-mode configuration needs, from the environment. */
const SECRETS = { HOOKBOT_API_TOKEN: 'api-token-1234', HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' };

describe('loadConfig: problems, each as `key: problem` with its place', () => {
  const tempDir = useTempDir();

  const cases: { name: string; yaml?: string; env?: NodeJS.ProcessEnv; problems: string[] }[] = [
    {
      name: 'an unknown top-level key, with the key it resembles',
      yaml: 'sever:\n  port: 3000\n',
      problems: ['config.yml:1:1: unknown key "sever" (did you mean "server"?)'],
    },
    {
      name: 'an unknown nested key, named in full',
      yaml: 'api:\n  tokn: abc\n',
      problems: ['config.yml:2:3: unknown key "api.tokn" (did you mean "api.token"?)'],
    },
    {
      name: 'a key in the wrong section: the sections that have it',
      yaml: 'port: 3000\n',
      problems: ['config.yml:1:1: unknown key "port" (did you mean "server.port" or "sandbox.port"?)'],
    },
    {
      name: 'an unknown key like no other: no suggestion',
      yaml: 'colour: red\n',
      problems: ['config.yml:1:1: unknown key "colour"'],
    },
    {
      name: 'an unknown sweep',
      yaml: 'scheduler:\n  sweeps:\n    reconcil: { every: 5m }\n',
      problems: [
        'config.yml:3:5: unknown key "scheduler.sweeps.reconcil" (did you mean "scheduler.sweeps.reconcile"?)',
      ],
    },
    {
      name: 'a port out of range',
      yaml: 'server:\n  port: 70000\n',
      problems: ['config.yml:2:9: server.port: must be an integer between 0 and 65535'],
    },
    {
      name: 'a port written as a string',
      yaml: "server:\n  port: '3000'\n",
      problems: ['config.yml:2:9: server.port: must be an integer between 0 and 65535'],
    },
    {
      name: 'a port that is not whole',
      yaml: 'server:\n  port: 30.5\n',
      problems: ['config.yml:2:9: server.port: must be an integer between 0 and 65535'],
    },
    {
      name: 'a token type outside the set',
      yaml: 'api:\n  token_type: bearer\n',
      problems: ['config.yml:2:15: api.token_type: must be one of private, oauth'],
    },
    {
      name: 'a log level outside the set',
      yaml: 'log:\n  level: verbose\n',
      problems: ['config.yml:2:10: log.level: must be one of fatal, error, warn, info, debug, trace, silent'],
    },
    ...['hookbot/train', '../x/', 'a/.hidden/', '-x/', 'a b/'].map((prefix) => ({
      name: `a train branch folder git cannot hold: ${prefix}`,
      yaml: `git:\n  train_branch_prefix: '${prefix}'\n`,
      problems: [
        'config.yml:2:24: git.train_branch_prefix: must be a folder of branch names ending with "/", e.g. hookbot/train/ (parts made of letters, digits, "-", "_" and "."; no "..", no part starting with "." or "-")',
      ],
    })),
    {
      name: 'a section that is not a mapping',
      yaml: 'server: 5\n',
      problems: ['config.yml:1:9: server: must be a mapping of keys'],
    },
    {
      name: 'a boolean written as yes (a string in YAML 1.2)',
      yaml: 'rules:\n  watch: yes\n',
      problems: ['config.yml:2:10: rules.watch: must be true or false'],
    },
    {
      name: 'a share above 1',
      yaml: 'scheduler:\n  breaker:\n    max_share: 2\n',
      problems: ['config.yml:3:16: scheduler.breaker.max_share: must be a number between 0 and 1'],
    },
    {
      name: 'a count below its minimum',
      yaml: 'pipeline:\n  concurrency: 0\n',
      problems: ['config.yml:2:16: pipeline.concurrency: must be an integer of at least 1'],
    },
    {
      name: 'a sweep with both every and cron',
      yaml: "scheduler:\n  sweeps:\n    rules: { every: 5m, cron: '0 3 * * *' }\n",
      problems: ['config.yml:3:12: scheduler.sweeps.rules: set either every or cron, not both'],
    },
    {
      name: 'a sweep interval that is not a duration',
      yaml: 'scheduler:\n  sweeps:\n    retries:\n      every: 5x\n',
      problems: [
        'config.yml:4:14: scheduler.sweeps.retries.every: must be a duration such as 30s, 5m, 1h or 1d (units s, m, h, d, w)',
      ],
    },
    {
      name: 'a cron line with a field out of range',
      yaml: "scheduler:\n  sweeps:\n    hook_check:\n      cron: '0 25 * * *'\n",
      problems: [
        'config.yml:4:13: scheduler.sweeps.hook_check.cron: must be a cron line: hour 25 is out of range 0-23',
      ],
    },
    {
      name: 'a project that is not namespace/project',
      yaml: 'hooks:\n  projects:\n    - acme/web\n    - web\n',
      problems: ['config.yml:4:7: hooks.projects[1]: must be namespace/project, e.g. acme/web'],
    },
    {
      name: 'projects that are not a list',
      yaml: 'hooks:\n  projects: acme/web\n',
      problems: ['config.yml:2:13: hooks.projects: must be a list'],
    },
    {
      name: 'an API URL without a scheme',
      yaml: 'api:\n  url: git.example.com\n',
      env: SECRETS,
      problems: ['config.yml:2:8: api.url: must be an http or https URL, e.g. https://git.example.com'],
    },
    {
      name: 'a hook path without its slash',
      yaml: 'server:\n  hook_path: hooks\n',
      problems: ['config.yml:2:14: server.hook_path: must be a path starting with /, e.g. /hooks'],
    },
    {
      name: 'a server without a hook secret',
      yaml: SERVER,
      env: { HOOKBOT_API_TOKEN: 'api-token-1234' },
      problems: [
        "webhook.secret: required unless webhook.allow_open is true (the secret token of the projects' hook): set HOOKBOT_WEBHOOK_SECRET, or HOOKBOT_WEBHOOK_SECRET_FILE to a file holding it",
      ],
    },
    {
      name: 'a server without an API token',
      yaml: SERVER,
      env: { HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' },
      problems: [
        "api.token: required when api.url is set (the bot user's private token): set HOOKBOT_API_TOKEN, or HOOKBOT_API_TOKEN_FILE to a file holding it",
      ],
    },
    {
      name: 'hook management without the URL to register',
      yaml: 'hooks:\n  manage: true\n',
      problems: ['hooks.url: required when hooks.manage is true: set hooks.url in the configuration file'],
    },
    {
      name: 'a status page user without a password',
      yaml: 'server:\n  status_auth:\n    username: admin\n',
      problems: [
        'server.status_auth.password: required when server.status_auth.username is set: set HOOKBOT_STATUS_PASSWORD, or HOOKBOT_STATUS_PASSWORD_FILE to a file holding it',
      ],
    },
    {
      name: 'a status page password without a user',
      yaml: 'server:\n  status_auth:\n    password: s3cret-pass\n',
      problems: [
        'server.status_auth.username: required when server.status_auth.password is set: set HOOKBOT_STATUS_USERNAME (or server.status_auth.username in the configuration file)',
      ],
    },
    {
      name: 'a bad value from the environment names the variable',
      env: { HOOKBOT_PORT: 'http' },
      problems: ['server.port: must be an integer between 0 and 65535 (set by HOOKBOT_PORT)'],
    },
    {
      name: 'a bad log level from the environment names the variable',
      env: { HOOKBOT_LOG_LEVEL: 'loud' },
      problems: [
        'log.level: must be one of fatal, error, warn, info, debug, trace, silent (set by HOOKBOT_LOG_LEVEL)',
      ],
    },
    {
      name: 'a duplicate key is a YAML error, at its place',
      yaml: 'server:\n  port: 1\n  port: 2\n',
      problems: ['config.yml:3:3: Map keys must be unique'],
    },
    {
      name: 'a file that is a list, not a mapping',
      yaml: '- api\n- server\n',
      problems: ['config.yml:1:1: the configuration must be a mapping of keys (api:, server:, ...)'],
    },
    {
      name: 'every problem at once: those in the file top to bottom, then the others',
      yaml: [
        'api:',
        '  url: https://git.example.com/api/v3',
        '  token_type: bearer',
        'sever:',
        '  port: 3000',
        'server:',
        '  port: 70000',
        'hooks:',
        '  manage: true',
        '',
      ].join('\n'),
      env: { HOOKBOT_LOG_LEVEL: 'loud' },
      problems: [
        'config.yml:3:15: api.token_type: must be one of private, oauth',
        'config.yml:4:1: unknown key "sever" (did you mean "server"?)',
        'config.yml:7:9: server.port: must be an integer between 0 and 65535',
        'log.level: must be one of fatal, error, warn, info, debug, trace, silent (set by HOOKBOT_LOG_LEVEL)',
        "api.token: required when api.url is set (the bot user's private token): set HOOKBOT_API_TOKEN, or HOOKBOT_API_TOKEN_FILE to a file holding it",
        "webhook.secret: required unless webhook.allow_open is true (the secret token of the projects' hook): set HOOKBOT_WEBHOOK_SECRET, or HOOKBOT_WEBHOOK_SECRET_FILE to a file holding it",
        'hooks.url: required when hooks.manage is true: set hooks.url in the configuration file',
      ],
    },
  ];

  it.each(cases)('$name', ({ yaml, env, problems }) => {
    expect(
      expectProblems(loadIn(tempDir(), { ...(yaml !== undefined ? { yaml } : {}), env: env ?? {} })),
    ).toEqual(problems);
  });

  it('a YAML syntax error is reported as file:line:column: message, and alone', () => {
    const problems = expectProblems(loadIn(tempDir(), { yaml: 'sever:\n  port: [1, 2\n' }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^config\.yml:3:1: .*\]/);
  });

  it('a configuration file that does not exist', () => {
    const dir = tempDir();
    const problems = expectProblems(loadIn(dir, { options: { file: 'missing.yml' } }));
    expect(problems).toEqual(['missing.yml: cannot read the configuration file: no such file']);
  });
});

describe('loadConfig: values and where they come from', () => {
  const tempDir = useTempDir();

  it('no file and no variables: every default, in sandbox mode', () => {
    const dir = tempDir();
    const result = expectOk(loadIn(dir, {}));
    expect(result.mode).toBe('sandbox');
    expect(result.file).toBeUndefined();
    expect(result.sources).toEqual({});
    // The defaults, their relative paths resolved from the working directory (the one base).
    const defaults = createConfigSchema().parse({});
    defaults.state.path = join(dir, 'data/hookbot.json');
    defaults.rules.dir = join(dir, 'rules');
    defaults.git.cache_dir = join(dir, 'data/git-cache');
    defaults.sandbox.data = join(dir, 'data/sandbox.json');
    expect(result.config).toEqual(defaults);
    expect(result.config.server).toMatchObject({ host: '127.0.0.1', port: 3000, hook_path: '/hooks' });
    expect(result.config.api.token).toBeUndefined();
  });

  it('an API URL makes it server mode, and strips /api/v3 and trailing slashes', () => {
    const result = expectOk(
      loadIn(tempDir(), { yaml: 'api:\n  url: https://git.example.com/api/v3/\n', env: SECRETS }),
    );
    expect(result.mode).toBe('server');
    expect(result.config.api.url).toBe('https://git.example.com');
  });

  const envCases: { variable: string; value: string; key: string[]; expected: unknown }[] = [
    {
      variable: 'HOOKBOT_API_URL',
      value: 'https://env.example.com/api/v3',
      key: ['api', 'url'],
      expected: 'https://env.example.com',
    },
    {
      variable: 'HOOKBOT_API_TOKEN',
      value: 'env-token-0001',
      key: ['api', 'token'],
      expected: 'env-token-0001',
    },
    {
      variable: 'HOOKBOT_WEBHOOK_SECRET',
      value: 'env-secret-01',
      key: ['webhook', 'secret'],
      expected: 'env-secret-01',
    },
    {
      variable: 'HOOKBOT_RULES',
      value: '/etc/hookbot/rules',
      key: ['rules', 'dir'],
      expected: '/etc/hookbot/rules',
    },
    {
      variable: 'HOOKBOT_STATE',
      value: '/var/lib/hookbot/state.json',
      key: ['state', 'path'],
      expected: '/var/lib/hookbot/state.json',
    },
    { variable: 'HOOKBOT_PORT', value: '8080', key: ['server', 'port'], expected: 8080 },
    { variable: 'HOOKBOT_HOST', value: '0.0.0.0', key: ['server', 'host'], expected: '0.0.0.0' },
    { variable: 'HOOKBOT_LOG_LEVEL', value: 'debug', key: ['log', 'level'], expected: 'debug' },
  ];

  const fileValues = [
    'api:',
    '  url: https://file.example.com',
    '  token: file-token-0001',
    'webhook:',
    '  secret: file-secret-01',
    'rules:',
    '  dir: file-rules',
    'state:',
    '  path: file-state.json',
    'server:',
    '  port: 4000',
    '  host: 10.0.0.1',
    'log:',
    '  level: warn',
    '',
  ].join('\n');

  it.each(envCases)('$variable wins over the file for $key', ({ variable, value, key, expected }) => {
    const result = expectOk(loadIn(tempDir(), { yaml: fileValues, env: { [variable]: value } }));
    const [section, name] = key as [string, string];
    expect((result.config as unknown as Record<string, Record<string, unknown>>)[section]?.[name]).toBe(
      expected,
    );
    expect(result.sources[key.join('.')]).toEqual({ from: 'env', name: variable });
  });

  it('values the file sets are recorded with their place; the others keep their default', () => {
    const result = expectOk(loadIn(tempDir(), { yaml: fileValues }));
    expect(result.config.server.port).toBe(4000);
    expect(result.sources['server.port']).toEqual({ from: 'file', file: 'config.yml', line: 11, column: 9 });
    expect(result.sources['server.hook_path']).toBeUndefined();
    expect(result.config.server.hook_path).toBe('/hooks');
  });

  it('an empty variable counts as unset', () => {
    const result = expectOk(
      loadIn(tempDir(), { yaml: 'server:\n  port: 4000\n', env: { HOOKBOT_PORT: '' } }),
    );
    expect(result.config.server.port).toBe(4000);
  });

  it('HOOKBOT_CONFIG names the file when --config does not', () => {
    const dir = tempDir();
    loadIn(dir, { yaml: 'server:\n  port: 4100\n' });
    const result = expectOk(loadIn(dir, { env: { HOOKBOT_CONFIG: join(dir, 'config.yml') } }));
    expect(result.config.server.port).toBe(4100);
    expect(result.file).toBe(join(dir, 'config.yml'));
  });

  it('--config wins over HOOKBOT_CONFIG', () => {
    const dir = tempDir();
    const result = expectOk(
      loadIn(dir, { yaml: 'server:\n  port: 4200\n', env: { HOOKBOT_CONFIG: join(dir, 'missing.yml') } }),
    );
    expect(result.config.server.port).toBe(4200);
  });

  it('a key with no value keeps its default, and so does a section with every key commented out', () => {
    const result = expectOk(loadIn(tempDir(), { yaml: 'server:\n  port:\napi:\n  # url: https://x\n' }));
    expect(result.config.server.port).toBe(3000);
    expect(result.config.api.url).toBeUndefined();
  });

  it('sweeps: the default interval unless configured; cron replaces every', () => {
    const yaml =
      "scheduler:\n  sweeps:\n    rules: { cron: '0 3 * * *' }\n    reconcile: { enabled: false }\n";
    const { sweeps } = expectOk(loadIn(tempDir(), { yaml })).config.scheduler;
    expect(sweeps).toEqual({
      rules: { enabled: true, cron: '0 3 * * *' },
      merge_watch: { enabled: true, every: '1m' },
      merge_queue: { enabled: true, every: '30s' },
      retries: { enabled: true, every: '1m' },
      reconcile: { enabled: false, every: '15m' },
      hook_check: { enabled: true, every: '1h' },
    });
  });

  it('open mode needs no hook secret, and says so in a warning', () => {
    const result = expectOk(
      loadIn(tempDir(), {
        yaml: `${SERVER}webhook:\n  allow_open: true\n`,
        env: { HOOKBOT_API_TOKEN: 'api-token-1234' },
      }),
    );
    expect(result.config.webhook.secret).toBeUndefined();
    expect(result.warnings).toEqual([
      'webhook.allow_open is true: anyone who can reach the server can send deliveries that trigger rules',
    ]);
  });

  it('a wrong file value that an environment variable overrides is a warning, with its place', () => {
    const result = expectOk(
      loadIn(tempDir(), {
        yaml: `${SERVER}server:\n  port: 99999\n  host: 127.0.0.1\n`,
        env: { ...SECRETS, HOOKBOT_PORT: '3100' },
      }),
    );
    expect(result.config.server.port).toBe(3100);
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0]).toMatch(
      /^config\.yml:4:9: server\.port: .* \(not in force: HOOKBOT_PORT overrides it\)$/,
    );
  });

  it('a secret written in the file works, with a warning that points at it', () => {
    const yaml = `${SERVER}  token: file-token-0001\nwebhook:\n  secret: file-secret-01\n`;
    const result = expectOk(loadIn(tempDir(), { yaml }));
    expect(result.config.api.token).toBe('file-token-0001');
    expect(result.warnings).toEqual([
      'config.yml:3:10: api.token: a secret written in the configuration file: prefer HOOKBOT_API_TOKEN or api.token_file',
      'config.yml:5:11: webhook.secret: a secret written in the configuration file: prefer HOOKBOT_WEBHOOK_SECRET or webhook.secret_file',
    ]);
  });
});

describe('loadConfig: secrets from files', () => {
  const tempDir = useTempDir();

  it('api.token_file: relative to the working folder, trailing newline dropped', () => {
    const result = expectOk(
      loadIn(tempDir(), {
        yaml: `${SERVER}  token_file: token.txt\n`,
        files: { 'token.txt': 'file-token-0001\n' },
        env: { HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' },
      }),
    );
    expect(result.config.api.token).toBe('file-token-0001');
    expect(result.sources['api.token']).toMatchObject({
      from: 'secret_file',
      setBy: { from: 'file', line: 3 },
    });
  });

  it('HOOKBOT_API_TOKEN_FILE and HOOKBOT_WEBHOOK_SECRET_FILE, with CRLF endings', () => {
    const dir = tempDir();
    const result = expectOk(
      loadIn(dir, {
        yaml: SERVER,
        files: { token: 'file-token-0002\r\n', secret: 'file-secret-02\n\n' },
        env: { HOOKBOT_API_TOKEN_FILE: join(dir, 'token'), HOOKBOT_WEBHOOK_SECRET_FILE: 'secret' },
      }),
    );
    expect(result.config.api.token).toBe('file-token-0002');
    expect(result.config.webhook.secret).toBe('file-secret-02');
    expect(result.sources['webhook.secret']).toEqual({
      from: 'secret_file',
      path: join(dir, 'secret'),
      setBy: { from: 'env', name: 'HOOKBOT_WEBHOOK_SECRET_FILE' },
    });
  });

  it("the merge queue's git password: HOOKBOT_GIT_PASSWORD, or HOOKBOT_GIT_PASSWORD_FILE; the other git keys from their variables", () => {
    const dir = tempDir();
    const fromFile = expectOk(
      loadIn(dir, {
        yaml: SERVER,
        files: { 'git-password': 'git-pat-0001\n' },
        env: {
          ...SECRETS,
          HOOKBOT_GIT_PASSWORD_FILE: 'git-password',
          HOOKBOT_GIT_USERNAME: 'hookbot',
          HOOKBOT_GIT_SSH_KEY_FILE: '/run/secrets/hookbot_key',
          HOOKBOT_GIT_SSH_KNOWN_HOSTS_FILE: '/etc/ssh/known',
        },
      }),
    );
    expect(fromFile.config.git).toMatchObject({
      username: 'hookbot',
      password: 'git-pat-0001',
      ssh_key_file: '/run/secrets/hookbot_key',
      ssh_known_hosts_file: '/etc/ssh/known',
      cache_dir: join(dir, 'data/git-cache'),
      timeout_ms: 120_000,
    });
    expect(fromFile.sources['git.password']).toMatchObject({ from: 'secret_file' });
    const fromEnv = expectOk(
      loadIn(dir, { yaml: SERVER, env: { ...SECRETS, HOOKBOT_GIT_PASSWORD: 'git-pw-2' } }),
    );
    expect(fromEnv.config.git.password).toBe('git-pw-2');
  });

  it('the signature secret and the status page password', () => {
    const yaml = [
      'webhook:',
      '  signature:',
      '    secret_file: signing.key',
      'server:',
      '  status_auth:',
      '    username: admin',
      '    password_file: status.pass',
      '',
    ].join('\n');
    const { config } = expectOk(
      loadIn(tempDir(), {
        yaml,
        files: { 'signing.key': 'signing-key-01\n', 'status.pass': 'status-pass-01\n' },
      }),
    );
    expect(config.webhook.signature.secret).toBe('signing-key-01');
    expect(config.server.status_auth).toMatchObject({ username: 'admin', password: 'status-pass-01' });
  });

  it('a missing file named in the config file: the key, the path and the place', () => {
    const dir = tempDir();
    const problems = expectProblems(
      loadIn(dir, {
        yaml: `${SERVER}  token_file: nope.txt\n`,
        env: { HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' },
      }),
    );
    expect(problems).toEqual([
      `config.yml:3:15: api.token_file: cannot read ${join(dir, 'nope.txt')}: no such file`,
    ]);
  });

  it('a missing file named by a variable: the key, the path and the variable', () => {
    const dir = tempDir();
    const problems = expectProblems(
      loadIn(dir, {
        yaml: SERVER,
        env: { HOOKBOT_API_TOKEN: 'api-token-1234', HOOKBOT_WEBHOOK_SECRET_FILE: 'gone' },
      }),
    );
    expect(problems).toEqual([
      `webhook.secret_file: cannot read ${join(dir, 'gone')}: no such file (set by HOOKBOT_WEBHOOK_SECRET_FILE)`,
    ]);
  });

  it('an unreadable path (a folder) and an empty file', () => {
    const dir = tempDir();
    const problems = expectProblems(
      loadIn(dir, {
        yaml: `${SERVER}  token_file: .\nwebhook:\n  secret_file: empty\n`,
        files: { empty: '\n' },
      }),
    );
    expect(problems).toEqual([
      `config.yml:3:15: api.token_file: cannot read ${dir}: it is a folder, not a file`,
      `config.yml:5:16: webhook.secret_file: ${join(dir, 'empty')} is empty`,
    ]);
  });

  it('a secret and its file in the same place is a problem', () => {
    const problems = expectProblems(
      loadIn(tempDir(), {
        yaml: `${SERVER}  token: abc-token-1\n  token_file: token.txt\n`,
        files: { 'token.txt': 'file-token' },
        env: { HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' },
      }),
    );
    expect(problems).toEqual([
      'config.yml:4:15: api.token_file: set either api.token or api.token_file, not both',
    ]);
  });

  it('a token in the environment wins over a token file in the config (which is then not read)', () => {
    const result = expectOk(
      loadIn(tempDir(), { yaml: `${SERVER}  token_file: missing.txt\n`, env: SECRETS }),
    );
    expect(result.config.api.token).toBe(SECRETS.HOOKBOT_API_TOKEN);
    expect(result.config.api.token_file).toBeUndefined();
  });

  it('a token file in the environment wins over a token in the config', () => {
    const result = expectOk(
      loadIn(tempDir(), {
        yaml: `${SERVER}  token: file-token-0001\n`,
        files: { 'env-token': 'env-file-token\n' },
        env: { HOOKBOT_API_TOKEN_FILE: 'env-token', HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' },
      }),
    );
    expect(result.config.api.token).toBe('env-file-token');
  });
});

describe('loadConfig: the default host', () => {
  const tempDir = useTempDir();

  // Against a server (what `hookbot serve` and the image run): every interface in a container.
  it.each([
    { where: 'outside Docker', inDocker: false, host: '127.0.0.1' },
    { where: 'in Docker', inDocker: true, host: '0.0.0.0' },
  ])('$where it is $host', ({ inDocker, host }) => {
    expect(expectOk(loadIn(tempDir(), { yaml: SERVER, env: SECRETS, inDocker })).config.server.host).toBe(
      host,
    );
  });

  it('on the embedded sandbox (no api.url: npm start) it is loopback in a container too', () => {
    const result = expectOk(loadIn(tempDir(), { inDocker: true }));
    expect(result.mode).toBe('sandbox');
    expect(result.config.server.host).toBe('127.0.0.1');
    expect(result.container).toEqual({ inContainer: true, because: 'the caller says so' });
  });

  it('a container detected by its file (HOOKBOT_CONTAINER_FILE standing in for /.dockerenv)', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'dockerenv'), '');
    const env = { HOOKBOT_CONTAINER_FILE: join(dir, 'dockerenv') };
    const options = { inDocker: undefined };
    const sandbox = expectOk(loadIn(dir, { env, options }));
    expect(sandbox.config.server.host).toBe('127.0.0.1');
    expect(sandbox.container).toEqual({ inContainer: true, because: `${join(dir, 'dockerenv')} exists` });
    const server = expectOk(loadIn(dir, { yaml: SERVER, env: { ...env, ...SECRETS }, options }));
    expect(server.config.server.host).toBe('0.0.0.0');
  });

  it('a HOOKBOT_IN_DOCKER that is no boolean is a problem naming the variable', () => {
    const dir = tempDir();
    expect(
      expectProblems(
        loadIn(dir, { env: { HOOKBOT_IN_DOCKER: 'sometimes' }, options: { inDocker: undefined } }),
      ),
    ).toEqual([
      'HOOKBOT_IN_DOCKER is "sometimes": use true or false (also 1 or 0, yes or no, on or off, in any case)',
    ]);
  });

  it('a host in the file wins in Docker too', () => {
    expect(
      expectOk(loadIn(tempDir(), { yaml: 'server:\n  host: 127.0.0.2\n', inDocker: true })).config.server
        .host,
    ).toBe('127.0.0.2');
  });

  it.each([
    { flag: '1', host: '0.0.0.0' },
    { flag: '0', host: '127.0.0.1' },
  ])('detected from HOOKBOT_IN_DOCKER=$flag when not injected', ({ flag, host }) => {
    const dir = tempDir();
    const result = expectOk(
      loadIn(dir, {
        yaml: SERVER,
        env: { ...SECRETS, HOOKBOT_IN_DOCKER: flag },
        options: { inDocker: undefined },
      }),
    );
    expect(result.config.server.host).toBe(host);
  });
});

describe('loadConfig: variables and commands', () => {
  const tempDir = useTempDir();

  it('warns of a HOOKBOT_* variable it does not read, naming the closest one, and keeps the default', () => {
    const result = expectOk(
      loadIn(tempDir(), {
        env: { HOOKBOT_PROT: '8080', HOOKBOT_COLOUR: 'red', HOOKBOT_TOKEN: 'x', HOOKBOT_CONFIG: '' },
      }),
    );
    expect(result.config.server.port).toBe(3000);
    expect(result.warnings).toEqual([
      'HOOKBOT_COLOUR is set but hookbot reads no such variable (the variables are listed in docs/configuration.md); it is ignored',
      'HOOKBOT_PROT is set but hookbot reads no such variable (did you mean HOOKBOT_PORT?); it is ignored',
      'HOOKBOT_TOKEN is set but hookbot reads no such variable (did you mean HOOKBOT_API_TOKEN?); it is ignored',
    ]);
  });

  it('lists a misspelt variable with the problems it explains', () => {
    const env = { HOOKBOT_API_TOKN: 'api-token-1234', HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' };
    expect(expectProblems(loadIn(tempDir(), { yaml: SERVER, env }))).toEqual([
      expect.stringMatching(/^api\.token: required .*set HOOKBOT_API_TOKEN/),
      'HOOKBOT_API_TOKN is set but hookbot reads no such variable (did you mean HOOKBOT_API_TOKEN?); it is ignored',
    ]);
  });

  it('leaves the unknown variables to the command line when asked (it says them once, at its entry)', () => {
    const env = { HOOKBOT_API_TOKN: 'api-token-1234', HOOKBOT_PROT: '8080' };
    expect(expectOk(loadIn(tempDir(), { env, options: { unknownVariables: false } })).warnings).toEqual([]);
    expect(
      expectProblems(
        loadIn(tempDir(), {
          yaml: SERVER,
          env: { ...env, HOOKBOT_WEBHOOK_SECRET: 'hook-secret-5678' },
          options: { unknownVariables: false },
        }),
      ),
    ).toEqual([expect.stringMatching(/^api\.token: required .*set HOOKBOT_API_TOKEN/)]);
  });

  it('says nothing of the variables it reads outside the schema', () => {
    const env = { HOOKBOT_IN_DOCKER: '0', HOOKBOT_BOT_URL: 'http://127.0.0.1:3000', HOOKBOT_DEMO_LOG: '1' };
    expect(expectOk(loadIn(tempDir(), { env })).warnings).toEqual([]);
  });

  it('does not ask a command that calls no API (explain reading the status credentials) for the token', () => {
    const env = { HOOKBOT_STATUS_USERNAME: 'ops', HOOKBOT_STATUS_PASSWORD: 'pw' };
    const result = expectOk(
      loadIn(tempDir(), { yaml: SERVER, env, options: { receivesHooks: false, callsApi: false } }),
    );
    expect(result.config.server.status_auth).toMatchObject({ username: 'ops', password: 'pw' });
    expect(
      expectProblems(loadIn(tempDir(), { yaml: SERVER, env, options: { receivesHooks: false } })),
    ).toEqual([expect.stringMatching(/^api\.token: required/)]);
  });

  it('does not ask a command that receives no deliveries (sweep) for the webhook secret', () => {
    const env = { HOOKBOT_API_TOKEN: 'api-token-1234' };
    expect(expectProblems(loadIn(tempDir(), { yaml: SERVER, env }))).toEqual([
      expect.stringMatching(/^webhook\.secret: required .*HOOKBOT_WEBHOOK_SECRET/),
    ]);
    expect(expectOk(loadIn(tempDir(), { yaml: SERVER, env, options: { receivesHooks: false } })).mode).toBe(
      'server',
    );
  });
});

describe('loadConfig: boolean variables, one reading for all', () => {
  const tempDir = useTempDir();
  const booleanVariables = leafKeys(configKeys()).filter((key) => key.type === 'boolean' && key.env);

  it('covers the boolean keys that have a variable', () => {
    expect(booleanVariables.map((key) => key.env)).toEqual([
      'HOOKBOT_ALLOW_PUBLIC_OPS',
      'HOOKBOT_REPOSITORY_RULES',
    ]);
  });

  const spellings: [string, boolean][] = [
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['yes', true],
    ['On', true],
    [' true ', true],
    ['false', false],
    ['0', false],
    ['no', false],
    ['OFF', false],
  ];
  it.each(booleanVariables.flatMap((key) => spellings.map(([text, value]) => ({ key, text, value }))))(
    '$key.env=$text reads as $value',
    ({ key, text, value }) => {
      const result = expectOk(loadIn(tempDir(), { env: { [key.env!]: text } }));
      expect(getIn(result.config, key.path)).toBe(value);
      expect(result.sources[key.name]).toEqual({ from: 'env', name: key.env });
    },
  );

  it.each(booleanVariables)(
    '$env with anything else is a problem naming the variable and the value',
    (key) => {
      expect(expectProblems(loadIn(tempDir(), { env: { [key.env!]: 'maybe' } }))).toEqual([
        `${key.name}: must be true or false (also 1 or 0, yes or no, on or off, in any case); got "maybe" (set by ${key.env})`,
      ]);
    },
  );

  it('the spelling docs/deployment.md gives, HOOKBOT_ALLOW_PUBLIC_OPS=1, is accepted', () => {
    const result = expectOk(loadIn(tempDir(), { env: { HOOKBOT_ALLOW_PUBLIC_OPS: '1' } }));
    expect(result.config.server.public_ops).toBe(true);
  });

  it('a boolean variable wins over the file, and a wrong file value it overrides is a warning', () => {
    const result = expectOk(
      loadIn(tempDir(), { yaml: 'server:\n  public_ops: sure\n', env: { HOOKBOT_ALLOW_PUBLIC_OPS: 'no' } }),
    );
    expect(result.config.server.public_ops).toBe(false);
    expect(result.warnings).toEqual([
      'config.yml:2:15: server.public_ops: must be true or false (not in force: HOOKBOT_ALLOW_PUBLIC_OPS overrides it)',
    ]);
  });
});

describe('loadConfig: relative paths, resolved once from the working directory', () => {
  const tempDir = useTempDir();
  const pathKeys = leafKeys(configKeys()).filter((key) => key.fsPath === true);

  it('marks every key that holds a file or folder', () => {
    expect(pathKeys.map((key) => key.name)).toEqual([
      'api.token_file',
      'git.password_file',
      'git.ssh_key_file',
      'git.ssh_known_hosts_file',
      'git.cache_dir',
      'server.status_auth.password_file',
      'webhook.secret_file',
      'webhook.signature.secret_file',
      'rules.dir',
      'state.path',
      'sandbox.data',
    ]);
  });

  it('the defaults come out absolute, under the working directory', () => {
    const dir = tempDir();
    const { config } = expectOk(loadIn(dir, {}));
    expect(config.state.path).toBe(join(dir, 'data', 'hookbot.json'));
    expect(config.rules.dir).toBe(join(dir, 'rules'));
    expect(config.git.cache_dir).toBe(join(dir, 'data', 'git-cache'));
    expect(config.sandbox.data).toBe(join(dir, 'data', 'sandbox.json'));
  });

  // Secret files must exist (they are read at load): each holds its secret.
  const secretFiles = {
    'api-token': 'api-token-1234',
    'hook-secret': 'hook-secret-5678',
    'signature-secret': 'signature-9',
    'status-password': 'status-password-0',
    'git-password': 'git-password-1',
  };
  const relativeValues: Record<string, string> = {
    'api.token_file': 'secrets/api-token',
    'git.password_file': 'secrets/git-password',
    'git.ssh_key_file': 'keys/id_ed25519',
    'git.ssh_known_hosts_file': 'keys/known_hosts',
    'git.cache_dir': 'cache/git',
    'server.status_auth.password_file': 'secrets/status-password',
    'webhook.secret_file': 'secrets/hook-secret',
    'webhook.signature.secret_file': 'secrets/signature-secret',
    'rules.dir': 'my-rules',
    'state.path': 'state/bot.json',
    'sandbox.data': 'state/sandbox.json',
  };

  function withSecretFiles(dir: string) {
    mkdirSync(join(dir, 'secrets'));
    for (const [name, content] of Object.entries(secretFiles))
      writeFileSync(join(dir, 'secrets', name), content);
  }

  it("from the configuration file, in a folder of its own: from the working directory, not the file's folder", () => {
    const dir = tempDir();
    withSecretFiles(dir);
    mkdirSync(join(dir, 'etc'));
    const yaml: Record<string, unknown> = { api: { url: 'https://git.example.com' } };
    for (const key of pathKeys) setIn(yaml, key.path, relativeValues[key.name]);
    setIn(yaml, ['server', 'status_auth', 'username'], 'ops');
    writeFileSync(join(dir, 'etc', 'hookbot.yml'), stringify(yaml));
    const result = expectOk(loadConfig({ file: 'etc/hookbot.yml', env: {}, cwd: dir, inDocker: false }));
    for (const key of pathKeys)
      expect(getIn(result.config, key.path), key.name).toBe(join(dir, relativeValues[key.name]!));
    // And the secret files were read from there.
    expect(result.config.api.token).toBe('api-token-1234');
    expect(result.config.webhook.signature.secret).toBe('signature-9');
    expect(result.config.git.password).toBe('git-password-1');
  });

  it('from the environment, the same (the keys without a variable from the file)', () => {
    const dir = tempDir();
    withSecretFiles(dir);
    const env: NodeJS.ProcessEnv = {
      HOOKBOT_API_URL: 'https://git.example.com',
      HOOKBOT_STATUS_USERNAME: 'ops',
    };
    const yaml: Record<string, unknown> = {};
    for (const key of pathKeys)
      if (key.env) env[key.env] = relativeValues[key.name];
      else setIn(yaml, key.path, relativeValues[key.name]);
    const result = expectOk(loadIn(dir, { yaml: stringify(yaml), env }));
    for (const key of pathKeys)
      expect(getIn(result.config, key.path), key.name).toBe(join(dir, relativeValues[key.name]!));
  });

  it('absolute paths stay as they are (normalised)', () => {
    const { config } = expectOk(
      loadIn(tempDir(), {
        env: { HOOKBOT_STATE: '/var/lib/hookbot//state.json', HOOKBOT_RULES: '/etc/hookbot/rules/' },
      }),
    );
    expect(config.state.path).toBe('/var/lib/hookbot/state.json');
    expect(config.rules.dir).toBe('/etc/hookbot/rules');
  });
});
