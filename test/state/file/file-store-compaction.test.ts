/**
 * Compaction by journal rotation: writes never wait for it, a crash after any of its steps loses
 * nothing acknowledged, replay reads every segment left, and de-dup keys live in de-dup files so the
 * document stays small. The first compaction tests (and the ones every backend shares) are in
 * file-store.test.ts and contract.test.ts.
 */
import { cpSync, existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createObservedFileStore,
  type CompactionStep,
  type FileStoreInternals,
} from '../../../src/state/file/file-store.ts';
import { headerLine } from '../../../src/state/file/journal.ts';
import {
  createFileStore,
  SCHEMA_VERSION,
  StateError,
  type Delivery,
  type FileStoreOptions,
  type StateStore,
} from '../../../src/state/index.ts';
import { fakeClock, useTempDir, type FakeClock } from '../temp-dir.ts';

const dir = useTempDir();
const docIn = (folder: string) => join(folder, 'hookbot.json');
const journalIn = (folder: string) => join(folder, 'hookbot.journal');

function delivery(key: string): Delivery {
  return {
    key,
    kind: 'Merge Request Hook',
    receivedAt: 1_000,
    headers: { 'x-gitlab-event': 'Merge Request Hook' },
    body: { object_kind: 'merge_request', key, marker: `body-of-${key}`, note: 'x'.repeat(300) },
  };
}

async function opened(folder: string, options: FileStoreOptions = {}, internals?: FileStoreInternals) {
  const path = docIn(folder);
  const store: StateStore =
    internals === undefined
      ? createFileStore({ path, ...options })
      : createObservedFileStore({ path, ...options }, internals);
  await store.open();
  return store;
}

/** A promise and the function that settles it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

function track(promise: Promise<unknown>): { settled: boolean } {
  const state = { settled: false };
  void promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** The files a folder holds, sorted; segment and de-dup file numbers are shown as N. */
function layout(folder: string): string[] {
  return readdirSync(folder)
    .map((name) => name.replace(/^(hookbot\.journal|hookbot\.dedup)\.[0-9]+$/, '$1.N'))
    .sort();
}

/** Writes the deliveries have made that resolved, in the order they resolved. */
class Acks {
  readonly accepted: [key: string, id: string][] = [];
  /** Accepted deliveries never to be marked processed: they must stay pending. */
  readonly kept = new Set<string>();
  /** Processed marks that resolved. */
  readonly processed = new Set<string>();

  snapshot(): Acks {
    const copy = new Acks();
    copy.accepted.push(...this.accepted);
    for (const id of this.kept) copy.kept.add(id);
    for (const id of this.processed) copy.processed.add(id);
    return copy;
  }

  /** Accepts `key` and, if `process`, marks it processed; records each write once it resolved. */
  async deliver(store: StateStore, key: string, process: boolean): Promise<void> {
    const { id } = await store.accept(delivery(key));
    this.accepted.push([key, id]);
    if (!process) {
      this.kept.add(id);
      return;
    }
    await store.markProcessed(id);
    this.processed.add(id);
  }
}

/**
 * Every acknowledged write is in `store`: accepted keys de-duplicate to their ids, the deliveries
 * never marked processed are pending in acceptance order, those whose mark resolved are not. (A mark
 * issued but not acknowledged at a crash may or may not have landed.)
 */
async function expectAllAcknowledged(store: StateStore, acks: Acks): Promise<void> {
  const pending = store.pending().map((e) => e.id);
  const kept = acks.accepted.map(([, id]) => id).filter((id) => acks.kept.has(id));
  expect(pending.filter((id) => acks.kept.has(id))).toEqual(kept);
  expect(pending.filter((id) => acks.processed.has(id))).toEqual([]);
  const answers = [];
  for (const [key] of acks.accepted) answers.push(await store.accept(delivery(key)));
  expect(answers).toEqual(acks.accepted.map(([, id]) => ({ id, duplicate: true })));
}

describe('compaction never holds writes up', () => {
  const steps: CompactionStep[] = ['spare', 'sealed', 'switched', 'dedup-written', 'document-written'];

  it.each(steps)('writes resolve while a compaction is held up after the step "%s"', async (step) => {
    const held = gate();
    const reached = gate();
    const s = await opened(
      dir.path,
      { dedupFileKeys: 5 },
      {
        onStep: async (at) => {
          if (at !== step) return;
          reached.open();
          await held.promise;
        },
      },
    );
    const acks = new Acks();
    for (let i = 0; i < 10; i++) await acks.deliver(s, `before-${i}`, i % 2 === 0);
    const compaction = s.compact();
    const compacted = track(compaction);
    await reached.promise;
    // If these waited for the compaction, the test would time out here.
    await Promise.all(Array.from({ length: 30 }, (_, i) => acks.deliver(s, `during-${i}`, i % 3 === 0)));
    expect(compacted.settled).toBe(false);
    held.open();
    await compaction;
    await s.close({ compact: false });
    const again = await opened(dir.path);
    await expectAllAcknowledged(again, acks);
    await again.close();
  });

  it('a compaction started by the threshold runs in the background; the journal grows meanwhile and is compacted again', async () => {
    const held = gate();
    const switched = gate();
    let holding = true;
    const s = await opened(
      dir.path,
      { compactRecords: 20 },
      {
        onStep: async (at) => {
          if (at !== 'switched' || !holding) return;
          switched.open();
          await held.promise;
        },
      },
    );
    const acks = new Acks();
    for (let i = 0; i < 21; i++) await acks.deliver(s, `k${i}`, false);
    // The 21st record started a compaction; it switched segments and is held there.
    await switched.promise;
    for (let i = 21; i < 60; i++) await acks.deliver(s, `k${i}`, false);
    expect(s.stats()).toMatchObject({ compactions: 0, journalRecords: 60 });
    holding = false;
    held.open();
    await s.flush();
    // The new segment passed the threshold meanwhile: a second compaction followed the first.
    expect(s.stats().compactions).toBe(2);
    expect(s.stats().journalRecords).toBe(0);
    await s.close({ compact: false });
    const again = await opened(dir.path);
    await expectAllAcknowledged(again, acks);
    await again.close();
  });
});

describe('a crash during a compaction loses nothing acknowledged', () => {
  const steps: CompactionStep[] = [
    'spare',
    'sealed',
    'switched',
    'dedup-written',
    'document-written',
    'cleaned',
  ];

  /**
   * Runs deliveries around a compaction and copies the folder right after `step`, as a crash of the
   * process there would leave it (what the kernel had), with the writes acknowledged by then.
   */
  async function crashAfter(step: CompactionStep): Promise<{ crashed: string; acks: Acks }> {
    const live = join(dir.path, 'live');
    const crashed = join(dir.path, 'crashed');
    const acks = new Acks();
    let atCrash: Acks | undefined;
    const s = await opened(
      live,
      { dedupFileKeys: 5 },
      {
        onStep: (at) => {
          if (at !== step || atCrash !== undefined) return;
          cpSync(live, crashed, { recursive: true });
          atCrash = acks.snapshot();
        },
      },
    );
    for (let i = 0; i < 20; i++) await acks.deliver(s, `early-${i}`, i % 2 === 0);
    const compaction = s.compact();
    // One delivery per turn of the event loop, so they land before, during and after each step.
    const deliveries: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) {
      await nextTurn();
      deliveries.push(acks.deliver(s, `late-${i}`, i % 2 === 0));
    }
    await Promise.all([compaction, ...deliveries]);
    await s.close();
    if (atCrash === undefined) throw new Error(`the compaction never reached ${step}`);
    return { crashed, acks: atCrash };
  }

  it.each(steps)(
    'after the step "%s": reopening finds every acknowledged write and folds what was left',
    async (step) => {
      const { crashed, acks } = await crashAfter(step);
      const again = await opened(crashed, { dedupFileKeys: 5 });
      await expectAllAcknowledged(again, acks);
      // Opening finished the interrupted compaction: no sealed segment, no spare, no temp file left
      // (the lock is the open store's own).
      expect(
        layout(crashed).filter(
          (name) => !/^hookbot\.(json|journal|json\.bak|json\.lock|dedup\.N)$/.test(name),
        ),
      ).toEqual([]);
      // And appends continue cleanly.
      const more = new Acks();
      await more.deliver(again, 'after-restart', false);
      await again.close({ compact: false });
      const third = await opened(crashed);
      await expectAllAcknowledged(third, acks);
      await expectAllAcknowledged(third, more);
      await third.close();
    },
  );

  it('a power cut that lost the rename switching segments: the spare, holding records, is replayed last', async () => {
    const { crashed, acks } = await crashAfter('switched');
    // The switch renamed the spare to the active name without a folder sync: undo it, as the power cut may have.
    await rename(journalIn(crashed), `${journalIn(crashed)}.next`);
    const again = await opened(crashed);
    await expectAllAcknowledged(again, acks);
    expect(layout(crashed)).not.toContain('hookbot.journal.next');
    await again.close();
  });

  it('a crash after the spare was made, before sealing: the empty spare is dropped', async () => {
    const acks = new Acks();
    const s = await opened(dir.path);
    for (let i = 0; i < 5; i++) await acks.deliver(s, `k${i}`, i === 0);
    await s.close({ compact: false });
    await writeFile(`${journalIn(dir.path)}.next`, headerLine(SCHEMA_VERSION));
    const again = await opened(dir.path);
    await expectAllAcknowledged(again, acks);
    expect(layout(dir.path)).toEqual(['hookbot.journal', 'hookbot.json.lock']);
    await again.close();
  });
});

describe('opening with journal segments left', () => {
  /** Accepts deliveries (processing some), then cuts the single journal into sealed segments of `per` records. */
  async function splitJournal(count: number, per: number): Promise<{ acks: Acks; segments: number }> {
    const acks = new Acks();
    const s = await opened(dir.path);
    for (let i = 0; i < count; i++) await acks.deliver(s, `k${i}`, i % 3 === 0);
    await s.close({ compact: false });
    const [header, ...records] = (await readFile(journalIn(dir.path), 'utf8')).split('\n').slice(0, -1);
    let segments = 0;
    for (let start = 0; start < records.length; start += per) {
      const chunk = records.slice(start, start + per);
      const last = start + per >= records.length;
      const path = last ? journalIn(dir.path) : `${journalIn(dir.path)}.${start + 1}`;
      await writeFile(path, [header, ...chunk, ''].join('\n'));
      segments++;
    }
    return { acks, segments };
  }

  it('replays 60 segments in order and folds them into the document', async () => {
    const { acks, segments } = await splitJournal(100, 2);
    expect(segments).toBeGreaterThanOrEqual(60);
    const s = await opened(dir.path);
    await expectAllAcknowledged(s, acks);
    expect(layout(dir.path)).toEqual(['hookbot.journal', 'hookbot.json', 'hookbot.json.lock']);
    expect(s.stats().compactions).toBe(1);
    await s.close({ compact: false });
    const again = await opened(dir.path);
    await expectAllAcknowledged(again, acks);
    await again.close();
  });

  it('replays sealed segments the document already holds in part', async () => {
    const acks = new Acks();
    const s = await opened(dir.path);
    for (let i = 0; i < 6; i++) await acks.deliver(s, `k${i}`, false);
    const sealedBefore = await readFile(journalIn(dir.path));
    await s.compact();
    for (let i = 6; i < 9; i++) await acks.deliver(s, `k${i}`, i === 7);
    await s.close({ compact: false });
    // A crash that undid the deletion of the folded segment: it comes back next to the document holding it.
    await writeFile(`${journalIn(dir.path)}.1`, sealedBefore);
    const again = await opened(dir.path);
    await expectAllAcknowledged(again, acks);
    expect(layout(dir.path)).not.toContain('hookbot.journal.N');
    await again.close();
  });

  type Damage = [name: string, damage: () => Promise<void>, code: string, file: string, message: RegExp];
  const damages: Damage[] = [
    [
      'a segment missing between two others',
      async () => rm(`${journalIn(dir.path)}.5`),
      'mismatch',
      'hookbot.journal.9',
      /continues from record 8 but .*hookbot\.journal\.1 ends at record 4/,
    ],
    [
      'a segment with a damaged line, followed by another segment',
      async () => {
        const path = `${journalIn(dir.path)}.5`;
        const text = await readFile(path, 'utf8');
        await writeFile(path, text.replace('merge_request', 'merge_requesT'));
      },
      'corrupt',
      'hookbot.journal.5',
      /line 2 is damaged/,
    ],
    [
      'a segment cut short, followed by another segment',
      async () => {
        const path = `${journalIn(dir.path)}.5`;
        const text = await readFile(path, 'utf8');
        await writeFile(path, text.slice(0, -10));
      },
      'corrupt',
      'hookbot.journal.5',
      /is cut short, yet .*hookbot\.journal\.9 continues after it/,
    ],
    [
      'a segment that repeats an earlier one',
      async () => writeFile(`${journalIn(dir.path)}.9`, await readFile(`${journalIn(dir.path)}.5`)),
      'corrupt',
      'hookbot.journal.9',
      /holds record 5 after record 8 of .*hookbot\.journal\.5/,
    ],
    [
      'a segment from a newer hookbot',
      async () => {
        const path = `${journalIn(dir.path)}.5`;
        const text = await readFile(path, 'utf8');
        await writeFile(path, text.replace(`"version":${SCHEMA_VERSION}`, '"version":99'));
      },
      'newer_version',
      'hookbot.journal.5',
      /newer hookbot \(schema version 99/,
    ],
  ];

  it.each(damages)(
    'refuses %s, naming the file and leaving every file untouched',
    async (_name, damage, code, file, message) => {
      // Records 1-16 in hookbot.journal.1, .5, .9 and the active segment (13-16).
      await splitJournal(12, 4);
      await damage();
      const before = await folderSnapshot(dir.path);
      const error = await openError(dir.path);
      expect(error.code).toBe(code);
      expect(error.path).toBe(join(dir.path, file));
      expect(error.message).toMatch(message);
      expect(error.message).toMatch(/refusing to start and leaving it untouched/);
      expect(await folderSnapshot(dir.path)).toEqual(before);
    },
  );
});

describe('de-dup keys in de-dup files', () => {
  const hour = 3_600_000;

  /**
   * Accepts and processes `count` deliveries, one a second of fake time, compacting every 200
   * records (in the background) and once at the end.
   */
  async function run(clock: FakeClock, options: FileStoreOptions, count: number) {
    const s = await opened(dir.path, { compactRecords: 200, ...options, now: clock.read });
    const ids = new Map<string, string>();
    // Fifty at a time, as concurrent deliveries arrive; keys keep their order.
    for (let start = 0; start < count; start += 50) {
      const keys = Array.from({ length: Math.min(50, count - start) }, (_, i) => `key-${start + i}`);
      const accepted = await Promise.all(
        keys.map((key) => {
          clock.now += 1_000;
          return s.accept(delivery(key));
        }),
      );
      accepted.forEach(({ id }, i) => ids.set(keys[i] ?? '', id));
      await Promise.all(accepted.map(({ id }) => s.markProcessed(id)));
    }
    await s.compact();
    return { s, ids };
  }

  async function documentOf(folder: string) {
    return JSON.parse(await readFile(docIn(folder), 'utf8')) as {
      dedup: unknown[];
      dedupFiles: { file: string; keys: number }[];
      inbox: { key: string }[];
    };
  }

  it('keeps the document small while the window fills, and every key counts after a restart', async () => {
    const clock = fakeClock();
    const options = { dedupFileKeys: 100 };
    const { s, ids } = await run(clock, options, 1_000);
    const doc = await documentOf(dir.path);
    // The keys went to de-dup files a compaction at a time; at most a few stay inline.
    expect(doc.dedup.length).toBeLessThan(100);
    expect(doc.dedupFiles.reduce((sum, f) => sum + f.keys, 0) + doc.dedup.length).toBe(1_000);
    expect((await readFile(docIn(dir.path))).length).toBeLessThan(20_000);
    expect(s.stats().dedupKeys).toBe(1_000);
    await s.close();
    const again = await opened(dir.path, { ...options, now: clock.read });
    for (const [key, id] of ids) expect(await again.accept(delivery(key))).toEqual({ id, duplicate: true });
    expect(again.pending()).toEqual([]);
    await again.close();
  });

  it('a compaction writes only the keys that came since the previous one', async () => {
    const clock = fakeClock();
    // No compaction by threshold: the 250 keys go to one file at the end.
    const { s } = await run(clock, { dedupFileKeys: 100, compactRecords: 10_000 }, 250);
    const first = await documentOf(dir.path);
    expect([first.dedupFiles.map((f) => f.keys), first.dedup]).toEqual([[250], []]);
    for (let i = 0; i < 3; i++) await s.markProcessed((await s.accept(delivery(`new-${i}`))).id);
    await s.compact();
    const second = await documentOf(dir.path);
    expect(second.dedupFiles).toEqual(first.dedupFiles);
    expect(second.dedup.map((e) => (e as { key: string }).key)).toEqual(['new-0', 'new-1', 'new-2']);
    await s.close();
  });

  const dedupFilesIn = async (folder: string) =>
    (await readdir(folder)).filter((name) => /^hookbot\.dedup\.\d+/.test(name)).sort();

  it('deletes a de-dup file at the first compaction after its keys expired, though the backup names it', async () => {
    const clock = fakeClock();
    const options = { dedupFileKeys: 100, dedupTtlMs: hour };
    const { s, ids } = await run(clock, options, 300);
    expect(layout(dir.path)).toContain('hookbot.dedup.N');
    clock.now += hour;
    await s.accept(delivery('after-the-hour'));
    await s.compact();
    expect((await documentOf(dir.path)).dedupFiles).toEqual([]);
    expect(await dedupFilesIn(dir.path)).toEqual([]);
    expect(s.stats().dedupKeys).toBe(1);
    await s.close();
    const again = await opened(dir.path, { ...options, now: clock.read });
    expect((await again.accept(delivery([...ids.keys()][0] ?? ''))).duplicate).toBe(false);
    await again.close();
  });

  it('restores a backup that names de-dup files deleted since because their keys expired', async () => {
    const clock = fakeClock();
    const options = { dedupFileKeys: 100, dedupTtlMs: hour };
    const { s } = await run(clock, options, 300);
    const named = (await documentOf(dir.path)).dedupFiles.map((f) => f.file);
    expect(named.length).toBeGreaterThan(0);
    clock.now += hour;
    await s.accept(delivery('after-the-hour'));
    await s.compact();
    await s.close();
    // The backup names the deleted files; an operator restores it by hand.
    const backup = JSON.parse(await readFile(`${docIn(dir.path)}.bak`, 'utf8')) as {
      dedupFiles: { file: string }[];
    };
    expect(backup.dedupFiles.map((f) => f.file)).toEqual(named);
    await rename(`${docIn(dir.path)}.bak`, docIn(dir.path));
    await rm(journalIn(dir.path), { force: true });
    const again = await opened(dir.path, { ...options, now: clock.read });
    expect(again.stats().dedupKeys).toBe(0);
    expect((await again.accept(delivery('key-299'))).duplicate).toBe(false);
    await again.close();
  });

  it('a stop folds once the keys of a de-dup file expired, with nothing written since the last compaction', async () => {
    const clock = fakeClock();
    const options = { dedupFileKeys: 100, dedupTtlMs: hour };
    const { s } = await run(clock, options, 300);
    await s.close();
    const before = await dedupFilesIn(dir.path);
    expect(before.length).toBeGreaterThan(0);
    // A restart and a stop with no write in between, the keys expired meanwhile.
    const again = await opened(dir.path, { ...options, now: clock.read });
    clock.now += hour;
    await again.close();
    expect((await documentOf(dir.path)).dedupFiles).toEqual([]);
    expect(await dedupFilesIn(dir.path)).toEqual([]);
  });

  it('a stop with nothing written and no key expired leaves the files as they are', async () => {
    const clock = fakeClock();
    const options = { dedupFileKeys: 100, dedupTtlMs: hour };
    const { s } = await run(clock, options, 300);
    await s.close();
    const document = await readFile(docIn(dir.path), 'utf8');
    const again = await opened(dir.path, { ...options, now: clock.read });
    await again.close();
    expect(await readFile(docIn(dir.path), 'utf8')).toBe(document);
  });

  it('drops de-dup files that newer keys push out of the bound, and the newest keys still count after a restart', async () => {
    const clock = fakeClock();
    const options = { dedupFileKeys: 100, maxDedupKeys: 250 };
    const { s, ids } = await run(clock, options, 1_000);
    await s.compact();
    const doc = await documentOf(dir.path);
    expect(doc.dedupFiles.reduce((sum, f) => sum + f.keys, 0)).toBeLessThanOrEqual(250 + 200);
    await s.close();
    const again = await opened(dir.path, { ...options, now: clock.read });
    expect(again.stats().dedupKeys).toBe(250);
    const newest = [...ids].slice(-250);
    for (const [key, id] of newest)
      expect(await again.accept(delivery(key))).toEqual({ id, duplicate: true });
    await again.close();
  });

  it('carries only pending deliveries, with their bodies, into the document', async () => {
    const s = await opened(dir.path);
    const ids = [];
    for (const key of ['a', 'b', 'c']) ids.push((await s.accept(delivery(key))).id);
    await s.markProcessed(ids[0] ?? '');
    await s.markProcessed(ids[2] ?? '');
    await s.compact();
    const text = await readFile(docIn(dir.path), 'utf8');
    expect(JSON.parse(text).inbox.map((e: { key: string }) => e.key)).toEqual(['b']);
    expect(text).toContain('body-of-b');
    expect(text).not.toContain('body-of-a');
    expect(text).not.toContain('body-of-c');
    await s.close();
  });

  it('keeps the previous document as the backup, also when the backup is in another folder', async () => {
    const backupPath = join(dir.path, 'backups', 'state.json.bak');
    await mkdir(join(dir.path, 'backups'));
    const s = await opened(dir.path, { backupPath });
    await s.accept(delivery('a'));
    await s.compact();
    const first = await readFile(docIn(dir.path), 'utf8');
    await s.accept(delivery('b'));
    await s.compact();
    expect(await readFile(backupPath, 'utf8')).toBe(first);
    // The backup is its own file: the next replacement of the document leaves it as it was.
    await s.accept(delivery('c'));
    await s.compact();
    expect(JSON.parse(await readFile(backupPath, 'utf8')).inbox.map((e: { key: string }) => e.key)).toEqual([
      'a',
      'b',
    ]);
    await s.close();
  });

  it('moves the keys of a document written before de-dup files existed into a de-dup file', async () => {
    const expiresAt = Date.now() + hour;
    const legacy = {
      version: SCHEMA_VERSION,
      seq: 0,
      inbox: [],
      dedup: Array.from({ length: 1_500 }, (_, i) => ({ key: `old-${i}`, id: `id-${i}`, expiresAt })),
      outbox: [],
      parked: [],
      watches: [],
      schedules: { nextRuns: [], lastSuccess: [] },
      pausedRules: [],
      decisions: { latest: [], recent: [] },
    };
    await writeFile(docIn(dir.path), JSON.stringify(legacy));
    const s = await opened(dir.path);
    expect(await s.accept(delivery('old-7'))).toEqual({ id: 'id-7', duplicate: true });
    await s.compact();
    const doc = await documentOf(dir.path);
    expect(doc.dedup).toEqual([]);
    expect(doc.dedupFiles.map((f) => f.keys)).toEqual([1_500]);
    await s.close();
    const again = await opened(dir.path);
    expect(await again.accept(delivery('old-1499'))).toEqual({ id: 'id-1499', duplicate: true });
    await again.close();
  });

  it('removes a de-dup file a crash left before any document named it', async () => {
    const clock = fakeClock();
    const { s } = await run(clock, { dedupFileKeys: 100 }, 300);
    await s.close();
    await writeFile(join(dir.path, 'hookbot.dedup.999'), '{"dedup":"hookbot-dedup","version":1,"keys":[]}\n');
    await writeFile(join(dir.path, '.hookbot.dedup.1000.tmp'), 'half');
    const named = (await documentOf(dir.path)).dedupFiles.map((f) => f.file);
    // Opened while the keys count: a file whose keys all expired goes whether named or not.
    const again = await opened(dir.path, { now: clock.read });
    const left = (await readdir(dir.path)).filter((name) => name.includes('dedup'));
    expect(left.sort()).toEqual([...named].sort());
    await again.close();
  });

  it('starts without the keys of a de-dup file emptied by hand, and says so', async () => {
    const clock = fakeClock();
    const options = { dedupFileKeys: 100 };
    const { s, ids } = await run(clock, options, 300);
    await s.close();
    const [first] = (await documentOf(dir.path)).dedupFiles;
    await writeFile(join(dir.path, first?.file ?? ''), '');
    const warnings: unknown[] = [];
    const again = await opened(dir.path, {
      ...options,
      now: clock.read,
      log: { info: () => {}, warn: (obj: unknown) => void warnings.push(obj) },
    });
    expect(warnings).toEqual([{ path: join(dir.path, first?.file ?? '') }]);
    expect((await again.accept(delivery('key-0'))).duplicate).toBe(false);
    expect(await again.accept(delivery('key-299'))).toEqual({ id: ids.get('key-299'), duplicate: true });
    await again.close();
  });

  type Damage = [
    name: string,
    damage: (file: string) => Promise<void>,
    code: string,
    which: 'doc' | 'dedup',
    message: RegExp,
  ];
  const damages: Damage[] = [
    [
      'a de-dup file the document names is missing',
      (file) => rm(join(dir.path, file)),
      'mismatch',
      'dedup',
      /is missing, but the document .* relies on it/,
    ],
    [
      'a de-dup file is damaged',
      async (file) => {
        const text = await readFile(join(dir.path, file), 'utf8');
        await writeFile(join(dir.path, file), text.replace('key-1', 'key-9'));
      },
      'corrupt',
      'dedup',
      /is damaged/,
    ],
    [
      'the document names a file that is not one of its de-dup files',
      async (file) => {
        const text = await readFile(docIn(dir.path), 'utf8');
        await writeFile(docIn(dir.path), text.replace(`"file":"${file}"`, '"file":"hookbot.json.bak"'));
      },
      'corrupt',
      'doc',
      /names "hookbot\.json\.bak" as a de-dup file/,
    ],
  ];

  it.each(damages)(
    'refuses to start when %s, naming the file and leaving every file untouched',
    async (_name, damage, code, which, message) => {
      const clock = fakeClock();
      const { s } = await run(clock, { dedupFileKeys: 100 }, 300);
      await s.close();
      const [first] = (await documentOf(dir.path)).dedupFiles;
      const file = first?.file ?? '';
      await damage(file);
      const before = await folderSnapshot(dir.path);
      // While the keys count: a file whose keys all expired is not read (nothing would be kept).
      const error = await openError(dir.path, clock.read);
      expect(error.code).toBe(code);
      expect(error.path).toBe(which === 'doc' ? docIn(dir.path) : join(dir.path, file));
      expect(error.message).toMatch(message);
      expect(await folderSnapshot(dir.path)).toEqual(before);
    },
  );
});

async function openError(folder: string, now?: () => number): Promise<StateError> {
  const error: unknown = await createFileStore({ path: docIn(folder), ...(now === undefined ? {} : { now }) })
    .open()
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(error).toBeInstanceOf(StateError);
  return error as StateError;
}

async function folderSnapshot(folder: string): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  for (const name of (await readdir(folder)).sort())
    result[name] = existsSync(join(folder, name))
      ? (await readFile(join(folder, name))).toString('base64')
      : '';
  return result;
}
