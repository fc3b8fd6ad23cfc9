/**
 * Group commit: items submitted within a short window are written together (one append, one
 * fsync) and each submitter resolves only after the write holding its item finished. While one
 * write is in flight the next batch gathers, and goes as soon as the disk is free: under load the
 * batch grows with the fsync time instead of the queue.
 *
 * Exclusive tasks run between batches, alone, and take over the items queued so far: a task that
 * makes them durable another way resolves them when it succeeds. `between` tasks also run between
 * batches but leave the queued items to the next write: the file store switches journal segments
 * there, a step of microseconds, so the writes behind it do not wait for the compaction it starts.
 *
 * A failed write is fatal: its items and every later one are rejected, because after a failed
 * fsync the file's contents are unknown (this is what databases do too; the store must be reopened).
 */

export interface GroupCommitOptions<T> {
  /** How long the first item of a batch waits for company. 0: until the current event-loop turn ends. */
  windowMs: number;
  /** Most items per write. */
  maxBatch: number;
  /** Writes the items durably, in order; rejecting fails them and every later item. */
  write: (items: T[]) => Promise<void>;
}

interface Waiter<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface ExclusiveTask<T> {
  run: (taken: T[]) => Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface BetweenTask {
  run: () => Promise<void>;
  reject: (error: unknown) => void;
}

export class GroupCommit<T> {
  readonly #options: GroupCommitOptions<T>;
  #queue: Waiter<T>[] = [];
  readonly #exclusive: ExclusiveTask<T>[] = [];
  readonly #between: BetweenTask[] = [];
  #scheduled = false;
  #running = false;
  #failure: unknown = undefined;
  #failed = false;
  /** The promise of the latest submitted item: everything before it is durable once it resolves. */
  #last: Promise<void> = Promise.resolve();
  #batches = 0;

  constructor(options: GroupCommitOptions<T>) {
    this.#options = options;
  }

  /** Writes done so far (each one append and one fsync). */
  get batches(): number {
    return this.#batches;
  }

  submit(item: T): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failure);
    const done = new Promise<void>((resolve, reject) => this.#queue.push({ item, resolve, reject }));
    this.#last = done;
    this.#schedule(false);
    return done;
  }

  /** Resolves once every item submitted so far is durable; rejects if one of them failed. */
  barrier(): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failure);
    return this.#last;
  }

  /** Runs `run` alone, after the write in flight, handing it the queued items (see above). */
  exclusive(run: (taken: T[]) => Promise<void>): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failure);
    const done = new Promise<void>((resolve, reject) => this.#exclusive.push({ run, resolve, reject }));
    this.#schedule(true);
    return done;
  }

  /**
   * Runs `run` after the write in flight and before the next one, leaving the queued items queued;
   * resolves with its result. A task that throws fails the group commit like a failed write.
   */
  between<R>(run: () => Promise<R>): Promise<R> {
    if (this.#failed) return Promise.reject(this.#failure);
    const done = new Promise<R>((resolve, reject) =>
      this.#between.push({ run: async () => resolve(await run()), reject }),
    );
    this.#schedule(true);
    return done;
  }

  /** Fails the group commit from outside (a failed compaction): queued and later items reject with `error`. */
  fail(error: unknown): void {
    if (!this.#failed) this.#fail(error, []);
  }

  #schedule(now: boolean): void {
    if (this.#running || this.#scheduled) return;
    this.#scheduled = true;
    const start = () => {
      this.#scheduled = false;
      void this.#drain();
    };
    if (now || this.#options.windowMs === 0) setImmediate(start);
    else setTimeout(start, this.#options.windowMs);
  }

  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (!this.#failed) {
        const between = this.#between.shift();
        if (between !== undefined) {
          try {
            await between.run();
          } catch (error) {
            between.reject(error);
            this.#fail(error, []);
            break;
          }
          continue;
        }
        const task = this.#exclusive.shift();
        if (task !== undefined) {
          const taken = this.#queue;
          this.#queue = [];
          try {
            await task.run(taken.map((w) => w.item));
          } catch (error) {
            task.reject(error);
            this.#fail(error, taken);
            break;
          }
          for (const w of taken) w.resolve();
          task.resolve();
          continue;
        }
        if (this.#queue.length === 0) break;
        const batch = this.#queue.splice(0, this.#options.maxBatch);
        try {
          await this.#options.write(batch.map((w) => w.item));
        } catch (error) {
          this.#fail(error, batch);
          break;
        }
        this.#batches++;
        for (const w of batch) w.resolve();
      }
    } finally {
      this.#running = false;
    }
  }

  #fail(error: unknown, inFlight: Waiter<T>[]): void {
    this.#failed = true;
    this.#failure = error;
    for (const w of inFlight) w.reject(error);
    for (const w of this.#queue.splice(0)) w.reject(error);
    for (const task of this.#exclusive.splice(0)) task.reject(error);
    for (const task of this.#between.splice(0)) task.reject(error);
  }
}
