/**
 * The embedded backend: a lowdb JSON document holding the whole bounded state as of journal record
 * `seq`, plus an append-only journal of the mutations since. Every write goes to the journal
 * through the group commit (one append and one fdatasync per batch); compaction folds the journal
 * into a new document (backup first, then temp file, fsync, rename) and starts an empty journal.
 *
 * Why not write the document on each change: lowdb rewrites the whole file per write and blocks the
 * event loop while it serialises (about 4 ms at 1,000 records, 290 ms at 100,000), without fsync;
 * an appended line costs the same at any size. See docs/state.md for the measurements.
 *
 * Crash safety of compaction: the document records the last journal record it holds, and replay
 * skips records up to it, so a crash between writing the document and resetting the journal
 * replays nothing twice.
 */
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Low } from 'lowdb';
import { createDocumentDb, DocumentFile } from './document-file.ts';
import { SCHEMA_VERSION, emptyDocument } from './document.ts';
import { removeStaleTemp } from './durable-fs.ts';
import { refuseFile, StateError } from './errors.ts';
import { GroupCommit } from './group-commit.ts';
import { encodeRecord, readJournal, JournalWriter } from './journal.ts';
import { migrateDocument } from './migrations.ts';
import { ModelStore } from './model-store.ts';
import { resolveFileStoreOptions, type FileStoreOptions, type ResolvedFileStoreOptions } from './options.ts';
import { StateModel } from './state-model.ts';
import type { CloseOptions, StateStats, StateStore } from './store.ts';

export function createFileStore(options: FileStoreOptions = {}): StateStore {
  return new FileStore(resolveFileStoreOptions(options));
}

interface Session {
  journal: JournalWriter;
  commit: GroupCommit<string>;
}

class FileStore extends ModelStore {
  protected readonly label: string;
  readonly #files: ResolvedFileStoreOptions;
  readonly #document: DocumentFile;
  readonly #db: Low<unknown>;
  #session: Session | undefined;
  /** The last journal record number given out (applied to memory, maybe not yet on disk). */
  #seq = 0;
  #compactions = 0;
  #compactionQueued = false;
  /** The document's fsync count when this session opened: stats count from there. */
  #documentFsyncsAtOpen = 0;

  constructor(options: ResolvedFileStoreOptions) {
    super(options);
    this.#files = options;
    this.label = `state store ${options.path}`;
    this.#document = new DocumentFile(options.path, options.backupPath);
    this.#db = createDocumentDb(this.#document);
  }

  async open(): Promise<void> {
    if (this.isOpen) return;
    const { path, journalPath, backupPath, log } = this.#files;
    await mkdir(dirname(path), { recursive: true });
    await mkdir(dirname(journalPath), { recursive: true });

    // Read and check everything before changing anything: a refusal leaves every file as it was.
    await this.#db.read();
    const raw = this.#db.data;
    const { document, migratedFrom } =
      raw === null
        ? { document: emptyDocument(), migratedFrom: undefined }
        : migrateDocument(raw, path, backupPath);
    const journal = await readJournal(journalPath, SCHEMA_VERSION);
    const replay = journal.records.filter((record) => record.seq > document.seq);
    const first = replay[0];
    if (first !== undefined && first.seq !== document.seq + 1)
      throw refuseFile(
        'mismatch',
        journalPath,
        raw === null
          ? `continues from record ${first.seq - 1} but the document ${path} is missing`
          : `continues from record ${first.seq - 1} but the document ${path} ends at record ${document.seq} (was one of them restored from a backup?)`,
        'Restore the document and the journal from the same moment, or move the journal away (losing its changes).',
      );
    const model = StateModel.fromDocument(document, this.options);
    for (const record of replay) model.apply(record.mutation);
    model.pruneExpired(this.options.now());

    // From here on the files change: drop what an interrupted replacement left, cut a torn tail,
    // then fold if the files are not current.
    await Promise.all([path, journalPath, backupPath].map((file) => removeStaleTemp(file)));
    const writer = await JournalWriter.open(journalPath, SCHEMA_VERSION, journal);
    if (journal.totalBytes > journal.validBytes)
      log?.warn(
        { path: journalPath, bytes: journal.totalBytes - journal.validBytes },
        'cut a torn tail off the state journal (a write the crash interrupted; no caller had been told it was durable)',
      );
    this.model = model;
    this.#documentFsyncsAtOpen = this.#document.fsyncs;
    this.#compactions = 0;
    this.#seq = replay.at(-1)?.seq ?? document.seq;
    this.#session = {
      journal: writer,
      commit: new GroupCommit<string>({
        windowMs: this.#files.groupWindowMs,
        maxBatch: this.#files.maxBatch,
        write: (lines) => this.#append(lines),
      }),
    };
    this.isOpen = true;

    const stale = journal.records.length > replay.length;
    const oldJournal = journal.version !== undefined && journal.version < SCHEMA_VERSION;
    if (migratedFrom !== undefined)
      log?.info(
        { path, from: migratedFrom, to: SCHEMA_VERSION, backup: backupPath },
        'migrating the state document',
      );
    // A migrated document is written at once (the old one stays as the backup); a journal that is
    // behind the document, or of an older version, is folded so appends continue a clean sequence.
    if (migratedFrom !== undefined || stale || oldJournal) await this.compact();
  }

  async compact(): Promise<void> {
    this.assertOpen();
    await this.#current().commit.exclusive(() => this.#fold());
  }

  async close(options: CloseOptions = {}): Promise<void> {
    const session = this.#session;
    if (!this.isOpen || session === undefined) return;
    // Refuse new operations from here on; the ones already issued still complete.
    this.isOpen = false;
    try {
      await session.commit.barrier();
      // Exclusive even when not compacting: it waits for a compaction already queued to finish.
      const compact = options.compact ?? true;
      await session.commit.exclusive(async () => {
        if (compact && session.journal.records > 0) await this.#fold();
      });
    } finally {
      this.#session = undefined;
      await session.journal.close();
    }
  }

  stats(): StateStats {
    const session = this.#session;
    return {
      ...this.counts(),
      documentBytes: this.#document.bytes,
      journalBytes: session?.journal.bytes ?? 0,
      journalRecords: session?.journal.records ?? 0,
      commits: session?.commit.batches ?? 0,
      fsyncs: (session?.journal.fsyncs ?? 0) + this.#document.fsyncs - this.#documentFsyncsAtOpen,
      compactions: this.#compactions,
    };
  }

  protected persist(json: string): Promise<void> {
    // Numbers are given out in the order mutations were applied, which is the journal's order.
    this.#seq += 1;
    return this.#current().commit.submit(encodeRecord(this.#seq, json));
  }

  protected settled(): Promise<void> {
    return this.#current().commit.barrier();
  }

  #current(): Session {
    if (this.#session === undefined) throw new StateError('closed', `${this.label} is not open`);
    return this.#session;
  }

  /** The group commit's write: one append and one fdatasync, then maybe a compaction. */
  async #append(lines: string[]): Promise<void> {
    const { journal, commit } = this.#current();
    await journal.append(lines);
    const full = journal.bytes > this.#files.compactBytes || journal.records > this.#files.compactRecords;
    if (full && !this.#compactionQueued) {
      this.#compactionQueued = true;
      // Runs after this batch, alone; a failure fails the writes behind it, which report it.
      commit
        .exclusive(() => this.#fold())
        .catch((error: unknown) => {
          this.#files.log?.warn({ err: error, path: this.#files.path }, 'state compaction failed');
        });
    }
  }

  /** Writes memory as the new document (backup first), then empties the journal. Runs alone. */
  async #fold(): Promise<void> {
    this.#compactionQueued = false;
    const { journal } = this.#current();
    this.model.pruneExpired(this.options.now());
    // The snapshot holds every applied mutation, including queued ones not appended yet: the
    // group commit resolves those when this succeeds. Its arrays are copies and the model never
    // modifies a record in place, so mutations applied while it is serialised do not leak in.
    this.#db.data = this.model.toDocument(this.#seq);
    try {
      await this.#db.write();
      await journal.reset();
    } catch (cause) {
      throw new StateError(
        'io',
        `${this.label}: compaction failed (${cause instanceof Error ? cause.message : String(cause)}); no further writes are accepted until the store is reopened`,
        { path: this.#files.path, cause },
      );
    } finally {
      this.#db.data = null;
    }
    this.#compactions++;
  }
}
