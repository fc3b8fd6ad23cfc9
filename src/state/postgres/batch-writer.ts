/**
 * Group commit for PostgreSQL: what is submitted during one event-loop turn goes to the database as
 * one statement (a multi-row insert or delete), one commit for the lot; while a batch is in flight
 * the next one gathers. Unlike the file store's GroupCommit, a failed batch fails its own items
 * only: the database being away is a passing condition (the receiver answers 503 meanwhile), and
 * the next batch tries again on a fresh connection.
 */

interface Waiter<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export class BatchWriter<T, R> {
  readonly #write: (items: T[]) => Promise<R[]>;
  readonly #maxBatch: number;
  readonly #maxInFlight: number;
  #queue: Waiter<T, R>[] = [];
  #inFlight = 0;
  #scheduled = false;
  #last: Promise<void> = Promise.resolve();
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

  submit(item: T): Promise<R> {
    const result = new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#schedule();
    });
    this.#last = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Resolves once every item submitted so far is written (or failed). */
  idle(): Promise<void> {
    return this.#last;
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
      }
    } finally {
      this.#inFlight--;
    }
  }
}
