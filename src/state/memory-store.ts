/**
 * The in-memory backend: the same operations over the same model, without files. For unit tests of
 * the parts that use the store (and the contract tests run against it too). Values still travel as
 * JSON, so it answers exactly like the file store; close() then open() keeps the state, like a
 * restart of a process whose files survived.
 */
import { HeldStateStore } from './held-state-store.ts';
import { resolveStateOptions, type StateOptions } from './options.ts';
import type { StateStats, StateStore } from './store.ts';

export function createMemoryStore(options: StateOptions = {}): StateStore {
  return new MemoryStore(options);
}

class MemoryStore extends HeldStateStore {
  protected readonly label = 'in-memory state store';
  #commits = 0;

  constructor(options: StateOptions) {
    super(resolveStateOptions(options));
  }

  async open(): Promise<void> {
    this.isOpen = true;
  }

  async compact(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    this.isOpen = false;
  }

  stats(): StateStats {
    return {
      ...this.counts(),
      documentBytes: 0,
      journalBytes: 0,
      journalRecords: 0,
      commits: this.#commits,
      fsyncs: 0,
      compactions: 0,
    };
  }

  protected async persist(): Promise<void> {
    this.#commits++;
  }

  protected settled(): Promise<void> {
    return Promise.resolve();
  }
}
