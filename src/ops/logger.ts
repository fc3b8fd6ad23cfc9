/**
 * The one logger factory: pino, JSON lines by default (for collectors), readable lines on a
 * terminal, and secrets redacted on every line whatever path they take into it (see redact.ts).
 * Child loggers (`log.child({ delivery: id })`, `{ job: id }`) share the parent's secrets.
 */
import {
  pino,
  type DestinationStream,
  type Level,
  type LevelWithSilent,
  type Logger,
  type LoggerOptions,
} from 'pino';
import { prettyFactory } from 'pino-pretty';
import { redactText, redactValue, REDACTED, secretMatcher } from './redact.ts';

export type LogFormat = 'auto' | 'json' | 'pretty';

export interface CreateLoggerOptions {
  level?: LevelWithSilent;
  format?: LogFormat;
  /** Where lines go. Default: standard output. Tests pass a stream that collects them. */
  destination?: DestinationStream;
  /** Is the output a terminal (for `auto`)? Default: whether stdout is one, when writing to stdout. */
  isTty?: boolean;
  /** Secret values known at creation (more can be added with addSecret). */
  secrets?: Iterable<string | undefined>;
  /** Fields on every line. Default: pid and hostname, as pino does. */
  base?: Record<string, unknown>;
}

export type HookbotLogger = Logger & {
  /** From now on, `value` is replaced by [REDACTED] wherever it appears, in this logger and its children. */
  addSecret(value: string | undefined): void;
};

/**
 * Key paths redacted by pino itself, before anything else sees the object. redact.ts also blanks
 * secret-named keys at any depth; these stay as the first net and as documentation of the shapes
 * we log (request headers, the configuration).
 */
export const REDACT_PATHS: readonly string[] = [
  'token',
  'private_token',
  'privateToken',
  'access_token',
  'secret',
  'password',
  'authorization',
  'headers["private-token"]',
  'headers["x-gitlab-token"]',
  'headers.authorization',
  'headers.cookie',
  '*.token',
  '*.private_token',
  '*.privateToken',
  '*.access_token',
  '*.secret',
  '*.password',
  '*.headers["private-token"]',
  '*.headers["x-gitlab-token"]',
  '*.headers.authorization',
  'api.token',
  'webhook.secret',
  'webhook.signature.secret',
  'server.status_auth.password',
  'config.api.token',
  'config.webhook.secret',
];

/** `auto` means readable on a terminal and JSON when piped or collected. */
export function selectFormat(format: LogFormat, isTty: boolean): 'json' | 'pretty' {
  if (format === 'auto') return isTty ? 'pretty' : 'json';
  return format;
}

export function createLogger(options: CreateLoggerOptions = {}): HookbotLogger {
  const secrets = new Set<string>();
  let matcher: RegExp | undefined;
  const addSecret = (value: string | undefined): void => {
    if (!value || secrets.has(value)) return;
    secrets.add(value);
    matcher = secretMatcher(secrets);
  };
  for (const secret of options.secrets ?? []) addSecret(secret);

  const isTty = options.isTty ?? (options.destination === undefined && process.stdout.isTTY === true);
  const pretty = selectFormat(options.format ?? 'auto', isTty) === 'pretty';
  const pinoOptions: LoggerOptions = {
    level: options.level ?? 'info',
    ...(options.base ? { base: options.base } : {}),
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: [...REDACT_PATHS], censor: REDACTED },
    serializers: { err: (error: unknown) => redactValue(error, matcher) },
    formatters: {
      // Runs on every logged object before it is serialised; `bindings` only on the base fields
      // (pino skips it for children: see scrubChildBindings).
      log: (object) => redactValue(object, matcher) as Record<string, unknown>,
      bindings: (bindings) => redactValue(bindings, matcher) as Record<string, unknown>,
    },
    // The last net: the finished line, message and bindings included, just before it is written.
    hooks: { streamWrite: (line: string) => redactText(line, matcher) },
  };
  const destination = pretty ? prettyDestination(options.destination, isTty) : options.destination;
  const logger = destination ? pino(pinoOptions, destination) : pino(pinoOptions);
  scrubChildBindings(logger, () => matcher);
  // Children are created from the parent's prototype chain, so they see addSecret and the same set.
  return Object.assign(logger, { addSecret });
}

/**
 * pino serialises a child's bindings once, at `child()`, without the bindings formatter; redact
 * them there, at any depth. Children inherit this `child` through their prototype, so
 * grandchildren are covered too.
 */
function scrubChildBindings(logger: Logger, matcher: () => RegExp | undefined): void {
  const child = logger.child;
  logger.child = function (this: Logger, bindings, options) {
    return child.call(this, redactValue(bindings, matcher()) as typeof bindings, options);
  } as typeof logger.child;
}

/**
 * pino-pretty's formatter, in process and synchronous: lines are redacted (streamWrite) before
 * they get here, and a test reads them right after logging.
 */
function prettyDestination(destination: DestinationStream | undefined, colorize: boolean): DestinationStream {
  const format = prettyFactory({
    colorize,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
  const out = destination ?? process.stdout;
  return { write: (line: string) => void out.write(format(line)) };
}

export type { Level, LevelWithSilent };
