/**
 * An inbox entry as the state holds it: the JSON it was journaled as, parsed only when someone reads
 * it. Most deliveries are accepted and marked processed moments later without anyone reading them
 * back (the pipeline gets the parsed body from the receiver), so parsing every body again on accept
 * (24 µs for 4 KB, and as much garbage) was wasted; and a compaction writes the pending entries'
 * JSON as it is instead of serialising each body again.
 *
 * Either form is the JSON form: `entry` is what `JSON.parse(json)` gives, so reads before and after
 * a restart are equal (store.ts: values are stored as JSON). As a `RawJson`, it goes into the
 * document as its JSON, serialised (if it came parsed, from a restart) only when its slice comes.
 */
import { RawJson } from './sliced-json.ts';
import type { InboxEntry } from './store.ts';

export class HeldEntry extends RawJson {
  readonly id: string;
  readonly key: string;
  #entry: InboxEntry | undefined;
  #json: string | undefined;

  private constructor(id: string, key: string, entry: InboxEntry | undefined, json: string | undefined) {
    super();
    this.id = id;
    this.key = key;
    this.#entry = entry;
    this.#json = json;
  }

  /** From an entry's JSON, as encoded by the store (validated before it was encoded). */
  static fromJson(id: string, key: string, json: string): HeldEntry {
    return new HeldEntry(id, key, undefined, json);
  }

  /** From a parsed entry (journal replay, the document). */
  static fromEntry(entry: InboxEntry): HeldEntry {
    return new HeldEntry(entry.id, entry.key, entry, undefined);
  }

  /** The entry, parsed on first read; the same object on every later read. */
  get entry(): InboxEntry {
    this.#entry ??= JSON.parse(this.#json as string) as InboxEntry;
    return this.#entry;
  }

  get json(): string {
    this.#json ??= JSON.stringify(this.#entry);
    return this.#json;
  }
}
