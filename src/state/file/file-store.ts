/**
 * The embedded backend: a lowdb JSON document holding the bounded state as of journal record `seq`,
 * de-dup files holding the older de-duplication keys, and an append-only journal in segments holding
 * the mutations since. Every write goes to the active segment through the group commit (one append
 * and one fdatasync per batch).
 *
 * Why not write the document on each change: lowdb rewrites the whole file per write and blocks the
 * event loop while it serialises (about 4 ms at 1,000 records, 290 ms at 100,000), without fsync;
 * an appended line costs the same at any size. See docs/state.md for the measurements.
 *
 * Compaction never holds writes up. It seals the active segment (a rename, while appends go on),
 * switches appends to a fresh segment between two batches (a rename: microseconds), and then, in the
 * background, writes the new keys to a de-dup file and the state to a new document, and deletes the
 * sealed segments the document now holds. A crash at any point loses nothing: replay reads the
 * document, skips the records it holds, and replays every remaining segment in order (segments.ts).
 */
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Low } from 'lowdb';
import { keptDedupFiles, readDedupFile, writeDedupFile } from './dedup-file.ts';
import { DedupFolder } from './dedup-folder.ts';
import { createDocumentDb, DocumentFile } from './document-file.ts';
import { SCHEMA_VERSION, emptyDocument, type DedupEntry, type DedupFileRef } from './document.ts';
import {
  folderOpenToOthers,
  removeStaleTemp,
  STATE_FOLDER_MODE,
  syncFolder,
  tightenStateFiles,
} from './durable-fs.ts';
import { refuseFile, StateError } from '../errors.ts';
import { GroupCommit } from '../group-commit.ts';
import { HeldEntry, type JsonPiece } from '../held-entry.ts';
import { acquireLock, type HeldLock } from './lock-file.ts';
import { encodeLine, JournalWriter, mutationOffset, type FsyncCounter, type JournalLine } from './journal.ts';
import { migrateDocument } from './document-migrations.ts';
import { inboxEntrySchema } from '../mutations.ts';
import { ACCEPT_PREFIX, HeldStateStore } from '../held-state-store.ts';
import { resolveFileStoreOptions, type FileStoreOptions, type ResolvedFileStoreOptions } from '../options.ts';
import { openSegments, planReplay, SegmentNames, type SealedSegment } from './segments.ts';
import { HeldState, type DocumentSnapshot } from '../held-state.ts';
import type { CloseOptions, StateStats, StateStore } from '../store.ts';

export function createFileStore(options: FileStoreOptions = {}): StateStore {
  return new FileStore(resolveFileStoreOptions(options), {});
}

/** The steps of a compaction, in order. Each leaves the files in a state a crash may leave them in. */
export type CompactionStep =
  'spare' | 'sealed' | 'switched' | 'dedup-written' | 'document-written' | 'cleaned';

export interface FileStoreInternals {
  /** Awaited after each step of each compaction (tests copy the files there, as a crash would leave them). */
  onStep?: (step: CompactionStep) => void | Promise<void>;
}

/** For tests: a file store that reports the steps of its compactions. */
export function createObservedFileStore(
  options: FileStoreOptions,
  internals: FileStoreInternals,
): StateStore {
  return new FileStore(resolveFileStoreOptions(options), internals);
}

interface Session {
  /** The active segment: where appends go. */
  journal: JournalWriter;
  commit: GroupCommit<JournalLine>;
}

/** What a compaction writes: the state as of `seq`, and the keys that go to a new de-dup file. */
interface Fold {
  seq: number;
  now: number;
  document: DocumentSnapshot;
  spill: DedupEntry[];
}

class FileStore extends HeldStateStore {
  protected readonly label: string;
  readonly #files: ResolvedFileStoreOptions;
  readonly #internals: FileStoreInternals;
  readonly #segments: SegmentNames;
  readonly #document: DocumentFile;
  readonly #db: Low<unknown>;
  readonly #dedupFolder: DedupFolder;
  #session: Session | undefined;
  /** The last journal record number given out (applied to memory, maybe not yet on disk). */
  #seq = 0;
  #compactions = 0;
  #sealed: SealedSegment[] = [];
  /** The de-dup files the document names, and those its backup (the previous document) names. */
  #dedupFiles: DedupFileRef[] = [];
  #backupDedupFiles: DedupFileRef[] = [];
  /** The compaction under way, if any (they run one at a time). */
  #folding: Promise<void> | undefined;
  /** Set once a compaction failed: the store accepts no more writes. */
  #failure: StateError | undefined;
  #fsyncs: FsyncCounter;
  /** The document's fsync count when this session opened: stats count from there. */
  #documentFsyncsAtOpen = 0;
  /** Held from open to close: one process writes these files (lock-file.ts). */
  #lock: HeldLock | undefined;

  constructor(options: ResolvedFileStoreOptions, internals: FileStoreInternals) {
    super(options);
    this.#files = options;
    this.#fsyncs = { fsyncs: 0, onCommit: options.onCommit };
    this.#internals = internals;
    this.label = `state store ${options.path}`;
    this.#segments = new SegmentNames(options.journalPath);
    this.#document = new DocumentFile(options.path, options.backupPath);
    this.#db = createDocumentDb(this.#document);
    this.#dedupFolder = new DedupFolder(options.path, options.backupPath);
  }

  async open(): Promise<void> {
    if (this.isOpen) return;
    await mkdir(dirname(this.#files.path), { recursive: true, mode: STATE_FOLDER_MODE });
    // Before reading anything: another process writing these files would make any reading stale.
    const lock = await acquireLock(`${this.#files.path}.lock`);
    try {
      await this.#openLocked();
    } catch (error) {
      await lock.release();
      throw error;
    }
    this.#lock = lock;
    // Once the files are known good: a refused state is left as it was, modes included.
    await this.#tightenModes();
  }

  /**
   * Files an older version created 0644 become 0600. A folder that others may list is left as it
   * is (it may be shared, e.g. the current folder) with a warning: its files are closed to them.
   * A mode that cannot be changed (another owner) is a warning too, not a reason to stop.
   */
  async #tightenModes(): Promise<void> {
    try {
      await this.#tightenModesOrThrow();
    } catch (error) {
      this.#files.log?.warn({ err: error }, 'could not narrow the modes of the state files');
    }
  }

  async #tightenModesOrThrow(): Promise<void> {
    const { path, journalPath, backupPath, log } = this.#files;
    const names = new Set([basename(path), basename(backupPath), `${basename(path)}.lock`]);
    const journal = basename(journalPath);
    const isOurs = (name: string) =>
      names.has(name) || name === journal || name.startsWith(`${journal}.`) || this.#dedupFolder.owns(name);
    for (const folder of new Set([dirname(path), dirname(journalPath), dirname(backupPath)])) {
      const changed = await tightenStateFiles(folder, isOurs);
      if (changed.length > 0)
        log?.warn({ folder, files: changed }, 'state files were readable by others: now 0600');
      if (await folderOpenToOthers(folder))
        log?.warn(
          { folder },
          'the state folder can be listed by other users; its files are 0600, but chmod 700 it to hide their names too',
        );
    }
  }

  async #openLocked(): Promise<void> {
    const { path, journalPath, backupPath, log } = this.#files;
    await mkdir(dirname(journalPath), { recursive: true, mode: STATE_FOLDER_MODE });

    // Read and check everything before changing anything: a refusal leaves every file as it was.
    await this.#db.read();
    const raw = this.#db.data;
    // Not kept once read: the model holds what it needs (the inbox as text), the parsed document
    // would hold every pending body parsed until the next compaction.
    this.#db.data = null;
    const { document, migratedFrom } =
      raw === null
        ? { document: emptyDocument(), migratedFrom: undefined }
        : migrateDocument(raw, path, backupPath);
    const segments = await this.#segments.read(SCHEMA_VERSION);
    const plan = planReplay(segments, { path, seq: document.seq, missing: raw === null });
    const filed: DedupEntry[] = [];
    const openedAt = this.options.now();
    for (const ref of document.dedupFiles) {
      if (!this.#dedupFolder.owns(ref.file))
        throw refuseFile(
          'corrupt',
          path,
          `names ${JSON.stringify(ref.file)} as a de-dup file, which is not a name this store gives`,
          `Restore it from its backup ${backupPath} or move it away to start empty.`,
        );
      // Every key of it expired: nothing to read (the pruning below would drop them all), and it may
      // be gone already: a compaction deletes such a file even while the backup still names it.
      if (expired(ref, openedAt)) continue;
      const read = await readDedupFile(this.#dedupFolder.path(ref.file), ref, path);
      if (read.emptied)
        log?.warn(
          { path: this.#dedupFolder.path(ref.file) },
          'a de-dup file was emptied by hand: starting without its de-duplication keys',
        );
      for (const entry of read.entries) filed.push(entry);
    }
    const model = HeldState.fromDocument(document, this.options, filed, this.#heldInbox());
    for (const record of plan.records) model.apply(record.mutation, record.held);
    model.pruneExpired(openedAt);

    // From here on the files change: drop what an interrupted replacement left (temp files, de-dup
    // files no document names), settle the segments, cut a torn tail, then compact if the files
    // are not current.
    await Promise.all([path, journalPath, backupPath].map((file) => removeStaleTemp(file)));
    const live = (ref: DedupFileRef) => !expired(ref, openedAt);
    this.#backupDedupFiles = (await this.#dedupFolder.backupRefs()).filter(live);
    await this.#dedupFolder.removeUnnamed([...document.dedupFiles.filter(live), ...this.#backupDedupFiles]);
    this.#fsyncs = { fsyncs: 0, onCommit: this.#files.onCommit };
    const { journal, sealed } = await openSegments(this.#segments, segments, SCHEMA_VERSION, this.#fsyncs);
    this.#sealed = sealed;
    for (const { path: segment, contents } of segments)
      if (contents.totalBytes > contents.validBytes)
        log?.warn(
          { path: segment, bytes: contents.totalBytes - contents.validBytes },
          'cut a torn tail off the state journal (a write the crash interrupted; no caller had been told it was durable)',
        );
    this.model = model;
    this.#documentFsyncsAtOpen = this.#document.fsyncs;
    this.#compactions = 0;
    this.#failure = undefined;
    this.#seq = plan.seq;
    this.#dedupFiles = document.dedupFiles;
    this.#session = {
      journal,
      commit: new GroupCommit<JournalLine>({
        windowMs: this.#files.groupWindowMs,
        maxBatch: this.#files.maxBatch,
        write: (lines) => this.#append(lines),
      }),
    };
    this.isOpen = true;

    const oldJournal = segments.some(
      ({ contents }) => contents.version !== undefined && contents.version < SCHEMA_VERSION,
    );
    // Appends must continue the active segment's numbers: if the document holds records past its
    // end (a crash lost records it had already folded), start a new segment.
    const behind = journal.lastSeq !== undefined && journal.lastSeq < plan.seq;
    if (migratedFrom !== undefined)
      log?.info(
        { path, from: migratedFrom, to: SCHEMA_VERSION, backup: backupPath },
        'migrating the state document',
      );
    // A migrated document is written at once (the old one stays as the backup); segments left by a
    // crash, records the document already holds, or a journal of an older version are folded now.
    if (migratedFrom !== undefined || plan.stale || oldJournal || behind || this.#sealed.length > 0)
      await this.compact();
  }

  /** The inbox entries the document read split off, each checked and kept as its text. */
  #heldInbox(): HeldEntry[] {
    const texts = this.#document.takeInboxEntries() ?? [];
    return texts.map((text, i) => {
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch {
        raw = undefined;
      }
      const entry = inboxEntrySchema.safeParse(raw);
      if (!entry.success)
        throw refuseFile(
          'corrupt',
          this.#files.path,
          `does not have the shape of a hookbot state document at inbox.${i}`,
          `Restore it from its backup ${this.#files.backupPath} or move it away to start empty.`,
        );
      return HeldEntry.fromJson(entry.data, text);
    });
  }

  async compact(): Promise<void> {
    this.assertOpen();
    await this.#queueFold();
  }

  override async flush(): Promise<void> {
    await super.flush();
    // A compaction under way is the rest of what "everything issued so far is on disk" covers.
    await this.#folding;
  }

  async close(options: CloseOptions = {}): Promise<void> {
    const session = this.#session;
    if (!this.isOpen || session === undefined) return;
    // Refuse new operations from here on; the ones already issued still complete.
    this.isOpen = false;
    try {
      await session.commit.barrier();
      await this.#folding;
      const compact = options.compact ?? true;
      // Nothing new since the last compaction still folds when the document names de-dup files
      // whose keys all expired since: the files a stopped bot leaves are then only what counts.
      const now = this.options.now();
      const stale = this.#dedupFiles.some((ref) => expired(ref, now));
      if (compact && (session.journal.records > 0 || this.#sealed.length > 0 || stale))
        await this.#queueFold();
    } finally {
      this.#session = undefined;
      await session.journal.close();
      await this.#lock?.release();
      this.#lock = undefined;
    }
  }

  stats(): StateStats {
    const session = this.#session;
    const sealed = this.#sealed;
    return {
      ...this.counts(),
      documentBytes: this.#document.bytes + this.#dedupFiles.reduce((sum, file) => sum + file.bytes, 0),
      journalBytes: (session?.journal.bytes ?? 0) + sealed.reduce((sum, s) => sum + s.bytes, 0),
      journalRecords: (session?.journal.records ?? 0) + sealed.reduce((sum, s) => sum + s.records, 0),
      commits: session?.commit.batches ?? 0,
      fsyncs: this.#fsyncs.fsyncs + this.#document.fsyncs - this.#documentFsyncsAtOpen,
      compactions: this.#compactions,
    };
  }

  protected persist(json: string | readonly JsonPiece[], held?: HeldEntry): Promise<void> {
    // Numbers are given out in the order mutations were applied, which is the journal's order.
    const seq = (this.#seq += 1);
    const line: JournalLine = { seq, data: encodeLine(seq, json) };
    // Once durable, an accept's entry is read back from the segment (journal.ts).
    if (held !== undefined) line.held = { entry: held, at: mutationOffset(seq) + ACCEPT_PREFIX.length };
    return this.#current().commit.submit(line);
  }

  protected settled(): Promise<void> {
    return this.#current().commit.barrier();
  }

  #current(): Session {
    if (this.#session === undefined) throw new StateError('closed', `${this.label} is not open`);
    return this.#session;
  }

  /** The group commit's write: one append and one fdatasync; past a threshold, a compaction starts. */
  async #append(lines: JournalLine[]): Promise<void> {
    const { journal } = this.#current();
    await journal.append(lines);
    if (this.#folding === undefined && this.#isFull(journal)) this.#foldInBackground();
  }

  #isFull(journal: JournalWriter): boolean {
    return journal.bytes > this.#files.compactBytes || journal.records > this.#files.compactRecords;
  }

  /** Compacts until the active segment is under the thresholds again; writes go on meanwhile. */
  #foldInBackground(): void {
    const run = (async () => {
      do await this.#rotateAndFold();
      while (
        this.#failure === undefined &&
        this.#session !== undefined &&
        this.#isFull(this.#session.journal)
      );
    })();
    this.#track(run);
    run.catch((error: unknown) => {
      this.#files.log?.warn({ err: error, path: this.#files.path }, 'state compaction failed');
    });
  }

  /** A compaction after the one under way, if any. */
  #queueFold(): Promise<void> {
    const run = (this.#folding ?? Promise.resolve()).then(() => this.#rotateAndFold());
    this.#track(run);
    return run;
  }

  #track(run: Promise<void>): void {
    const tracked: Promise<void> = run.then(
      () => undefined,
      () => undefined,
    );
    this.#folding = tracked;
    void tracked.then(() => {
      if (this.#folding === tracked) this.#folding = undefined;
    });
  }

  /** Seals the active segment, switches appends to a new one, and folds the state into a new document. */
  async #rotateAndFold(): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure;
    const session = this.#current();
    const old = session.journal;
    let spare: JournalWriter | undefined;
    try {
      if (old.records > 0 && old.firstSeq !== undefined) {
        // Prepared before the switch, so the switch itself is a rename. Its name becomes durable with
        // the folder sync below, together with the seal.
        spare = await JournalWriter.create(this.#segments.spare, SCHEMA_VERSION, this.#fsyncs);
        await this.#step('spare');
        const sealedPath = this.#segments.sealed(old.firstSeq);
        if (await exists(sealedPath)) throw new Error(`${sealedPath} exists already`);
        // Appends go on into the renamed file. The rename is durable before the switch can replace
        // the active name: a power cut cannot lose this segment behind the new one.
        await rename(old.path, sealedPath);
        old.renamed(sealedPath);
        this.#fsyncs.fsyncs += await syncFolder(sealedPath);
        await this.#step('sealed');
      }
      const next = spare;
      // Between two batches, no append is in flight: switch segments and take the snapshot there, so
      // the document holds every record of the sealed segment (and the queued ones, which go on to
      // the new segment: replay skips them). Nothing here waits for the disk: the appends behind
      // it wait for this step, and a rename, queued behind the compaction's own fsyncs in the file
      // system's journal, took milliseconds (the acks' p99 showed it: docs/benchmarks.md).
      const fold = await session.commit.between(async () => {
        if (next !== undefined) {
          // The old segment closes below: the entries read back from it come back into memory (the
          // inbox is bounded, so is this), and the snapshot's document holds them from then on.
          for (const held of this.model.inbox.values()) if (held.isIn(old)) held.materialize();
          session.journal = next;
          this.#sealed.push({
            path: old.path,
            lastSeq: old.lastSeq ?? 0,
            bytes: old.bytes,
            records: old.records,
          });
        }
        return this.#snapshot();
      });
      spare = undefined;
      if (next !== undefined) {
        // Appends go on into the spare meanwhile, by its descriptor. Not synced: if a power cut
        // loses this rename, or comes before it, the spare, found with records, is replayed last.
        try {
          await rename(next.path, this.#segments.active);
          next.renamed(this.#segments.active);
        } finally {
          await old.close();
        }
      }
      await this.#step('switched');
      await this.#write(fold);
    } catch (cause) {
      await spare?.close().catch(() => undefined);
      const error =
        cause instanceof StateError && cause.code === 'io'
          ? cause
          : new StateError(
              'io',
              `${this.label}: compaction failed (${cause instanceof Error ? cause.message : String(cause)}); no further writes are accepted until the store is reopened`,
              { path: this.#files.path, cause },
            );
      // After a failed rename or fsync the files' state is unknown: refuse further writes, as a
      // failed append does. Reopening replays what is on disk.
      this.#failure = error;
      session.commit.fail(error);
      throw error;
    }
  }

  /** The state as of the last record given out. Synchronous: runs between two batches. */
  #snapshot(): Fold {
    const now = this.options.now();
    this.model.pruneExpired(now);
    const live = this.model.liveRecentKeys();
    // Few new keys stay inline in the document; enough of them go to a de-dup file of their own.
    const spill = live.length >= this.#files.dedupFileKeys ? live : [];
    if (spill.length > 0) this.model.recentKeys = [];
    const inline = spill.length > 0 ? [] : [...live];
    return { seq: this.#seq, now, document: this.model.toDocument(this.#seq, inline), spill };
  }

  /** Writes the de-dup file and the document of `fold`, then deletes what they made useless. */
  async #write(fold: Fold): Promise<void> {
    let files = this.#dedupFiles;
    if (fold.spill.length > 0) {
      const name = this.#dedupFolder.name(fold.seq, [...files, ...this.#backupDedupFiles]);
      const written = await writeDedupFile(this.#dedupFolder.path(name), name, fold.spill);
      this.#fsyncs.fsyncs += written.fsyncs;
      files = [...files, written.ref];
      await this.#step('dedup-written');
    }
    files = keptDedupFiles(files, fold.document.dedup.length, fold.now, this.options.maxDedupKeys);
    this.#db.data = { ...fold.document, dedupFiles: files };
    try {
      await this.#db.write();
    } finally {
      this.#db.data = null;
    }
    await this.#step('document-written');

    // The new document holds everything the sealed segments hold: they can go. So can the de-dup
    // files neither it nor its backup names, and those whose keys all expired: the backup, restored,
    // would drop their keys at once (open skips such a file, present or not). A deletion a crash
    // undoes is harmless: replay skips records the document holds, and open removes de-dup files
    // nothing names.
    const previous = this.#dedupFiles.filter((file) => !expired(file, fold.now));
    const named = new Set([...files, ...previous].map((file) => file.file));
    const unnamed = [...this.#backupDedupFiles, ...this.#dedupFiles].filter((file) => !named.has(file.file));
    this.#dedupFiles = files;
    this.#backupDedupFiles = previous;
    const folded = this.#sealed.filter((segment) => segment.lastSeq <= fold.seq);
    this.#sealed = this.#sealed.filter((segment) => segment.lastSeq > fold.seq);
    for (const segment of folded) await rm(segment.path, { force: true });
    for (const file of unnamed) await rm(this.#dedupFolder.path(file.file), { force: true });
    this.#compactions++;
    await this.#step('cleaned');
  }

  async #step(step: CompactionStep): Promise<void> {
    await this.#internals.onStep?.(step);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/** Whether every key of a de-dup file has expired by `now` (it counts for nothing any more). */
function expired(ref: DedupFileRef, now: number): boolean {
  return ref.newest <= now;
}
