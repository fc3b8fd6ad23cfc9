/**
 * Accepted deliveries are not held in memory once durable: their entry's JSON is read back from the
 * journal segment it was appended to (HeldEntry.locate), taken back into memory before that segment
 * closes, and every read (pending, a delivery's body, the document a compaction writes, a restart)
 * gives the same entry as before.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HeldEntry } from '../../../src/state/held-entry.ts';
import { ACCEPT_PREFIX } from '../../../src/state/held-state-store.ts';
import { encodeLine, JournalWriter, mutationOffset } from '../../../src/state/file/journal.ts';
import { createFileStore, SCHEMA_VERSION, StateError, type Delivery } from '../../../src/state/index.ts';
import { useTempDir } from '../temp-dir.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const dir = useTempDir();

const fields = { id: 'id-1', key: 'key-1', kind: 'merge_request', receivedAt: 1_000 };

/** An accept's line for `entry` (whose JSON is `pieces`), as the file store writes it. */
function acceptLine(seq: number, entry: HeldEntry, pieces: (string | Buffer)[]) {
  return {
    seq,
    data: encodeLine(seq, [ACCEPT_PREFIX, ...pieces, ',"expiresAt":5}']),
    held: { entry, at: mutationOffset(seq) + ACCEPT_PREFIX.length },
  };
}

describe('a held entry once its line is durable', () => {
  it('lets its pieces go and reads the same JSON back, until the segment closes', async () => {
    const writer = await JournalWriter.create(join(dir.path, 'journal'), SCHEMA_VERSION, { fsyncs: 0 });
    const body = Buffer.from('{"object_kind":"merge_request","title":"é ✓"}');
    const pieces = ['{"id":"id-1","key":"key-1","kind":"merge_request","receivedAt":1000,"body":', body, '}'];
    const json = `${pieces[0]}${body.toString('utf8')}}`;
    const first = HeldEntry.fromPieces(fields, pieces, Buffer.byteLength(json));
    const second = HeldEntry.fromPieces({ ...fields, id: 'id-2' }, pieces, Buffer.byteLength(json));

    await writer.append([acceptLine(1, first, pieces), acceptLine(2, second, pieces)]);

    expect(first.resident).toBe(false);
    expect(first.isIn(writer)).toBe(true);
    expect(first.json).toBe(json);
    expect(second.json).toBe(json);
    expect(first.entry).toEqual(JSON.parse(json));

    first.materialize();
    expect(first.resident).toBe(true);
    await writer.close();
    expect(first.json).toBe(json);
    expect(() => second.json).toThrow(StateError);
    expect(() => second.json).toThrow(/is closed/);
  });
});

describe('the file store reading accepted deliveries back', () => {
  const delivery = (n: number): Delivery => {
    // Line breaks between tokens are stored as spaces (the journal is line-based): same JSON value.
    const text = `{"object_kind":"merge_request",\n"n":${n},"note":"${'x'.repeat(3000)}"}`;
    return {
      key: `key-${n}`,
      kind: 'merge_request',
      receivedAt: 1_000 + n,
      headers: { 'x-gitlab-event': 'Merge Request Hook' },
      body: JSON.parse(text),
      bodyJson: Buffer.from(text),
    };
  };
  const bodies = (entries: { body: unknown }[]) => entries.map((entry) => entry.body);
  const expected = (ns: number[]) => ns.map((n) => delivery(n).body);

  it('gives the same bodies after they are durable, across compactions and a restart', async () => {
    const path = join(dir.path, 'hookbot.json');
    // Small segments: the accepts below span several, each switch closing the one before.
    const store = createFileStore({ path, compactBytes: 16 * 1024 });
    await store.open();
    const ids: string[] = [];
    for (let n = 0; n < 20; n++) ids.push((await store.accept(delivery(n))).id);
    // A compaction starts in the background once a segment is past compactBytes: waited for, not
    // assumed done when the accepts return (on a busy machine it was not yet).
    await waitFor(() => (store.stats().compactions > 0 ? true : undefined), 20_000, 'a compaction');
    await store.flush();
    expect(bodies(store.pending())).toEqual(expected([...Array(20).keys()]));

    for (const id of ids.slice(0, 10)) await store.markProcessed(id);
    await store.compact();
    expect(bodies(store.pending())).toEqual(expected([...Array(20).keys()].slice(10)));
    const [first] = store.pendingDeliveries();
    expect(first!.body).toEqual(delivery(10).body);
    await store.close();

    const reopened = createFileStore({ path });
    await reopened.open();
    expect(bodies(reopened.pending())).toEqual(expected([...Array(20).keys()].slice(10)));
    await reopened.close();
  });
});
