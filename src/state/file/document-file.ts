/**
 * The lowdb document on disk. A lowdb `Low` over our own adapter: lowdb's JSONFile writes through
 * steno, which renames without fsync, and parses without telling a corrupt file from a missing one.
 * This adapter fsyncs (see durable-fs.ts), serialises in slices so the event loop keeps running
 * (see sliced-json.ts), refuses what it cannot parse naming the file, and keeps the last good
 * document as the backup at each replacement.
 */
import { open, readFile, rename, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Low, type Adapter } from 'lowdb';
import { refuseFile } from '../errors.ts';
import { linkOrCopy, STATE_FILE_MODE, syncFolder, tempPathOf } from './durable-fs.ts';
import { splitInbox } from './document-inbox.ts';
import { stringifyInSlices } from './sliced-json.ts';

export class DocumentFile implements Adapter<unknown> {
  readonly path: string;
  readonly backupPath: string;
  /** Size of the document as last read or written. */
  bytes = 0;
  /** fsync calls made by writes so far. */
  fsyncs = 0;
  #inboxEntries: string[] | undefined;

  constructor(path: string, backupPath: string) {
    this.path = path;
    this.backupPath = backupPath;
  }

  /**
   * Parsed JSON, or null when there is no document yet. Never returns a value it could not parse.
   * In the store's own layout the inbox comes back empty and its entries' texts wait in
   * `takeInboxEntries()` (document-inbox.ts): a large backlog is never parsed all at once.
   */
  async read(): Promise<unknown> {
    let data: Buffer;
    try {
      data = await readFile(this.path);
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    this.bytes = data.length;
    const split = splitInbox(data);
    this.#inboxEntries = split?.entries;
    let parsed: unknown;
    try {
      parsed = JSON.parse(split === undefined ? data.toString('utf8') : split.rest);
    } catch (error) {
      throw refuseFile(
        'corrupt',
        this.path,
        `is not valid JSON (${error instanceof Error ? error.message : String(error)})`,
        `Restore it from its backup ${this.backupPath} or move it away to start empty.`,
      );
    }
    // lowdb's Low.read() keeps its default for any falsy value: a document of `0` or `""` must not
    // pass for a missing one (and later be overwritten).
    if (parsed === null || typeof parsed !== 'object')
      throw refuseFile(
        'corrupt',
        this.path,
        'is not a hookbot state document (not a JSON object)',
        `Restore it from its backup ${this.backupPath} or move it away to start empty.`,
      );
    return parsed;
  }

  /**
   * The inbox entries' JSON texts split off by the last read (then the document read has an empty
   * inbox), or undefined when the document was parsed whole. Handed over once.
   */
  takeInboxEntries(): string[] | undefined {
    const entries = this.#inboxEntries;
    this.#inboxEntries = undefined;
    return entries;
  }

  /**
   * Replaces the document atomically and durably, keeping the current one (if any) as the backup.
   * The new content is fsynced under a temp name; the backup is a hard link to the current file
   * (documents are only ever replaced by rename, never changed in place), so no copy is written;
   * one sync of the folder then makes the backup and the rename durable, in that order. Compactions
   * run beside the appends, so each fsync spared here is one less the appends queue behind.
   */
  async write(data: unknown): Promise<void> {
    const text = await stringifyInSlices(data);
    const temp = tempPathOf(this.path);
    const file = await open(temp, 'w', STATE_FILE_MODE);
    try {
      await file.writeFile(text);
      await file.sync();
    } finally {
      await file.close();
    }
    this.fsyncs++;
    if (await exists(this.path)) {
      this.fsyncs += await linkOrCopy(this.path, this.backupPath);
      // A backup in another folder is made durable first. In the same folder the sync below covers
      // both (journaling file systems keep the order; where one did not, a power cut could lose
      // the backup, never the document).
      if (dirname(this.backupPath) !== dirname(this.path)) this.fsyncs += await syncFolder(this.backupPath);
    }
    await rename(temp, this.path);
    this.fsyncs += await syncFolder(this.path);
    this.bytes = Buffer.byteLength(text);
  }
}

export function createDocumentDb(file: DocumentFile): Low<unknown> {
  return new Low<unknown>(file, null);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

function isMissing(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'ENOENT';
}
