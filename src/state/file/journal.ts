/**
 * The append-only journal: JSON lines, one mutation each, after a header line naming the schema
 * version. Appends are batched by the group commit into one write and one fdatasync. The journal is
 * cut in segments (see segments.ts): a compaction switches appends to a new segment and deletes the
 * old one once the document holds its records.
 *
 * Line format: `{"c":"<crc32 of the rest>","s":<seq>,"m":<mutation>}`. The checksum tells a line
 * damaged on disk from one cut short by a crash, which JSON parsing alone cannot:
 * - an unterminated last line, or a damaged last line with nothing after it, is a torn tail (the
 *   write that held it never completed, so no caller was told it was durable): it is cut off;
 * - a damaged line with anything after it, a line with a valid checksum but an unknown shape, or
 *   records out of sequence, make the journal refused, naming the file and the line.
 */
import { readSync, writevSync } from 'node:fs';
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { StateError, refuseFile, refuseNewer } from '../errors.ts';
import { replaceFile, STATE_FILE_MODE } from './durable-fs.ts';
import { HeldEntry, type JsonPiece, type JsonSource } from '../held-entry.ts';
import { mutationSchema, type Mutation } from '../mutations.ts';

export interface JournalRecord {
  seq: number;
  mutation: Mutation;
  /**
   * For an accept: its entry, held as text. The mutation's own entry then carries no body: a
   * journal full of large deliveries is never all parsed at once (held-entry.ts).
   */
  held?: HeldEntry;
}

export interface JournalContents {
  /** Schema version in the header; undefined for an empty (or torn-header) journal. */
  version: number | undefined;
  records: JournalRecord[];
  /** Bytes up to the end of the last good line; anything beyond is a torn tail. */
  validBytes: number;
  totalBytes: number;
}

const HEADER_KIND = 'hookbot-journal';
const NEWLINE = 0x0a;
/** `{"c":"` + 8 hex digits + `",`: the checksum covers everything after it. */
const PREFIX = '{"c":"';
const CHECKED_FROM = PREFIX.length + 8 + 2;

export function headerLine(version: number): string {
  return `${JSON.stringify({ journal: HEADER_KIND, version })}\n`;
}

/** One journal line for the mutation `json` (already encoded) as record `seq`. */
export function encodeRecord(seq: number, json: string): string {
  return Buffer.concat(lineParts(encodeLine(seq, json))).toString('utf8');
}

/**
 * The same line as bytes, ready to append, checksummed over those bytes. The mutation's JSON may
 * come in pieces, written one after the other and never joined into one string first. A piece that
 * is already bytes (the body of a delivery, as it was received) is not copied at all: the line is
 * then a list of buffers, the body's among them, written with one writev.
 */
export function encodeLine(seq: number, json: string | readonly JsonPiece[]): Buffer | Buffer[] {
  const head = lineHead(seq);
  if (typeof json === 'string' || json.every((piece) => typeof piece === 'string'))
    return encodeTextLine(head, typeof json === 'string' ? [json] : (json as readonly string[]));
  // Consecutive text pieces become one buffer; byte pieces go in as they are.
  const parts: Buffer[] = [];
  let text = head;
  for (const piece of json) {
    if (typeof piece === 'string') {
      text += piece;
      continue;
    }
    parts.push(Buffer.from(text, 'utf8'), piece);
    text = '';
  }
  parts.push(Buffer.from(`${text}}\n`, 'utf8'));
  // The checksum covers everything after the prefix and before the newline.
  const first = parts[0] as Buffer;
  const last = parts.length - 1;
  let crc = crc32(first.subarray(CHECKED_FROM));
  for (let i = 1; i < last; i++) crc = crc32(parts[i] as Buffer, crc);
  const tail = parts[last] as Buffer;
  crc = crc32(tail.subarray(0, tail.length - 1), crc);
  first.write(hex(crc), PREFIX.length, 'latin1');
  return parts;
}

function lineHead(seq: number): string {
  return `${PREFIX}00000000","s":${seq},"m":`;
}

/** Where record `seq`'s mutation starts in its line, in bytes (the head is ASCII). */
export function mutationOffset(seq: number): number {
  return lineHead(seq).length;
}

function encodeTextLine(head: string, pieces: readonly string[]): Buffer {
  const sizes = pieces.map((piece) => Buffer.byteLength(piece));
  const line = Buffer.allocUnsafe(head.length + sizes.reduce((sum, size) => sum + size, 0) + 2);
  let at = line.write(head, 0, 'latin1');
  for (let i = 0; i < pieces.length; i++)
    at += line.write(pieces[i] as string, at, sizes[i] as number, 'utf8');
  line[at] = 0x7d; // }
  line[at + 1] = NEWLINE;
  line.write(checksum(line.subarray(CHECKED_FROM, line.length - 1)), PREFIX.length, 'latin1');
  return line;
}

/** A line's buffers, in order. */
function lineParts(data: Buffer | readonly Buffer[]): readonly Buffer[] {
  return Buffer.isBuffer(data) ? [data] : data;
}

/** Reads and checks the whole journal; throws a StateError naming the file when it must be refused. */
export async function readJournal(path: string, knownVersion: number): Promise<JournalContents> {
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { version: undefined, records: [], validBytes: 0, totalBytes: 0 };
    throw error;
  }
  const refuse = (line: number, why: string) =>
    refuseFile(
      'corrupt',
      path,
      `line ${line} ${why}`,
      'A damaged journal is never repaired silently: move it away to start from the document alone (losing its changes), or restore both files from a backup.',
    );

  let version: number | undefined;
  const records: JournalRecord[] = [];
  let validBytes = 0;
  let start = 0;
  for (let line = 1; start < data.length; line++) {
    const end = data.indexOf(NEWLINE, start);
    // No newline: the last write stopped short. Nothing after it can exist, so it is the torn tail.
    if (end === -1) break;
    const text = data.toString('utf8', start, end);
    const isLast = end === data.length - 1;
    if (line === 1) {
      const header = parseHeader(text);
      if (header === undefined) {
        if (isLast) break;
        throw refuse(line, 'is not a hookbot journal header');
      }
      if (header > knownVersion)
        throw refuseNewer(path, header, knownVersion, 'move the journal away (losing its changes)');
      version = header;
    } else {
      const decoded = decodeRecord(text);
      if (decoded === 'damaged') {
        if (isLast) break;
        throw refuse(line, 'is damaged (bad checksum or not JSON) and is not the last line');
      }
      if (typeof decoded === 'string') throw refuse(line, decoded);
      const previous = records.at(-1);
      if (previous !== undefined && decoded.seq !== previous.seq + 1)
        throw refuse(line, `holds record ${decoded.seq} after record ${previous.seq}`);
      records.push(decoded);
    }
    validBytes = end + 1;
    start = end + 1;
  }
  return { version, records, validBytes, totalBytes: data.length };
}

/** 'damaged' for a line a crash or the disk mangled, a reason for a well-formed but unacceptable one. */
function decodeRecord(text: string): JournalRecord | 'damaged' | string {
  if (!text.startsWith(PREFIX) || text.slice(PREFIX.length + 8, CHECKED_FROM) !== '",') return 'damaged';
  if (text.slice(PREFIX.length, PREFIX.length + 8) !== checksum(text.slice(CHECKED_FROM))) return 'damaged';
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return 'damaged';
  }
  const { s, m } = raw as { s?: unknown; m?: unknown };
  if (typeof s !== 'number' || !Number.isSafeInteger(s) || s < 1) return 'has no valid record number';
  const mutation = mutationSchema.safeParse(m);
  if (!mutation.success) {
    const op = (m as { op?: unknown } | null)?.op;
    return `holds a record this hookbot does not understand (op ${JSON.stringify(op)}; written by a newer version?)`;
  }
  const data = mutation.data;
  if (data.op !== 'accept') return { seq: s, mutation: data };
  // Read one line at a time, the parsed body is garbage by the next line.
  return {
    seq: s,
    mutation: { ...data, entry: { ...data.entry, body: null } },
    held: HeldEntry.fromEntry(data.entry),
  };
}

function parseHeader(text: string): number | undefined {
  try {
    const header = JSON.parse(text) as { journal?: unknown; version?: unknown };
    return header.journal === HEADER_KIND &&
      typeof header.version === 'number' &&
      Number.isSafeInteger(header.version)
      ? header.version
      : undefined;
  } catch {
    return undefined;
  }
}

function checksum(text: string | Uint8Array): string {
  return hex(crc32(text));
}

function hex(crc: number): string {
  return crc.toString(16).padStart(8, '0');
}

/** A line on its way to the journal: the record's number and its encoded line (`encodeLine`). */
export interface JournalLine {
  seq: number;
  data: Buffer | Buffer[];
  /**
   * An accept's held entry, whose JSON starts `at` bytes into the line: once the line is durable,
   * the entry is read back from the segment instead of held in memory (HeldEntry.locate).
   */
  held?: { entry: HeldEntry; at: number };
}

/** Buffers per writev: Linux's IOV_MAX. */
const MAX_IOVECS = 1024;

/** fsync calls, counted across the writers of one store (segments come and go). */
export interface FsyncCounter {
  fsyncs: number;
  /** Told the duration of each append (write and fdatasync). */
  onCommit?: (sample: { ms: number; records: number; bytes: number }) => void;
}

/**
 * A journal segment open for appending. Single writer: only the group commit calls `append`. The
 * file may be renamed while open (a segment is sealed under a new name while appends continue):
 * `path` follows it, for messages. It is also where the held entries of its accepts are read back
 * from while it is open (`readAt`); the store takes them back into memory before closing it.
 */
export class JournalWriter implements JsonSource {
  #path: string;
  readonly #file: FileHandle;
  readonly #counter: FsyncCounter;
  #bytes: number;
  #records: number;
  #firstSeq: number | undefined;
  #lastSeq: number | undefined;
  #closed = false;

  private constructor(
    path: string,
    file: FileHandle,
    counter: FsyncCounter,
    bytes: number,
    records: JournalRecord[],
  ) {
    this.#path = path;
    this.#file = file;
    this.#counter = counter;
    this.#bytes = bytes;
    this.#records = records.length;
    this.#firstSeq = records[0]?.seq;
    this.#lastSeq = records.at(-1)?.seq;
  }

  /**
   * Opens the journal read by `readJournal`, cutting a torn tail off first, or starts a new one.
   * Call only once every check passed: this is the first change made to the files.
   */
  static async open(
    path: string,
    version: number,
    contents: JournalContents,
    counter: FsyncCounter,
  ): Promise<JournalWriter> {
    if (contents.version === undefined) {
      // Empty, absent, or only a torn header: start afresh (atomically, so a crash now is harmless).
      const header = headerLine(version);
      counter.fsyncs += await replaceFile(path, header);
      return new JournalWriter(
        path,
        await open(path, 'a+', STATE_FILE_MODE),
        counter,
        Buffer.byteLength(header),
        [],
      );
    }
    const file = await open(path, 'a+', STATE_FILE_MODE);
    const writer = new JournalWriter(path, file, counter, contents.validBytes, contents.records);
    if (contents.totalBytes > contents.validBytes) {
      await file.truncate(contents.validBytes);
      await file.sync();
      counter.fsyncs++;
    }
    return writer;
  }

  /**
   * Creates an empty segment (a header) at `path`, replacing any file there. Neither its content nor
   * its name is synced here: the first append's fdatasync makes the header durable with the records,
   * and the caller syncs the folder before any record goes in. Until then a crash leaves at most a
   * segment without records, which opening drops.
   */
  static async create(path: string, version: number, counter: FsyncCounter): Promise<JournalWriter> {
    const header = headerLine(version);
    const file = await open(path, 'w+', STATE_FILE_MODE);
    try {
      await file.writeFile(header);
    } catch (error) {
      await file.close();
      throw error;
    }
    return new JournalWriter(path, file, counter, Buffer.byteLength(header), []);
  }

  get path(): string {
    return this.#path;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get records(): number {
    return this.#records;
  }

  /** The first record in the segment, if any. */
  get firstSeq(): number | undefined {
    return this.#firstSeq;
  }

  /** The last record in the segment, if any. */
  get lastSeq(): number | undefined {
    return this.#lastSeq;
  }

  /** The file was renamed (by the caller, atomically): later messages name the new path. */
  renamed(path: string): void {
    this.#path = path;
  }

  /**
   * Appends the lines in one writev and makes them durable before resolving. The write is
   * synchronous: it only copies into the page cache (0.12 ms for a batch of 64 deliveries of 4 KB),
   * while the asynchronous one took 2 ms at the median under load, waiting for a thread of the pool
   * and then for the event loop, on the path of every acknowledgement. The fdatasync, which waits
   * for the disk, stays asynchronous.
   */
  async append(lines: readonly JournalLine[]): Promise<void> {
    const buffers: Buffer[] = [];
    let bytes = 0;
    const located: { entry: HeldEntry; offset: number }[] = [];
    for (const line of lines) {
      if (line.held) located.push({ entry: line.held.entry, offset: this.#bytes + bytes + line.held.at });
      for (const part of lineParts(line.data)) {
        buffers.push(part);
        bytes += part.length;
      }
    }
    const started = performance.now();
    try {
      writeAll(this.#file.fd, buffers);
      // fdatasync: the data and the new size, without the timestamps a full fsync would also flush.
      await this.#file.datasync();
    } catch (cause) {
      throw new StateError(
        'io',
        `state journal ${this.#path}: append failed (${cause instanceof Error ? cause.message : String(cause)}); no further writes are accepted until the store is reopened`,
        { path: this.#path, cause },
      );
    }
    this.#counter.fsyncs++;
    for (const { entry, offset } of located) entry.locate(this, offset);
    this.#counter.onCommit?.({ ms: performance.now() - started, records: lines.length, bytes });
    this.#bytes += bytes;
    this.#records += lines.length;
    this.#firstSeq ??= lines[0]?.seq;
    this.#lastSeq = lines.at(-1)?.seq ?? this.#lastSeq;
  }

  /** `length` bytes at `offset` of the segment (a held entry read back: HeldEntry.locate). */
  readAt(offset: number, length: number): Buffer {
    if (this.#closed)
      throw new StateError('closed', `state journal ${this.#path} is closed: the store is not open`);
    const buffer = Buffer.allocUnsafeSlow(length);
    try {
      for (let at = 0; at < length;) {
        const read = readSync(this.#file.fd, buffer, at, length - at, offset + at);
        if (read === 0) throw new Error(`ends before byte ${offset + length}`);
        at += read;
      }
    } catch (cause) {
      throw new StateError(
        'io',
        `state journal ${this.#path}: could not read a held delivery back (${cause instanceof Error ? cause.message : String(cause)})`,
        { path: this.#path, cause },
      );
    }
    return buffer;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#file.close();
  }
}

/**
 * Writes every buffer, in order, with as few writev calls as the kernel allows: no copy of the batch
 * into one buffer first (each delivery's body is written straight from the bytes it arrived in). A
 * short write (the kernel may stop early) goes on from where it stopped.
 */
function writeAll(fd: number, buffers: Buffer[]): void {
  let from = 0;
  while (from < buffers.length) {
    const chunk = buffers.slice(from, from + MAX_IOVECS);
    let written = writevSync(fd, chunk);
    if (written === 0) throw new Error('the write made no progress');
    // Past the buffers written whole; a buffer written in part is replaced by its rest.
    while (from < buffers.length && written >= (buffers[from] as Buffer).length) {
      written -= (buffers[from] as Buffer).length;
      from += 1;
    }
    if (written > 0) buffers[from] = (buffers[from] as Buffer).subarray(written);
  }
}
