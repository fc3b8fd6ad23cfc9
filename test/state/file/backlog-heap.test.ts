/**
 * A backlog up to the inbox's byte bound is processed after a restart with the Docker image's heap
 * flags (issue 15: a backlog of 1 MB deliveries killed the bot with "Reached heap limit" at every
 * restart). A child process with `--max-old-space-size=256` fills the inbox with ~1 MB push
 * deliveries until it refuses one, closes; a second one opens the store (the restart), holds every
 * pending delivery's handle and reads, checks and marks each processed.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { STATE_DEFAULTS, type FileStoreOptions } from '../../../src/state/index.ts';
import { useTempDir } from '../temp-dir.ts';

const dir = useTempDir();
const child = fileURLToPath(new URL('./backlog-child.ts', import.meta.url));
/** The Docker image's NODE_OPTIONS (Dockerfile). */
const IMAGE_HEAP_FLAGS = ['--max-semi-space-size=4', '--max-old-space-size=256'];

function run(args: string[]): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...IMAGE_HEAP_FLAGS, '--import', 'tsx', child, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    proc.on('error', reject);
    proc.on('exit', (code, signal) => {
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Record<string, number>);
      else reject(new Error(`${args[0]} exited with ${signal ?? code}: ${err.slice(-2_000)}`));
    });
  });
}

it.each([
  // Compactions fold the backlog into the document (and close compacts): the restart reads it there.
  ['from the document', {}, true],
  // Everything stays in the journal: the restart replays it.
  ['from the journal', { compactBytes: 64 * 1024 * 1024 }, false],
] as [string, FileStoreOptions, boolean][])(
  'a backlog filled to the default byte bound is processed after a restart on the image heap, read %s',
  async (_name, options, compact) => {
    const path = join(dir.path, 'hookbot.json');
    const filled = await run(['fill', path, JSON.stringify(options), String(compact)]);
    // Refused by bytes, near the bound, long before the entry bound.
    expect(filled.inboxBytes).toBeGreaterThan(STATE_DEFAULTS.maxPendingBytes - 1_100_000);
    expect(filled.inboxBytes).toBeLessThanOrEqual(STATE_DEFAULTS.maxPendingBytes);
    expect(filled.accepted).toBeLessThan(STATE_DEFAULTS.maxPending);
    const drained = await run(['drain', path, JSON.stringify(options)]);
    expect(drained.processed).toBe(filled.accepted);
  },
);
