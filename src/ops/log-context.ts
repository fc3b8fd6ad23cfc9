/**
 * The ids of the work under way, carried by the async flow rather than by arguments (issue 7:
 * "structured JSON logs with the delivery or job id on every line"). The pipeline and the
 * scheduler open a context where a unit of work starts; every logger made by createLogger adds
 * the current context's fields to each line (a pino mixin: logger.ts). Code below, the item
 * processor, the executor, the API client's call log, needs no id passed to it.
 *
 * One AsyncLocalStorage for the process, on purpose: the context belongs to the async flow, not to
 * a logger, and any logger (tests create many) must see it. Creating it does nothing: Node turns
 * its async tracking on at the first `run`, so a process that never opens a context pays nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface LogContext {
  /** The delivery being handled: its inbox id (also what the hook route answered with). */
  delivery?: string;
  /**
   * Every delivery an item run serves. Deliveries for one item are coalesced into one run, so a
   * run answers to several; `delivery` is then the first of them, for filters that take one id.
   */
  deliveries?: string[];
  /** The sweep run: `<sweep name>:<start time>-<run number>` (scheduler.ts, sweepJobId). */
  job?: string;
  /** The item a run is about (`issue:<project id>:<id>`), so lines that name no item still say it. */
  item?: string;
}

const storage = new AsyncLocalStorage<Readonly<LogContext>>();

/** Fields of `fields` that hold a value: an absent id never hides the one around it. */
function defined(fields: LogContext): LogContext {
  const result: LogContext = {};
  if (fields.delivery !== undefined) result.delivery = fields.delivery;
  if (fields.deliveries !== undefined) result.deliveries = [...fields.deliveries];
  if (fields.job !== undefined) result.job = fields.job;
  if (fields.item !== undefined) result.item = fields.item;
  return result;
}

/**
 * Runs `fn` with `fields` added to the current context (inner fields win). Everything `fn` starts,
 * awaits, timers and callbacks included, sees the context; what runs outside does not. For an
 * async `fn`, pass the whole body (`() => body()`) so that every await stays inside.
 */
export function runWithLogContext<T>(fields: LogContext, fn: () => T): T {
  return storage.run(Object.freeze({ ...storage.getStore(), ...defined(fields) }), fn);
}

/**
 * Runs `fn` in a context holding only `fields`, whatever context the caller is in. For the start
 * of a unit of work that may be launched from inside another: the pipeline starts the next item
 * run when one finishes, and that run must not carry the finished run's ids.
 */
export function runInNewLogContext<T>(fields: LogContext, fn: () => T): T {
  return storage.run(Object.freeze(defined(fields)), fn);
}

/** The fields in force here, if any. */
export function currentLogContext(): Readonly<LogContext> | undefined {
  return storage.getStore();
}
