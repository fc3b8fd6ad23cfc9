/**
 * The journal in segments. Appends always go to the active segment, `hookbot.journal`. A compaction
 * seals it (renames it `hookbot.journal.<its first record>`) and switches appends to a fresh one,
 * prepared beforehand as `hookbot.journal.next`; the sealed segment is deleted once a document
 * holding its records is durable. So a compaction never holds writes up: they go on in the new
 * segment while the old one is folded into the document in the background.
 *
 * On disk there may be, in this order: sealed segments (by number), the active one, and the spare
 * (`.next`). The spare holds records only when a power cut lost the rename that made it the active
 * one: it then comes last. Replay reads the document, then every segment in this order, skipping the
 * records the document already holds; the numbers must continue across segments without a gap.
 */
import { readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { syncFolder } from './durable-fs.ts';
import { refuseFile } from '../errors.ts';
import {
  JournalWriter,
  readJournal,
  type FsyncCounter,
  type JournalContents,
  type JournalRecord,
} from './journal.ts';

export type SegmentRole = 'sealed' | 'active' | 'spare';

export interface SegmentFile {
  path: string;
  role: SegmentRole;
  contents: JournalContents;
}

/** A segment no longer appended to, deleted once a document holds its records. */
export interface SealedSegment {
  path: string;
  lastSeq: number;
  bytes: number;
  records: number;
}

const NO_JOURNAL: JournalContents = { version: undefined, records: [], validBytes: 0, totalBytes: 0 };

/** The file names of the journal at `journalPath` (the active segment). */
export class SegmentNames {
  readonly active: string;
  readonly spare: string;
  readonly #base: string;

  constructor(journalPath: string) {
    this.active = journalPath;
    this.spare = `${journalPath}.next`;
    this.#base = basename(journalPath);
  }

  /** A sealed segment is named after its first record, so names sort in record order. */
  sealed(firstSeq: number): string {
    return `${this.active}.${firstSeq}`;
  }

  /** The segments in the folder, in replay order, each read and checked on its own. */
  async read(knownVersion: number): Promise<SegmentFile[]> {
    const names = await readdir(dirname(this.active)).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    });
    const sealed: { path: string; n: number }[] = [];
    let hasActive = false;
    let hasSpare = false;
    for (const name of names) {
      if (name === this.#base) hasActive = true;
      else if (name === `${this.#base}.next`) hasSpare = true;
      else if (name.startsWith(`${this.#base}.`)) {
        const suffix = name.slice(this.#base.length + 1);
        if (/^[1-9][0-9]*$/.test(suffix))
          sealed.push({ path: join(dirname(this.active), name), n: Number(suffix) });
      }
    }
    sealed.sort((a, b) => a.n - b.n);
    const files: { path: string; role: SegmentRole }[] = [
      ...sealed.map(({ path }) => ({ path, role: 'sealed' as const })),
      ...(hasActive ? [{ path: this.active, role: 'active' as const }] : []),
      ...(hasSpare ? [{ path: this.spare, role: 'spare' as const }] : []),
    ];
    const read: SegmentFile[] = [];
    for (const file of files) read.push({ ...file, contents: await readJournal(file.path, knownVersion) });
    return read;
  }
}

export interface ReplayPlan {
  /** The records the document does not hold, in order. */
  records: JournalRecord[];
  /** The last record number the state holds (the document's or the last replayed). */
  seq: number;
  /** Some segment holds records the document already holds (they are skipped; a compaction drops them). */
  stale: boolean;
}

/**
 * Checks that the segments continue the document and each other, and lists the records to replay.
 * Throws a StateError naming the file when they do not.
 */
export function planReplay(
  segments: readonly SegmentFile[],
  document: { path: string; seq: number; missing: boolean },
): ReplayPlan {
  const mismatch = (path: string, why: string) =>
    refuseFile(
      'mismatch',
      path,
      why,
      'Restore the document and the journal from the same moment, or move the journal away (losing its changes).',
    );
  const records: JournalRecord[] = [];
  let seq = document.seq;
  let stale = false;
  let previous: { seq: number; path: string } | undefined;
  let torn: string | undefined;
  /** The file of the last record replayed. */
  let replayedFrom: string | undefined;
  for (const { path, contents } of segments) {
    if (torn !== undefined && contents.records.length > 0)
      throw refuseFile(
        'corrupt',
        torn,
        `is cut short, yet ${path} continues after it`,
        'A damaged journal is never repaired silently: move the journal files away to start from the document alone (losing their changes), or restore them from a backup.',
      );
    for (const record of contents.records) {
      if (previous !== undefined && record.seq <= previous.seq)
        throw refuseFile(
          'corrupt',
          path,
          `holds record ${record.seq} after record ${previous.seq} of ${previous.path}`,
          'Segments out of order are never repaired silently: restore the journal files from a backup.',
        );
      previous = { seq: record.seq, path };
      if (record.seq <= seq) {
        stale = true;
        continue;
      }
      if (record.seq !== seq + 1)
        throw mismatch(
          path,
          replayedFrom !== undefined
            ? `continues from record ${record.seq - 1} but ${replayedFrom} ends at record ${seq}`
            : document.missing
              ? `continues from record ${record.seq - 1} but the document ${document.path} is missing`
              : `continues from record ${record.seq - 1} but the document ${document.path} ends at record ${document.seq} (was one of them restored from a backup?)`,
        );
      records.push(record);
      seq = record.seq;
      replayedFrom = path;
    }
    if (contents.totalBytes > contents.validBytes) torn = path;
  }
  return { records, seq, stale };
}

/**
 * Opens the active segment for appending (cutting a torn tail), first finishing a switch a power cut
 * interrupted (the spare holds records: it had become the active segment), and drops an empty
 * spare. Returns the writer and the sealed segments left. Call only once every check passed: this
 * changes the files.
 */
export async function openSegments(
  names: SegmentNames,
  segments: readonly SegmentFile[],
  version: number,
  counter: FsyncCounter,
): Promise<{ journal: JournalWriter; sealed: SealedSegment[] }> {
  const active = segments.find((segment) => segment.role === 'active');
  const spare = segments.find((segment) => segment.role === 'spare');
  const sealed = segments.filter((segment) => segment.role === 'sealed');
  let current = active?.contents;
  if (spare !== undefined && spare.contents.records.length > 0) {
    const first = active?.contents.records[0]?.seq;
    if (active !== undefined && first !== undefined) {
      const sealedPath = names.sealed(first);
      await rename(active.path, sealedPath);
      sealed.push({ ...active, path: sealedPath });
    } else if (active !== undefined) await rm(active.path);
    await rename(spare.path, names.active);
    counter.fsyncs += await syncFolder(names.active);
    current = spare.contents;
  } else if (spare !== undefined) await rm(spare.path);
  return {
    journal: await JournalWriter.open(names.active, version, current ?? NO_JOURNAL, counter),
    sealed: sealed.map(({ path, contents }) => ({
      path,
      lastSeq: contents.records.at(-1)?.seq ?? 0,
      bytes: contents.totalBytes,
      records: contents.records.length,
    })),
  };
}
