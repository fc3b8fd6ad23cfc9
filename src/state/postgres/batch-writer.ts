/**
 * Group commit for PostgreSQL: what is submitted during one event-loop turn goes to the database as
 * one statement (a multi-row insert or delete), one commit for the lot; while a batch is in flight
 * the next one gathers. Unlike the file store's GroupCommit, a failed batch fails its own items
 * only: the database being away is a passing condition (the receiver answers 503 meanwhile), and
 * the next batch tries again on a fresh connection.
 *
 * An item may carry a deadline: past it the caller is told it failed, whatever the database does
 * later. An item still waiting for its batch is dropped (never written); one whose batch is on the
 * wire stays there, and its outcome, when it comes, goes to nobody (the caller already answered).
 */

/** When the caller stops waiting, and what it is told then. */
export interface Deadline {
  ms: number;
  error: () => unknown;
}

interface Waiter<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
  /** Settles once the item is written or failed, or dropped by its deadline before it was sent. */
  written: Promise<void>;
  done: () => void;
  timer?: NodeJS.Timeout;
}

export class BatchWriter<T, R> {
  readonly #write: (items: T[]) => Promise<R[]>;
  readonly #maxBatch: number;
  readonly #maxInFlight: number;
  #queue: Waiter<T, R>[] = [];
  /** Waiting or being written: what `idle` waits for. */
  readonly #unwritten = new Set<Waiter<T, R>>();
  #inFlight = 0;
  #scheduled = false;
  batches = 0;

  /**
   * `write` resolves one result per item, in order. Up to `maxInFlight` batches are written at once
   * (each on its own connection); the items that arrive meanwhile gather into the next.
   */
  constructor(write: (items: T[]) => Promise<R[]>, maxBatch: number, maxInFlight = 1) {
    this.#write = write;
    this.#maxBatch = maxBatch;
    this.#maxInFlight = maxInFlight;
  }

  submit(item: T, deadline?: Deadline): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let done: () => void = () => undefined;
      const written = new Promise<void>((r) => (done = r));
      const waiter: Waiter<T, R> = { item, resolve, reject, written, done };
      if (deadline !== undefined)
        waiter.timer = setTimeout(() => {
          const queued = this.#queue.indexOf(waiter);
          if (queued >= 0) {
            this.#queue.splice(queued, 1);
            this.#settle(waiter);
          }
          reject(deadline.error());
        }, deadline.ms);
      this.#unwritten.add(waiter);
      this.#queue.push(waiter);
      this.#schedule();
    });
  }

  /** Resolves once every item submitted so far is written (or failed, or dropped by its deadline). */
  async idle(): Promise<void> {
    await Promise.all([...this.#unwritten].map((waiter) => waiter.written));
  }

  /** Items waiting for their batch or being written now. */
  get unwritten(): number {
    return this.#unwritten.size;
  }

  #settle(waiter: Waiter<T, R>): void {
    clearTimeout(waiter.timer);
    this.#unwritten.delete(waiter);
    waiter.done();
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#drain();
    });
  }

  /** One writer loop; up to `maxInFlight` of them run at once. */
  async #drain(): Promise<void> {
    if (this.#inFlight >= this.#maxInFlight) return;
    this.#inFlight++;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxBatch);
        try {
          const results = await this.#write(batch.map((waiter) => waiter.item));
          this.batches++;
          batch.forEach((waiter, i) => waiter.resolve(results[i] as R));
        } catch (error) {
          for (const waiter of batch) waiter.reject(error);
        }
        for (const waiter of batch) this.#settle(waiter);
      }
    } finally {
      this.#inFlight--;
    }
  }
}
