import type { DestinationStream } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  createLogger,
  selectFormat,
  type CreateLoggerOptions,
  type HookbotLogger,
} from '../../src/ops/logger.ts';

const API_TOKEN = 'glpat-SECRET-api-0001';
const HOOK_SECRET = 'hook-SECRET-0002';
const LATE_SECRET = 'late-SECRET-0003';
const STRAY_TOKEN = 'stray-SECRET-0004';
/** Values no one registered: only their key names or their shape give them away. */
const UNREGISTERED = [
  'unregistered-1',
  'hdr-private-1',
  'hdr-bearer-3',
  'hdr-nested-4',
  'binding-secret-5',
  'binding-secret-6',
  'git-password-7',
  'git-password-8',
];

/** A destination that keeps every line written to it. */
function capture(): DestinationStream & { lines: string[]; text: () => string } {
  const lines: string[] = [];
  return { lines, write: (line: string) => void lines.push(line), text: () => lines.join('') };
}

function loggerFor(options: Partial<CreateLoggerOptions> = {}) {
  const out = capture();
  const log = createLogger({
    level: 'trace',
    format: 'json',
    destination: out,
    secrets: [API_TOKEN],
    ...options,
  });
  log.addSecret(HOOK_SECRET);
  return { log, out };
}

describe('createLogger: redaction', () => {
  const calls: { name: string; write: (log: HookbotLogger) => void }[] = [
    {
      name: 'tokens in nested keys',
      write: (log) =>
        log.info({ a: { b: { c: { d: { token: API_TOKEN, secret: 'unregistered-1' } } } } }, 'nested'),
    },
    {
      name: 'request headers',
      write: (log) =>
        log.info(
          {
            headers: {
              'private-token': 'hdr-private-1',
              'x-gitlab-token': HOOK_SECRET,
              authorization: 'Bearer hdr-bearer-3',
            },
            req: { headers: { 'x-gitlab-token': 'hdr-nested-4' } },
          },
          'request',
        ),
    },
    {
      name: 'an Error whose message holds the token',
      write: (log) => log.error({ err: new Error(`GET /user failed for ${API_TOKEN}`) }, 'failed'),
    },
    {
      name: 'an Error logged directly',
      write: (log) => log.error(new Error(`hook secret was ${HOOK_SECRET}`)),
    },
    {
      name: 'a private_token URL in the message and in a field',
      write: (log) =>
        log.warn(
          { url: `http://git.test/api/v3/projects?private_token=${STRAY_TOKEN}` },
          `retrying http://git.test/api/v3/user?private_token=${STRAY_TOKEN}&page=2`,
        ),
    },
    { name: 'a secret interpolated into the message', write: (log) => log.info('token is %s', API_TOKEN) },
    {
      name: 'child loggers with a delivery and a job id',
      write: (log) => {
        log.child({ delivery: 'd-1' }).info({ config: { api: { token: API_TOKEN } } }, 'configured');
        log.child({ job: 'j-1' }).child({ step: 2 }).debug(`using ${HOOK_SECRET}`);
      },
    },
    {
      name: 'secrets in child bindings',
      write: (log) =>
        log
          .child({ token: 'binding-secret-5', note: `with ${API_TOKEN}` })
          .child({ ctx: { auth: { password: 'binding-secret-6' } } })
          .info('bound'),
    },
    {
      name: "the merge queue's git password: the config key, and git's output carrying it in a URL",
      write: (log) => {
        log.info({ config: { git: { password: 'git-password-7' } } }, 'configured');
        log.warn({ err: 'fatal: unable to access https://bot:git-password-8@git.test/acme/web.git/' }, 'git');
      },
    },
    {
      name: 'a secret added after a child was made',
      write: (log) => {
        const child = log.child({ delivery: 'd-2' });
        log.addSecret(LATE_SECRET);
        child.info(`late ${LATE_SECRET}`);
      },
    },
  ];

  const secretValues = [API_TOKEN, HOOK_SECRET, LATE_SECRET, STRAY_TOKEN, ...UNREGISTERED];

  for (const format of ['json', 'pretty'] as const)
    it.each(calls)(`${format}: $name leaves no secret value in the output`, ({ write }) => {
      const { log, out } = loggerFor({ format });
      write(log);
      const text = out.text();
      expect(out.lines.length).toBeGreaterThan(0);
      for (const secret of secretValues) expect(text).not.toContain(secret);
      expect(text).toContain('[REDACTED]');
    });

  it('keeps what is not secret, and the id on every line of a child', () => {
    const { log, out } = loggerFor();
    const child = log.child({ delivery: 'd-9' });
    child.info({ token_type: 'private', kind: 'merge_request', token: API_TOKEN }, 'one');
    child.warn('two');
    const lines = out.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({
      delivery: 'd-9',
      token_type: 'private',
      kind: 'merge_request',
      token: '[REDACTED]',
    });
    expect(lines.map((line) => [line.delivery, line.msg])).toEqual([
      ['d-9', 'one'],
      ['d-9', 'two'],
    ]);
  });

  it('an Error keeps its type and fields, its message scrubbed', () => {
    const { log, out } = loggerFor();
    log.error({ err: Object.assign(new Error(`denied ${API_TOKEN}`), { status: 401 }) }, 'api');
    const line = JSON.parse(out.lines[0] ?? '') as { err: Record<string, unknown> };
    expect(line.err).toMatchObject({ type: 'Error', message: 'denied [REDACTED]', status: 401 });
  });

  it('does not modify the objects it is given', () => {
    const { log } = loggerFor();
    const headers = { 'x-gitlab-token': HOOK_SECRET };
    log.info({ headers }, 'delivery');
    expect(headers['x-gitlab-token']).toBe(HOOK_SECRET);
  });
});

describe('createLogger: format and level', () => {
  it.each([
    { format: 'json', isTty: true, expected: 'json' },
    { format: 'pretty', isTty: false, expected: 'pretty' },
    { format: 'auto', isTty: true, expected: 'pretty' },
    { format: 'auto', isTty: false, expected: 'json' },
  ] as const)('selectFormat($format, tty: $isTty) is $expected', ({ format, isTty, expected }) => {
    expect(selectFormat(format, isTty)).toBe(expected);
  });

  const parsesAsJson = (text: string): boolean => {
    try {
      JSON.parse(text);
      return true;
    } catch {
      return false;
    }
  };

  it.each([
    { format: 'json', isTty: false, json: true },
    { format: 'auto', isTty: false, json: true },
    { format: 'auto', isTty: true, json: false },
    { format: 'pretty', isTty: false, json: false },
  ] as const)('$format with tty $isTty writes JSON: $json', ({ format, isTty, json }) => {
    const out = capture();
    createLogger({ format, isTty, destination: out }).info({ delivery: 'd-1' }, 'hello');
    const text = out.text();
    expect(parsesAsJson(text)).toBe(json);
    expect(text).toContain('hello');
    expect(text).toContain('d-1');
    if (!json) expect(text).toContain('INFO');
  });

  it('with a destination and no tty said, auto writes JSON', () => {
    const out = capture();
    createLogger({ format: 'auto', destination: out }).info('plain');
    expect(JSON.parse(out.text())).toMatchObject({ level: 30, msg: 'plain' });
  });

  it('drops lines below the level', () => {
    const out = capture();
    const log = createLogger({ level: 'warn', format: 'json', destination: out });
    log.info('quiet');
    log.warn('loud');
    expect(out.lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['loud']);
  });
});
