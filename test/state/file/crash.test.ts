/**
 * A process killed with SIGKILL in the middle of a burst of accepts loses nothing it acknowledged:
 * every accept that resolved is there after reopening, and every processed mark that resolved holds.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { createFileStore, type FileStoreOptions } from '../../../src/state/index.ts';
import { useTempDir } from '../temp-dir.ts';

const dir = useTempDir();
const child = fileURLToPath(new URL('./crash-child.ts', import.meta.url));

/** Runs the child until it printed `accepted` accept lines, then kills it; returns its complete lines. */
function runAndKill(path: string, accepted: number, options: FileStoreOptions = {}): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', child, path, JSON.stringify(options)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let killed = false;
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (!killed && out.split('\n').filter((l) => l.startsWith('A ')).length >= accepted) {
        killed = true;
        proc.kill('SIGKILL');
      }
    });
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    proc.on('error', reject);
    proc.on('exit', (_code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`the child stopped by itself (${signal ?? _code}): ${err}`));
      // Only complete lines count: a line cut by the kill was not fully printed.
      else resolve(out.split('\n').slice(0, -1));
    });
  });
}

it.each([
  ['with the de-dup keys inline in the document', {}],
  // Small de-dup files: compactions write one each time, so the kill lands in those writes too.
  ['with the de-dup keys in de-dup files', { dedupFileKeys: 40 }],
] as [string, FileStoreOptions][])(
  'every accept and processed mark that resolved before a SIGKILL is there after reopening, %s',
  async (_name, options) => {
    const path = join(dir.path, 'hookbot.json');
    const lines = await runAndKill(path, 1_500, options);
    const accepted = lines
      .filter((l) => l.startsWith('A '))
      .map((l) => l.split(' ').slice(1) as [string, string]);
    const processed = new Set(lines.filter((l) => l.startsWith('P ')).map((l) => l.slice(2)));
    expect(accepted.length).toBeGreaterThanOrEqual(1_500);

    const store = createFileStore({ path, ...options });
    await store.open();
    const pending = new Set(store.pending().map((e) => e.id));
    const missing: string[] = [];
    const wrong: string[] = [];
    for (const [key, id] of accepted) {
      const again = await store.accept({ key, kind: 'Issue Hook', receivedAt: 0, headers: {}, body: null });
      if (!again.duplicate || again.id !== id) missing.push(key);
      const i = Number(key.slice('key-'.length));
      // Odd ones were never marked processed: they must still be pending.
      if (i % 2 === 1 && !pending.has(id)) missing.push(key);
      if (processed.has(id) && pending.has(id)) wrong.push(key);
    }
    expect(missing).toEqual([]);
    expect(wrong).toEqual([]);
    expect(processed.size).toBeGreaterThan(0);
    if (options.dedupFileKeys !== undefined)
      expect((await readdir(dir.path)).some((name) => name.startsWith('hookbot.dedup.'))).toBe(true);
    await store.close();
  },
);
