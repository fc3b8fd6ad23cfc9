import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DedupFolder } from '../../../src/state/file/dedup-folder.ts';
import type { DedupFileRef } from '../../../src/state/file/document.ts';
import { useTempDir } from '../temp-dir.ts';

const dir = useTempDir();
const ref = (file: string): DedupFileRef => ({ file, keys: 1, bytes: 1, newest: 1, crc: '00000000' });

describe('the de-dup files of a document', () => {
  const folder = new DedupFolder('data/hookbot.json', 'data/hookbot.json.bak');

  it.each([
    ['hookbot.dedup.12', true],
    ['hookbot.dedup.12-2', true],
    ['hookbot.dedup.', false],
    ['hookbot.dedup.12.tmp', false],
    ['hookbot.json.bak', false],
    ['other.dedup.12', false],
    ['../hookbot.dedup.12', false],
  ])('%s is one of its names: %s', (name, owned) => {
    expect(folder.owns(name)).toBe(owned);
  });

  it('names a file after its record, and never after one it already has', () => {
    expect(folder.name(40, [])).toBe('hookbot.dedup.40');
    expect(folder.name(40, [ref('hookbot.dedup.40'), ref('hookbot.dedup.40-2')])).toBe('hookbot.dedup.40-3');
    expect(folder.path('hookbot.dedup.40')).toBe(join('data', 'hookbot.dedup.40'));
  });

  it('removes the de-dup files and temp files nothing names, and nothing else', async () => {
    const here = new DedupFolder(join(dir.path, 'hookbot.json'), join(dir.path, 'hookbot.json.bak'));
    for (const name of [
      'hookbot.dedup.1',
      'hookbot.dedup.2',
      'hookbot.dedup.3',
      '.hookbot.dedup.4.tmp',
      'hookbot.json',
      'hookbot.journal',
      'notes.txt',
    ])
      await writeFile(join(dir.path, name), 'x');
    await here.removeUnnamed([ref('hookbot.dedup.1'), ref('hookbot.dedup.3')]);
    expect((await readdir(dir.path)).sort()).toEqual([
      'hookbot.dedup.1',
      'hookbot.dedup.3',
      'hookbot.journal',
      'hookbot.json',
      'notes.txt',
    ]);
  });

  it('reads the names the backup holds, and nothing from a backup it cannot read', async () => {
    const here = new DedupFolder(join(dir.path, 'hookbot.json'), join(dir.path, 'hookbot.json.bak'));
    expect(await here.backupRefs()).toEqual([]);
    await writeFile(
      join(dir.path, 'hookbot.json.bak'),
      '{"dedupFiles":[{"file":"hookbot.dedup.9"},{"file":"/etc/passwd"}]}',
    );
    expect((await here.backupRefs()).map((r) => r.file)).toEqual(['hookbot.dedup.9']);
    await writeFile(join(dir.path, 'hookbot.json.bak'), '{"dedup');
    expect(await here.backupRefs()).toEqual([]);
  });
});
