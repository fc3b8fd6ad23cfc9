/** The vocabulary the sweeps share: how they log and how they tell a terminal how far they got. */

export interface SweepLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const quietLog: SweepLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** How far a sweep got, for `hookbot sweep --once` on a terminal. */
export interface SweepProgress {
  sweep: string;
  /** What is being walked: `acme/web issues`, `watched merge requests`... */
  scope: string;
  /** Items seen so far in this scope. */
  items: number;
  /** Pages read so far in this scope. */
  pages: number;
}

export type ProgressListener = (progress: SweepProgress) => void;

/** What every sweep accepts besides its own options. */
export interface SweepRunOptions {
  /** Stops the sweep between two items; what is done stays done, the rest waits for the next run. */
  signal?: AbortSignal;
  /**
   * Aborted when something the sweep should act on arrived during this run (a wake: the scheduler
   * runs the sweep once more as soon as this run ends). Work that holds up nothing but the next run
   * (the merge train's tail: train-tail.ts) is then left to that run. Absent: nothing follows.
   */
  news?: AbortSignal;
  onProgress?: ProgressListener;
}

/** A project's listing is read this many items per page (the server's maximum). */
export const PER_PAGE = 100;

/** Pages a listing of `items` items took: an empty listing still costs one. */
export function pagesFor(items: number): number {
  return Math.max(1, Math.ceil(items / PER_PAGE));
}

/** Errors as the reports show them (API errors carry no token: api/errors.ts redacts them). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
