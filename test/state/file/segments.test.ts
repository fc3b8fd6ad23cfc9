/**
 * Replay across journal segments: the order they are read in, and what makes a set of segments
 * refused. The file store's behaviour around them is in file-store-compaction.test.ts.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StateError } from '../../../src/state/errors.ts';
import { encodeRecord, headerLine, type JournalContents } from '../../../src/state/file/journal.ts';
import { planReplay, SegmentNames, type SegmentFile } from '../../../src/state/file/segments.ts';
import { useTempDir } from '../temp-dir.ts';

const dir = useTempDir();

/** A segment holding records `seqs` (each a `processed` mutation naming its number). */
function segment(path: string, seqs: number[], torn = 0): SegmentFile {
  const validBytes = 100 * seqs.length;
  const contents: JournalContents = {
    version: 2,
    records: seqs.map((seq) => ({ seq, mutation: { op: 'processed', id: `d${seq}` } })),
    validBytes,
    totalBytes: validBytes + torn,
  };
  return { path, role: path === 'j' ? 'active' : 'sealed', contents };
}

const doc = (seq: number, missing = false) => ({ path: 'doc.json', seq, missing });

describe('replay across segments', () => {
  it.each([
    ['one segment continuing the document', [segment('j', [4, 5])], 3, [4, 5], 5, false],
    [
      'segments continuing each other',
      [segment('j.1', [1, 2]), segment('j.3', [3]), segment('j', [4])],
      0,
      [1, 2, 3, 4],
      4,
      false,
    ],
    [
      'records the document holds are skipped',
      [segment('j.1', [1, 2, 3]), segment('j', [4, 5])],
      3,
      [4, 5],
      5,
      true,
    ],
    // A compaction folded records that were still queued; the crash lost them from the journal.
    ['a gap the document covers', [segment('j.1', [1, 2]), segment('j', [6, 7])], 5, [6, 7], 7, true],
    ['no segments at all', [], 9, [], 9, false],
    [
      'a torn tail in the last segment with records, then an empty one',
      [segment('j.1', [1], 30), segment('j', [])],
      0,
      [1],
      1,
      false,
    ],
  ])('%s', (_name, segments, docSeq, replayed, seq, stale) => {
    const plan = planReplay(segments, doc(docSeq));
    expect(plan.records.map((r) => r.seq)).toEqual(replayed);
    expect(plan.seq).toBe(seq);
    expect(plan.stale).toBe(stale);
  });

  it.each([
    [
      'a gap after the document',
      [segment('j', [5])],
      doc(3),
      'mismatch',
      'j',
      /continues from record 4 but the document doc.json ends at record 3/,
    ],
    [
      'a journal without its document',
      [segment('j', [5])],
      doc(0, true),
      'mismatch',
      'j',
      /continues from record 4 but the document doc.json is missing/,
    ],
    [
      'a gap between two segments',
      [segment('j.1', [1, 2]), segment('j', [4])],
      doc(0),
      'mismatch',
      'j',
      /continues from record 3 but j\.1 ends at record 2/,
    ],
    [
      'segments out of order',
      [segment('j.1', [3, 4]), segment('j.5', [1, 2])],
      doc(2),
      'corrupt',
      'j.5',
      /holds record 1 after record 4 of j\.1/,
    ],
    [
      'a torn tail followed by records',
      [segment('j.1', [1], 12), segment('j', [2])],
      doc(0),
      'corrupt',
      'j.1',
      /is cut short, yet j continues after it/,
    ],
  ])('refuses %s, naming the file', (_name, segments, document, code, path, message) => {
    let error: unknown;
    try {
      planReplay(segments, document);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StateError);
    expect(error).toMatchObject({ code, path });
    expect((error as Error).message).toMatch(message);
  });
});

describe('segment files', () => {
  it('reads sealed segments by number, then the active one, then the spare, ignoring other files', async () => {
    const folder = join(dir.path, 'data');
    await mkdir(folder);
    const active = join(folder, 'hookbot.journal');
    const names = new SegmentNames(active);
    const lines = (seqs: number[]) =>
      headerLine(2) + seqs.map((s) => encodeRecord(s, `{"op":"processed","id":"d${s}"}`)).join('');
    await writeFile(names.sealed(12), lines([12, 13]));
    await writeFile(names.sealed(3), lines([3]));
    await writeFile(names.sealed(100), lines([100]));
    await writeFile(active, lines([101]));
    await writeFile(names.spare, lines([102]));
    for (const other of [
      'hookbot.journal.bak',
      'hookbot.journal.012',
      '.hookbot.journal.tmp',
      'hookbot.json',
    ])
      await writeFile(join(folder, other), 'not a segment');
    const read = await names.read(2);
    expect(
      read.map((s) => [s.path.slice(folder.length + 1), s.role, s.contents.records.map((r) => r.seq)]),
    ).toEqual([
      ['hookbot.journal.3', 'sealed', [3]],
      ['hookbot.journal.12', 'sealed', [12, 13]],
      ['hookbot.journal.100', 'sealed', [100]],
      ['hookbot.journal', 'active', [101]],
      ['hookbot.journal.next', 'spare', [102]],
    ]);
  });

  it('finds nothing in a folder that does not exist yet', async () => {
    expect(await new SegmentNames(join(dir.path, 'absent', 'hookbot.journal')).read(2)).toEqual([]);
  });
});
