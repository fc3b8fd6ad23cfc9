import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { keptDedupFiles, readDedupFile, writeDedupFile } from '../../../src/state/file/dedup-file.ts';
import type { DedupFileRef } from '../../../src/state/file/document.ts';
import { StateError } from '../../../src/state/errors.ts';
import { useTempDir } from '../temp-dir.ts';

const dir = useTempDir();
const entries = [
  { key: 'a'.repeat(64), id: 'id-1', expiresAt: 1_000 },
  { key: 'key with "quotes" and \n', id: 'id-2', expiresAt: 3_000 },
  { key: 'é', id: 'id-3', expiresAt: 2_000 },
];

describe('de-dup files', () => {
  it('reads back what was written, with the count, size, newest expiry and checksum in its reference', async () => {
    const path = join(dir.path, 'hookbot.dedup.7');
    const { ref, fsyncs } = await writeDedupFile(path, 'hookbot.dedup.7', entries);
    const bytes = (await readFile(path)).length;
    expect(ref).toEqual({
      file: 'hookbot.dedup.7',
      keys: 3,
      bytes,
      newest: 3_000,
      crc: expect.stringMatching(/^[0-9a-f]{8}$/),
    });
    expect(fsyncs).toBeGreaterThanOrEqual(1);
    expect(await readDedupFile(path, ref, 'hookbot.json')).toEqual({ entries, emptied: false });
  });

  it('writes a file of many chunks as the JSON of all its keys, checksummed as a whole', async () => {
    for (const count of [0, 1, 500, 1_234]) {
      const many = Array.from({ length: count }, (_, n) => ({
        key: `key-${n}-é`,
        id: `id-${n}`,
        expiresAt: 5_000 + (n % 7),
      }));
      const path = join(dir.path, `hookbot.dedup.${count}`);
      const { ref } = await writeDedupFile(path, `hookbot.dedup.${count}`, many);
      const data = await readFile(path);
      const keys = many.map(({ key, id, expiresAt }) => [key, id, expiresAt]);
      expect(data.toString('utf8')).toBe(`${JSON.stringify({ dedup: 'hookbot-dedup', version: 1, keys })}\n`);
      expect(ref).toEqual({
        file: `hookbot.dedup.${count}`,
        keys: count,
        bytes: data.length,
        newest: count === 0 ? 0 : 5_000 + Math.min(count - 1, 6),
        crc: crc32(data).toString(16).padStart(8, '0'),
      });
      expect((await readDedupFile(path, ref, 'hookbot.json')).entries).toEqual(many);
    }
  });

  it('reads an emptied file (the operator gave its keys up) as no keys', async () => {
    const path = join(dir.path, 'hookbot.dedup.7');
    const { ref } = await writeDedupFile(path, 'hookbot.dedup.7', entries);
    await writeFile(path, '');
    expect(await readDedupFile(path, ref, 'hookbot.json')).toEqual({ entries: [], emptied: true });
  });

  type Damage = [
    name: string,
    damage: (path: string, ref: DedupFileRef) => Promise<DedupFileRef>,
    code: string,
    message: RegExp,
  ];
  const damages: Damage[] = [
    [
      'a missing file',
      async (path, ref) => (await import('node:fs/promises')).rm(path).then(() => ref),
      'mismatch',
      /is missing, but the document hookbot\.json relies on it/,
    ],
    [
      'a flipped byte',
      async (path, ref) => {
        const data = await readFile(path);
        data[20] = (data[20] ?? 0) ^ 1;
        await writeFile(path, data);
        return ref;
      },
      'corrupt',
      /is damaged/,
    ],
    [
      'a file swapped for another of the same size',
      async (path, ref) => {
        const text = (await readFile(path, 'utf8')).replace('id-1', 'id-9');
        await writeFile(path, text);
        return ref;
      },
      'corrupt',
      /is damaged/,
    ],
    [
      'a count that does not match',
      async (_path, ref) => ({ ...ref, keys: 4 }),
      'corrupt',
      /does not hold the 4 de-dup keys the document expects/,
    ],
  ];

  it.each(damages)(
    'refuses %s, naming it and saying how to start without it',
    async (_name, damage, code, message) => {
      const path = join(dir.path, 'hookbot.dedup.7');
      const written = await writeDedupFile(path, 'hookbot.dedup.7', entries);
      const ref = await damage(path, written.ref);
      const error: unknown = await readDedupFile(path, ref, 'hookbot.json').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StateError);
      expect(error).toMatchObject({ code, path });
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toMatch(/empty it \(a zero-byte file\)/);
    },
  );
});

describe('which de-dup files are kept', () => {
  const file = (name: string, keys: number, newest: number): DedupFileRef => ({
    file: name,
    keys,
    bytes: 1,
    newest,
    crc: '00000000',
  });
  it.each([
    [
      'all, while none expired and they fit the bound',
      [file('a', 10, 50), file('b', 10, 60)],
      0,
      40,
      100,
      ['a', 'b'],
    ],
    ['not one whose newest key expired', [file('a', 10, 50), file('b', 10, 60)], 0, 50, 100, ['b']],
    [
      'not those older than the bound: newer keys alone fill it',
      [file('a', 10, 90), file('b', 10, 90), file('c', 10, 90)],
      5,
      40,
      25,
      ['b', 'c'],
    ],
    ['none, when inline keys alone fill the bound', [file('a', 10, 90)], 25, 40, 25, []],
    ['none of none', [], 0, 0, 10, []],
  ])('%s', (_name, files, inline, now, max, kept) => {
    expect(keptDedupFiles(files, inline, now, max).map((f) => f.file)).toEqual(kept);
  });
});
