/**
 * The one logger factory: pino, JSON lines by default (for collectors), readable lines on a
 * terminal, and secrets redacted on every line whatever path they take into it (see redact.ts).
 * Child loggers (`log.child({ delivery: id })`, `{ job: id }`) share the parent's secrets.
 * Lines also carry the ids of the work under way (delivery, deliveries, item, job) from the async
 * context (log-context.ts), with no logger passed around for it.
 */
import { pino, type DestinationStream, type LevelWithSilent, type Logger, type LoggerOptions } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { currentLogContext } from './log-context.ts';
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
  'git.password',
  'config.git.password',
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

  // Keys each logger already writes from its bindings: a context field of the same name is left
  // out, or the line would hold the key twice (pino writes bindings and the object side by side).
  const boundKeys = new WeakMap<object, ReadonlySet<string>>();
  const isTty = options.isTty ?? (options.destination === undefined && process.stdout.isTTY === true);
  const pretty = selectFormat(options.format ?? 'auto', isTty) === 'pretty';
  const pinoOptions: LoggerOptions = {
    level: options.level ?? 'info',
    ...(options.base ? { base: options.base } : {}),
    timestamp: pino.stdTimeFunctions.isoTime,
    // The work's ids from the async context. What the call passes, then what a child bound, win
    // over it: an explicit id is the more precise one. Runs before the formatters, so the fields
    // are redacted like any other.
    mixin: (object, _level, logger) => contextFields(object, boundKeys.get(logger)),
    // pino's default merge writes the call's fields into the mixin's object: that would change the
    // shared empty object. Without context the call's object goes on untouched, as with no mixin.
    // The context's fields go last: contextFields kept only those the call left out or undefined.
    mixinMergeStrategy: (object, fields) => (fields === NO_FIELDS ? object : { ...object, ...fields }),
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
  if (options.base) boundKeys.set(logger, new Set(Object.keys(options.base)));
  scrubChildBindings(logger, () => matcher, boundKeys);
  // Children are created from the parent's prototype chain, so they see addSecret and the same set.
  return Object.assign(logger, { addSecret });
}

/**
 * pino serialises a child's bindings once, at `child()`, without the bindings formatter; redact
 * them there, at any depth. Children inherit this `child` through their prototype, so
 * grandchildren are covered too.
 */
function scrubChildBindings(
  logger: Logger,
  matcher: () => RegExp | undefined,
  boundKeys: WeakMap<object, ReadonlySet<string>>,
): void {
  const child = logger.child;
  logger.child = function (this: Logger, bindings, options) {
    const made = child.call(this, redactValue(bindings, matcher()) as typeof bindings, options);
    // Only the context's keys matter here (see contextFields); bindings rarely hold them.
    const keys = new Set(boundKeys.get(this));
    for (const [key, value] of Object.entries(bindings)) if (value !== undefined) keys.add(key);
    boundKeys.set(made, keys);
    return made;
  } as typeof logger.child;
}

/** What the mixin gives when there is nothing to add: shared, never written to (see the merge). */
const NO_FIELDS: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * The context's fields this line does not already carry, from the call or from the logger's
 * bindings. A call field set to undefined counts as absent (pino leaves it out of the line).
 */
function contextFields(object: object, bound: ReadonlySet<string> | undefined): object {
  const context = currentLogContext();
  if (context === undefined) return NO_FIELDS;
  let fields: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(context)) {
    if ((object as Record<string, unknown>)[key] !== undefined || bound?.has(key)) continue;
    (fields ??= {})[key] = value;
  }
  return fields ?? NO_FIELDS;
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

export type { LevelWithSilent };
