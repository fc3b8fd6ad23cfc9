/**
 * State files hold delivery bodies and decisions of private projects: only the bot's user may read
 * them. New files are 0600 in a 0700 folder; files an older version left 0644 are narrowed at open.
 */
import { chmod, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileStore } from '../../../src/state/file/file-store.ts';
import { useTempDir } from '../temp-dir.ts';

const dir = useTempDir();
const mode = async (path: string) => (await stat(path)).mode & 0o777;

async function modesIn(folder: string): Promise<Record<string, number>> {
  const names = (await readdir(folder)).sort();
  return Object.fromEntries(
    await Promise.all(names.map(async (name) => [name, await mode(join(folder, name))])),
  );
}

const delivery = (key: string) => ({
  key,
  kind: 'Issue Hook',
  receivedAt: 1_000,
  headers: { 'x-gitlab-event': 'Issue Hook' },
  body: { object_kind: 'issue', key, title: 'a confidential title' },
});

describe('state file modes', () => {
  it('creates the folder 0700 and every file 0600: document, backup, journal, segments, lock', async () => {
    const folder = join(dir.path, 'data');
    const store = createFileStore({ path: join(folder, 'hookbot.json') });
    await store.open();
    await store.accept(delivery('a'));
    await store.compact();
    await store.accept(delivery('b'));
    await store.recordDecision('issue:1:1', { text: 'x' });
    await store.compact();
    const open = await modesIn(folder);
    await store.close();
    expect(await mode(folder)).toBe(0o700);
    expect(Object.keys(open)).toEqual(
      expect.arrayContaining(['hookbot.json', 'hookbot.journal', 'hookbot.json.lock']),
    );
    expect(Object.entries(open).filter(([, m]) => m !== 0o600)).toEqual([]);
    expect(Object.entries(await modesIn(folder)).filter(([, m]) => m !== 0o600)).toEqual([]);
  });

  it('narrows to 0600 the files an older version created 0644, and leaves other files alone', async () => {
    const folder = join(dir.path, 'old');
    await mkdir(folder);
    const first = createFileStore({ path: join(folder, 'hookbot.json') });
    await first.open();
    await first.accept(delivery('a'));
    await first.close();
    for (const name of await readdir(folder)) await chmod(join(folder, name), 0o644);
    await writeFile(join(folder, 'notes.txt'), 'not ours\n', { mode: 0o644 });
    await chmod(join(folder, 'notes.txt'), 0o644);

    const second = createFileStore({ path: join(folder, 'hookbot.json') });
    await second.open();
    await second.close({ compact: false });
    const modes = await modesIn(folder);
    expect(modes['notes.txt']).toBe(0o644);
    delete modes['notes.txt'];
    expect(Object.keys(modes).length).toBeGreaterThan(0);
    expect(Object.entries(modes).filter(([, m]) => m !== 0o600)).toEqual([]);
  });

  it('leaves a state it refuses exactly as it was, mode included', async () => {
    const folder = join(dir.path, 'refused');
    await mkdir(folder);
    const document = join(folder, 'hookbot.json');
    await writeFile(document, '[1, 2, 3]\n');
    await chmod(document, 0o644);
    await expect(createFileStore({ path: document }).open()).rejects.toThrow(
      'is not a hookbot state document',
    );
    expect(await mode(document)).toBe(0o644);
  });
});
