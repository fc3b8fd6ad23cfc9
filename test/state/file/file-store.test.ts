/**
 * What only the embedded backend does: durability, restart, torn tails, refusals, migration,
 * compaction and bounded files. The operations themselves are in contract.test.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { appendFile, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeRecord } from '../../../src/state/file/journal.ts';
import {
  createFileStore,
  SCHEMA_VERSION,
  StateError,
  type Delivery,
  type FileStoreOptions,
  type StateStore,
} from '../../../src/state/index.ts';
import { fakeClock, useTempDir } from '../temp-dir.ts';

const dir = useTempDir();
const files = () => ({
  doc: join(dir.path, 'hookbot.json'),
  journal: join(dir.path, 'hookbot.journal'),
  backup: join(dir.path, 'hookbot.json.bak'),
});

function store(options: FileStoreOptions = {}): StateStore {
  return createFileStore({ path: files().doc, ...options });
}

async function opened(options: FileStoreOptions = {}): Promise<StateStore> {
  const s = store(options);
  await s.open();
  return s;
}

function delivery(key: string): Delivery {
  return {
    key,
    kind: 'Merge Request Hook',
    receivedAt: 1_000,
    headers: { 'x-gitlab-event': 'Merge Request Hook' },
    body: { object_kind: 'merge_request', key, note: 'x'.repeat(200) },
  };
}

/** Accepts the keys, then "crashes": the files stay as they are, nothing is folded. */
async function acceptThenCrash(keys: string[], processed: string[] = []): Promise<Map<string, string>> {
  const s = await opened();
  const ids = new Map<string, string>();
  for (const key of keys) ids.set(key, (await s.accept(delivery(key))).id);
  for (const key of processed) await s.markProcessed(ids.get(key) ?? '');
  await s.close({ compact: false });
  return ids;
}

async function snapshot(paths: string[]): Promise<Record<string, string | null>> {
  const result: Record<string, string | null> = {};
  for (const path of paths)
    result[path] = existsSync(path) ? (await readFile(path)).toString('base64') : null;
  return result;
}

describe('file store durability', () => {
  it('resolves each accept only once its record is in the journal, with one append and fsync per batch', async () => {
    const commits: { records: number; bytes: number; ms: number }[] = [];
    const s = await opened({ maxBatch: 100, onCommit: (sample) => commits.push(sample) });
    const before = s.stats();
    const onDiskAtResolve: boolean[] = [];
    await Promise.all(
      Array.from({ length: 450 }, (_, i) =>
        s.accept(delivery(`k${i}`)).then(({ id }) => {
          onDiskAtResolve.push(readFileSync(files().journal, 'utf8').includes(id));
        }),
      ),
    );
    const after = s.stats();
    expect(onDiskAtResolve).toHaveLength(450);
    expect(onDiskAtResolve.every(Boolean)).toBe(true);
    // 450 accepts issued in one turn: ceil(450 / maxBatch) batches, each one append and one fsync.
    expect(after.commits - before.commits).toBe(5);
    expect(after.fsyncs - before.fsyncs).toBe(5);
    expect(after.journalRecords).toBe(450);
    // Each group commit is reported with its size and duration (the runtime's commit latency metric).
    expect(commits.slice(-5).map((c) => c.records)).toEqual([100, 100, 100, 100, 50]);
    expect(commits.every((c) => c.bytes > 0 && c.ms >= 0)).toBe(true);
    await s.close();
  });

  it('never writes the hook secret header to its files', async () => {
    const s = await opened();
    await s.accept({ ...delivery('a'), headers: { 'X-Gitlab-Token': 'hook-secret-0123456789' } });
    await s.close({ compact: false });
    expect(await readFile(files().journal, 'utf8')).not.toContain('hook-secret');
    const again = await opened();
    await again.close();
    expect(await readFile(files().doc, 'utf8')).not.toContain('hook-secret');
  });

  it('a restart replays the pending inbox in acceptance order', async () => {
    const ids = await acceptThenCrash(['a', 'b', 'c', 'd'], ['b']);
    const s = await opened();
    expect(s.pending().map((e) => [e.key, e.id])).toEqual([
      ['a', ids.get('a')],
      ['c', ids.get('c')],
      ['d', ids.get('d')],
    ]);
    expect(s.pending()[0]).toMatchObject(delivery('a'));
    await s.close();
  });

  it.each([
    ['text', (json: string): string | Buffer => json],
    ['bytes', (json: string): string | Buffer => Buffer.from(json)],
  ])(
    'keeps a body given as received %s (line breaks and all) and reads back the same body',
    async (_, given) => {
      const body = { object_kind: 'issue', title: 'two\nlines', nested: { list: [1, 2.5, null, 'x'] } };
      const bodyJson = given(JSON.stringify(body, null, 2).replace(/\n/g, '\r\n'));
      const received = Buffer.from(bodyJson);
      const s = await opened();
      const { id } = await s.accept({ ...delivery('text'), body, bodyJson });
      // The caller's bytes are left as they were (line breaks are replaced in a copy).
      expect(Buffer.from(bodyJson).equals(received)).toBe(true);
      expect(s.pending()[0]).toMatchObject({ id, key: 'text', body });
      await s.close({ compact: false });
      // Replayed from the journal (one line per record, so the text's line breaks must not split it)...
      const replayed = await opened();
      expect(replayed.pending()).toEqual([expect.objectContaining({ id, key: 'text', body })]);
      await replayed.compact();
      await replayed.close();
      // ...and read from the compacted document.
      const compacted = await opened();
      expect(compacted.pending()).toEqual([expect.objectContaining({ id, key: 'text', body })]);
      await compacted.close();
    },
  );
  it('a processed delivery stays processed and its key de-duplicates after restarts and compaction', async () => {
    const ids = await acceptThenCrash(['a', 'b'], ['a']);
    for (const round of ['replayed', 'compacted']) {
      const s = await opened();
      expect(
        s.pending().map((e) => e.key),
        round,
      ).toEqual(['b']);
      expect(await s.accept(delivery('a')), round).toEqual({ id: ids.get('a'), duplicate: true });
      await s.close({ compact: round === 'replayed' });
    }
  });

  it('reopening replays outbox, watches, schedules, approvals and decisions', async () => {
    const clock = fakeClock();
    const s = await opened({ now: clock.read });
    await s.putAction({ id: 'x', itemKey: 'i', rule: 'r', call: { m: 'PUT' } });
    await s.failAction('x', { error: '502', retryable: true, nextTryAt: clock.now + 10 });
    await s.putAction({ id: 'y', itemKey: 'i', rule: 'r', call: null });
    await s.parkAction('y', 'five failures');
    await s.watch({
      itemKey: 'w',
      project: 'p',
      mrId: 3,
      headSha: 'abc',
      rule: 'r',
      required: ['ci'],
      since: 1,
    });
    await s.setNextRun('stale', 'acme/web', 77);
    await s.setLastSuccess('reconcile', 66);
    await s.pauseRule('r', 'too many');
    await s.recordDecision('i', { verdict: 'skip' });
    const expected = {
      action: s.getAction('x'),
      parked: s.listParked(),
      watched: s.watched(),
      recent: s.recentDecisions(),
    };
    await s.close({ compact: false });
    const again = await opened({ now: clock.read });
    expect({
      action: again.getAction('x'),
      parked: again.listParked(),
      watched: again.watched(),
      recent: again.recentDecisions(),
    }).toEqual(expected);
    expect([again.nextRun('stale', 'acme/web'), again.lastSuccess('reconcile')]).toEqual([77, 66]);
    expect(again.pausedRules()).toEqual([{ rule: 'r', reason: 'too many', at: clock.now }]);
    await again.close();
  });
});

describe('file store torn journal tail', () => {
  it.each([
    ['an unterminated half line', '{"c":"1234abcd","s":4,"m":{"op":"acc'],
    ['zeros the crash left where a write was due', '\0'.repeat(600)],
    ['a damaged last line', '{"c":"00000000","s":4,"m":{"op":"processed","id":"x"}}\n'],
    ['a complete record without its newline', encodeRecord(4, '{"op":"processed","id":"x"}').trimEnd()],
  ])('%s is cut off and everything before it replays', async (_name, tail) => {
    const ids = await acceptThenCrash(['a', 'b', 'c']);
    const goodBytes = (await readFile(files().journal)).length;
    await appendFile(files().journal, tail);
    const warnings: unknown[] = [];
    const s = await opened({ log: { info: () => {}, warn: (obj: unknown) => void warnings.push(obj) } });
    expect(s.pending().map((e) => e.id)).toEqual([...ids.values()]);
    expect((await readFile(files().journal)).length).toBe(goodBytes);
    expect(warnings).toEqual([{ path: files().journal, bytes: Buffer.byteLength(tail) }]);
    // Appends continue cleanly after the cut.
    const d = await s.accept(delivery('d'));
    await s.close({ compact: false });
    const again = await opened();
    expect(again.pending().map((e) => e.id)).toEqual([...ids.values(), d.id]);
    await again.close();
  });

  it('a journal whose only line is a torn header starts empty', async () => {
    await writeFile(files().journal, '{"journal":"hookbot-jou');
    const s = await opened();
    expect(s.pending()).toEqual([]);
    await s.accept(delivery('a'));
    await s.close({ compact: false });
    const again = await opened();
    expect(again.pending().map((e) => e.key)).toEqual(['a']);
    await again.close();
  });
});

describe('file store refuses files it cannot trust, naming them and leaving them untouched', () => {
  type Damage = [
    name: string,
    damage: () => Promise<void>,
    code: string,
    file: 'doc' | 'journal',
    message: RegExp,
  ];
  const damages: Damage[] = [
    [
      'a damaged line in the middle of the journal',
      async () => {
        const lines = (await readFile(files().journal, 'utf8')).split('\n');
        lines[2] = (lines[2] ?? '').replace('merge_request', 'merge_requesT');
        await writeFile(files().journal, lines.join('\n'));
      },
      'corrupt',
      'journal',
      /line 3 is damaged/,
    ],
    [
      'a journal line this version does not understand',
      async () => {
        const lines = (await readFile(files().journal, 'utf8')).split('\n');
        lines.splice(4, 0, encodeRecord(4, '{"op":"teleport","to":"mars"}').trimEnd());
        await writeFile(files().journal, lines.slice(0, 5).join('\n') + '\n');
      },
      'corrupt',
      'journal',
      /line 5 holds a record this hookbot does not understand \(op "teleport"/,
    ],
    [
      'records out of sequence',
      async () => {
        const lines = (await readFile(files().journal, 'utf8')).split('\n');
        await writeFile(files().journal, [lines[0], lines[1], lines[3], ''].join('\n'));
      },
      'corrupt',
      'journal',
      /holds record 3 after record 1/,
    ],
    [
      'a journal from a newer hookbot',
      async () => {
        const text = await readFile(files().journal, 'utf8');
        await writeFile(files().journal, text.replace(`"version":${SCHEMA_VERSION}`, '"version":99'));
      },
      'newer_version',
      'journal',
      /newer hookbot \(schema version 99/,
    ],
    [
      'a document that is not JSON',
      async () => writeFile(files().doc, '{"version":2,"seq":'),
      'corrupt',
      'doc',
      /is not valid JSON/,
    ],
    [
      'a document of the wrong shape',
      async () => writeFile(files().doc, JSON.stringify({ version: SCHEMA_VERSION, seq: 0, inbox: 'nope' })),
      'corrupt',
      'doc',
      /does not have the shape of a version 2 document at inbox/,
    ],
    [
      'a document from a newer hookbot',
      async () =>
        writeFile(files().doc, JSON.stringify({ version: SCHEMA_VERSION + 1, seq: 0, future: true })),
      'newer_version',
      'doc',
      /newer hookbot \(schema version 3; this one knows up to 2\)/,
    ],
    [
      'a document that is a bare number',
      async () => writeFile(files().doc, '0'),
      'corrupt',
      'doc',
      /not a JSON object/,
    ],
    [
      'a journal that continues a document that is missing',
      async () => {
        const s = await opened();
        await s.compact();
        await s.accept(delivery('later'));
        await s.close({ compact: false });
        await rm(files().doc);
      },
      'mismatch',
      'journal',
      /continues from record 3 but the document .* is missing/,
    ],
  ];

  it.each(damages)('%s', async (_name, damage, code, file, message) => {
    await acceptThenCrash(['a', 'b', 'c']);
    await damage();
    const paths = [files().doc, files().journal, files().backup];
    const before = await snapshot(paths);
    const s = store();
    const error: unknown = await s.open().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StateError);
    const refusal = error as StateError;
    expect(refusal.code).toBe(code);
    expect(refusal.path).toBe(files()[file]);
    expect(refusal.message).toContain(files()[file]);
    expect(refusal.message).toMatch(message);
    expect(refusal.message).toMatch(/refusing to start and leaving it untouched/);
    expect(await snapshot(paths)).toEqual(before);
    expect(await readdir(dir.path)).not.toContain('.hookbot.json.tmp');
  });
});

describe('file store migration', () => {
  it('brings a version 1 document up to date and keeps the original as the backup', async () => {
    const v1 = {
      version: 1,
      seq: 7,
      inbox: [{ ...delivery('old'), id: 'd-1', acceptedAt: 5 }],
      dedup: [{ key: 'old', id: 'd-1', expiresAt: Date.now() + 3_600_000 }],
      outbox: [{ id: 'act', itemKey: 'i', rule: 'r', call: {}, attempts: 2, nextTryAt: 9, createdAt: 1 }],
      watches: [],
      schedules: { nextRuns: [{ sweep: 'stale', project: '', at: 123 }] },
      decisions: { latest: [], recent: [] },
    };
    const original = JSON.stringify(v1);
    await writeFile(files().doc, original);
    const infos: unknown[] = [];
    const s = await opened({ log: { info: (obj: unknown) => void infos.push(obj), warn: () => {} } });
    expect(s.pending().map((e) => e.id)).toEqual(['d-1']);
    expect(s.getAction('act')?.attempts).toBe(2);
    expect(s.nextRun('stale')).toBe(123);
    expect([s.pausedRules(), s.listParked(), s.lastSuccess('stale')]).toEqual([[], [], undefined]);
    expect(infos).toEqual([{ path: files().doc, from: 1, to: SCHEMA_VERSION, backup: files().backup }]);
    expect(JSON.parse(await readFile(files().doc, 'utf8'))).toMatchObject({
      version: SCHEMA_VERSION,
      seq: 7,
    });
    expect(await readFile(files().backup, 'utf8')).toBe(original);
    // The new records continue the old sequence.
    await s.accept(delivery('new'));
    await s.close({ compact: false });
    const again = await opened();
    expect(again.pending().map((e) => e.key)).toEqual(['old', 'new']);
    await again.close();
  });
});

describe('file store: decisions of the previous version', () => {
  it('a document written before decision history opens with its latest decisions as their history, and an older journal replays', async () => {
    // As the previous version wrote it: decisions without id, no `decisions.history`; and a journal
    // record of a decision in that shape too, after the document.
    const old = (itemKey: string, verdict: string, at: number) => ({ itemKey, at, decision: { verdict } });
    const previous = {
      version: 2,
      seq: 1,
      inbox: [],
      dedup: [],
      outbox: [],
      parked: [],
      watches: [],
      queue: [],
      schedules: { nextRuns: [], lastSuccess: [] },
      pausedRules: [],
      decisions: { latest: [old('mr:1', 'merged', 10), old('issue:2', 'labelled', 20)], recent: [] },
      dedupFiles: [],
    };
    await writeFile(files().doc, JSON.stringify(previous));
    await writeFile(
      files().journal,
      `${JSON.stringify({ journal: 'hookbot-journal', version: SCHEMA_VERSION })}\n${encodeRecord(
        2,
        JSON.stringify({
          op: 'decision',
          record: old('issue:3', 'commented', 30),
        }),
      )}`,
    );
    const s = await opened();
    expect(s.latestDecision('mr:1')).toEqual(old('mr:1', 'merged', 10));
    expect(await s.keptDecisions('mr:1')).toEqual([old('mr:1', 'merged', 10)]);
    expect(await s.keptDecisions('issue:2')).toEqual([old('issue:2', 'labelled', 20)]);
    expect(await s.keptDecisions('issue:3')).toEqual([old('issue:3', 'commented', 30)]);
    await s.recordDecision('mr:1', { verdict: 'echo' });
    await s.close();
    // Written in the new shape: the history is there after a restart, the older record as it was.
    const document = JSON.parse(await readFile(files().doc, 'utf8'));
    expect(document.decisions.history).toEqual([
      { itemKey: 'issue:2', earlier: [] },
      { itemKey: 'issue:3', earlier: [] },
      { itemKey: 'mr:1', earlier: [old('mr:1', 'merged', 10)] },
    ]);
    const again = await opened();
    expect((await again.keptDecisions('mr:1')).map((d) => d.decision)).toEqual([
      { verdict: 'echo' },
      { verdict: 'merged' },
    ]);
    await again.close();
  });
});

describe('file store compaction', () => {
  it('folds the journal into the document, keeps the previous document as the backup, leaves no temp file', async () => {
    const s = await opened();
    await s.accept(delivery('a'));
    await s.compact();
    expect(existsSync(files().backup)).toBe(false);
    const first = await readFile(files().doc, 'utf8');
    expect(JSON.parse(first).inbox.map((e: { key: string }) => e.key)).toEqual(['a']);
    expect(s.stats()).toMatchObject({
      journalRecords: 0,
      compactions: 1,
      documentBytes: Buffer.byteLength(first),
    });

    await s.accept(delivery('b'));
    await s.compact();
    expect(await readFile(files().backup, 'utf8')).toBe(first);
    const second = JSON.parse(await readFile(files().doc, 'utf8'));
    expect(second.inbox.map((e: { key: string }) => e.key)).toEqual(['a', 'b']);
    expect((await readFile(files().journal, 'utf8')).split('\n')).toEqual([
      JSON.stringify({ journal: 'hookbot-journal', version: SCHEMA_VERSION }),
      '',
    ]);
    await s.close();
    expect((await readdir(dir.path)).sort()).toEqual(['hookbot.journal', 'hookbot.json', 'hookbot.json.bak']);
  });

  it('a crash after writing the document but before emptying the journal replays nothing twice', async () => {
    const s = await opened();
    const a = await s.accept(delivery('a'));
    await s.accept(delivery('b'));
    await s.markProcessed(a.id);
    const journalBefore = await readFile(files().journal);
    await s.compact();
    await s.close({ compact: false });
    await writeFile(files().journal, journalBefore);

    const again = await opened();
    expect(again.pending().map((e) => e.key)).toEqual(['b']);
    await again.accept(delivery('c'));
    await again.close({ compact: false });
    const third = await opened();
    expect(third.pending().map((e) => e.key)).toEqual(['b', 'c']);
    await third.close();
  });

  it('writes issued while a compaction runs are neither lost nor applied twice', async () => {
    const s = await opened();
    const early = await Promise.all(
      Array.from({ length: 2_500 }, (_, i) => s.accept(delivery(`early-${i}`))),
    );
    const compaction = s.compact();
    // One write per turn of the event loop, so they land before, during (the snapshot is
    // serialised in slices) and after the compaction.
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 1_300; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      const processedId = early[i]?.id;
      writes.push(i < 1_000 && processedId ? s.markProcessed(processedId) : s.accept(delivery(`late-${i}`)));
    }
    await Promise.all([compaction, ...writes]);
    const expected = s.pending().map((e) => e.id);
    expect(expected).toHaveLength(1_800);
    await s.close({ compact: false });
    const again = await opened();
    expect(again.pending().map((e) => e.id)).toEqual(expected);
    await again.close();
  });

  it('ignores and removes the temp files an interrupted compaction left', async () => {
    await acceptThenCrash(['a']);
    await writeFile(join(dir.path, '.hookbot.json.tmp'), '{"half":');
    await writeFile(join(dir.path, '.hookbot.journal.tmp'), 'garbage');
    const s = await opened();
    expect(s.pending().map((e) => e.key)).toEqual(['a']);
    expect(await readdir(dir.path)).toEqual(
      expect.not.arrayContaining(['.hookbot.json.tmp', '.hookbot.journal.tmp']),
    );
    await s.close();
  });

  it('runs by itself once the journal passes the record threshold, and loses nothing', async () => {
    const s = await opened({ compactRecords: 10 });
    const ids: string[] = [];
    const acceptOne = async () => void ids.push((await s.accept(delivery(`k${ids.length}`))).id);
    // Back to back: appends go on while a compaction runs. How many land before its rotation depends
    // on the machine's load (on a busy one, all 25 may), so this part alone fixes only one compaction.
    for (let i = 0; i < 25; i++) await acceptOne();
    await s.flush(); // also waits for a compaction under way; it never starts one
    expect(s.stats().compactions).toBeGreaterThanOrEqual(1);
    expect(s.stats().journalRecords).toBeLessThanOrEqual(10);

    // Past the threshold once more, one accept at a time, each waited out: the next compaction starts
    // by itself on the accept that takes the journal over 10 records, whatever the timing above was.
    const before = s.stats().compactions;
    let more = 0;
    while (s.stats().compactions === before && more < 20) {
      await acceptOne();
      more++;
      await s.flush();
    }
    expect(s.stats().compactions).toBeGreaterThanOrEqual(2);
    expect(more).toBeLessThanOrEqual(11);
    expect(s.stats().journalRecords).toBeLessThanOrEqual(10);
    await s.close({ compact: false });
    const again = await opened();
    expect(again.pending().map((e) => e.id)).toEqual(ids);
    await again.close();
  });

  it('runs by itself once the journal passes the byte threshold', async () => {
    const s = await opened({ compactBytes: 4_096 });
    await Promise.all(Array.from({ length: 30 }, (_, i) => s.accept(delivery(`k${i}`))));
    await s.accept(delivery('last'));
    await s.flush();
    expect(s.stats().compactions).toBeGreaterThanOrEqual(1);
    expect(s.pending()).toHaveLength(31);
    await s.close();
  });
});

describe('file store bounds', () => {
  it('20,000 accept + process cycles leave the files no bigger than after 10,000', async () => {
    const clock = fakeClock();
    const options: FileStoreOptions = {
      now: clock.read,
      dedupTtlMs: 60_000,
      compactRecords: 5_000,
    };
    const sizes: number[] = [];
    const counts: Record<string, number>[] = [];
    let n = 0;
    for (const round of [0, 1]) {
      const s = await opened(options);
      for (let burst = 0; burst < 20; burst++) {
        const accepted = await Promise.all(
          Array.from({ length: 500 }, () => {
            clock.now += 100;
            return s.accept(delivery(`key-${String(n++).padStart(6, '0')}`));
          }),
        );
        await Promise.all(
          accepted
            .map(({ id }, i) => [s.markProcessed(id), s.recordDecision(`item-${i % 700}`, { n })])
            .flat(),
        );
      }
      await s.close();
      sizes.push((await stat(files().doc)).size + (await stat(files().journal)).size);
      const again = await opened(options);
      counts.push({ ...again.stats(), round });
      await again.close();
    }
    expect(n).toBe(20_000);
    for (const c of counts) {
      expect(c).toMatchObject({ inbox: 0, outbox: 0, decisionItems: 500, recentDecisions: 200 });
      // 60 s of keys at one delivery per 100 ms.
      expect(c['dedupKeys']).toBeLessThanOrEqual(600);
    }
    expect(sizes[1]).toBeLessThanOrEqual((sizes[0] ?? 0) * 1.02);
  });
});
