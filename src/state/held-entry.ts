/**
 * An inbox entry as the state holds it: the JSON text it was journaled as, and nothing parsed. A
 * backlog then costs its text and no more: a 1 MB push body parsed is several times its text, and
 * holding every pending body parsed is what made a 256 MB heap run out on a backlog of 1 MB
 * deliveries, at every restart again (issue 15). The body is parsed when someone reads it (the
 * pipeline, when it takes the delivery), each time, and is garbage once that reader is done.
 *
 * Most deliveries are accepted and marked processed moments later without anyone reading them back
 * (the pipeline gets the parsed body from the receiver), so nothing is parsed on accept either; and a
 * compaction writes the pending entries' JSON as it is instead of serialising each body again.
 *
 * `entry` is what `JSON.parse(json)` gives, so reads before and after a restart are equal (store.ts:
 * values are stored as JSON). As a `RawJson`, it goes into the document as its JSON.
 */
import { RawJson } from './file/sliced-json.ts';
import type { InboxEntry } from './store.ts';

/** What is kept beside the text, for bounds, de-duplication, the pipeline and the status page. */
export type HeldFields = Pick<InboxEntry, 'id' | 'key' | 'kind' | 'receivedAt'>;

/** A piece of an entry's JSON: text, or the UTF-8 bytes of text. */
export type JsonPiece = string | Buffer;

/**
 * Where an entry's JSON can be read back once it is durable: a range of a file the store keeps open
 * (a journal segment). Synchronous, because the readers (`json`, `entry`) are.
 */
export interface JsonSource {
  /** The `length` bytes at `offset`. Throws a StateError when they cannot be read. */
  readAt(offset: number, length: number): Buffer;
}

export class HeldEntry extends RawJson {
  readonly id: string;
  readonly key: string;
  readonly kind: string;
  readonly receivedAt: number;
  /**
   * The JSON, whole or in pieces to be read one after the other (see `fromPieces`), while it is held
   * in memory; undefined once it is durable in `#source` (see `locate`).
   */
  #pieces: string | readonly JsonPiece[] | undefined;
  #source: JsonSource | undefined;
  #offset = 0;
  /** Its size as stored (UTF-8): what the inbox's byte bound counts. */
  readonly bytes: number;

  private constructor(fields: HeldFields, pieces: string | readonly JsonPiece[], bytes?: number) {
    super();
    this.id = fields.id;
    this.key = fields.key;
    this.kind = fields.kind;
    this.receivedAt = fields.receivedAt;
    this.#pieces = pieces;
    this.bytes =
      bytes ??
      (typeof pieces === 'string'
        ? Buffer.byteLength(pieces)
        : pieces.reduce((sum, piece) => sum + Buffer.byteLength(piece), 0));
  }

  /**
   * From an entry's JSON, as encoded by the store (validated before it was encoded). `bytes`: its
   * UTF-8 size, when the caller knows it (counting it would flatten a joined string at once).
   */
  static fromJson(fields: HeldFields, json: string, bytes?: number): HeldEntry {
    return new HeldEntry(fields, json, bytes);
  }

  /**
   * From its JSON in pieces, the received body among them as the bytes it arrived in: on the hook
   * route those bytes go to the journal as they are (no string is built, joined or encoded again per
   * delivery) and are held off the JavaScript heap until the delivery is processed.
   */
  static fromPieces(fields: HeldFields, pieces: readonly JsonPiece[], bytes: number): HeldEntry {
    return new HeldEntry(fields, pieces, bytes);
  }

  /** From a parsed entry (journal replay, the document): kept as text, the parsed form let go. */
  static fromEntry(entry: InboxEntry): HeldEntry {
    return new HeldEntry(entry, JSON.stringify(entry));
  }

  /** The JSON text (built from the pieces, or read back, on each call: a compaction or a database insert). */
  get json(): string {
    const pieces = this.#pieces;
    if (pieces === undefined) return this.#read().toString('utf8');
    if (typeof pieces === 'string') return pieces;
    let json = '';
    for (const piece of pieces) json += typeof piece === 'string' ? piece : piece.toString('utf8');
    return json;
  }

  /**
   * The JSON is durable at `offset` of `source`: memory lets go of it, and reads go to the file from
   * now on. Holding every accepted body until its delivery is processed made each one outlive two
   * minor collections, so the bodies went to the old generation by the thousand a second: a full
   * collection every half second and, at 64 connections, an ack p99 twice the target (issue 15,
   * docs/benchmarks.md). Read back, an entry costs a read of the page cache.
   */
  locate(source: JsonSource, offset: number): void {
    this.#source = source;
    this.#offset = offset;
    this.#pieces = undefined;
  }

  /** Whether the JSON is read back from `source` (and so needs it open). */
  isIn(source: JsonSource): boolean {
    return this.#pieces === undefined && this.#source === source;
  }

  /** Whether the JSON is held in memory (not read back from a file). */
  get resident(): boolean {
    return this.#pieces !== undefined;
  }

  /** Takes the JSON back into memory, before the file it is read from closes. */
  materialize(): void {
    if (this.#pieces !== undefined) return;
    this.#pieces = [this.#read()];
    this.#source = undefined;
  }

  #read(): Buffer {
    return (this.#source as JsonSource).readAt(this.#offset, this.bytes);
  }

  /** The entry, parsed anew on each read (nothing parsed is kept). */
  get entry(): InboxEntry {
    return JSON.parse(this.json) as InboxEntry;
  }
}
