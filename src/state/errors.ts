/**
 * The one error type of the state store. File problems name the file, so that an operator who sees
 * "refusing to start" knows exactly which file to restore or move away.
 */

export type StateErrorCode =
  /** The document or a journal line is not what hookbot writes (bad JSON, bad checksum, bad shape). */
  | 'corrupt'
  /** Written by a newer hookbot (schema version above the one this build knows). */
  | 'newer_version'
  /** The journal does not continue the document (records missing in between). */
  | 'mismatch'
  /** A write or fsync failed; the store refuses further writes until it is reopened. */
  | 'io'
  /** Another process has the state open (its lock file names it). */
  | 'locked'
  /** The store is not open (never opened, or closed). */
  | 'closed'
  /** The inbox is at its bound (`maxPending` deliveries or `maxPendingBytes`): back-pressure for the receiver. */
  | 'inbox_full'
  /** An outbox operation named an action the outbox does not hold. */
  | 'unknown_action'
  /**
   * The database did not answer or dropped the connection (PostgreSQL store): a passing condition;
   * the write did not happen and may be tried again.
   */
  | 'unavailable';

export class StateError extends Error {
  override readonly name = 'StateError';
  readonly code: StateErrorCode;
  /** The file concerned, when there is one (never for the in-memory store). */
  readonly path: string | undefined;

  constructor(code: StateErrorCode, message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = options.path;
  }
}

/** Refusal to start over a file we must not touch: says which file, why, and what the operator can do. */
export function refuseFile(code: StateErrorCode, path: string, why: string, hint: string): StateError {
  return new StateError(
    code,
    `state file ${path}: ${why}; refusing to start and leaving it untouched. ${hint}`,
    {
      path,
    },
  );
}

/** Refusal of a file a newer hookbot wrote: running the older one on it could lose what it does not know. */
export function refuseNewer(path: string, found: number, known: number, hint: string): StateError {
  return refuseFile(
    'newer_version',
    path,
    `was written by a newer hookbot (schema version ${found}; this one knows up to ${known})`,
    `Run the newer hookbot, or ${hint}.`,
  );
}
