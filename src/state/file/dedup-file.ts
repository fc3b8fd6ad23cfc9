/**
 * De-dup files: the de-duplication keys of older deliveries, out of the document. With the default
 * window (24 h, up to 100,000 keys) the keys made the document 9.4 MB, rewritten by every compaction
 * (358-1,106 ms each). Now a compaction writes only the keys that arrived since the previous one, once,
 * into a new file, and the document lists the files it relies on; a file is dropped whole once none of
 * its keys counts any more. A compaction costs O(new keys), not O(window).
 *
 * A file is written completely and fsynced before the document that names it replaces the old one,
 * and is never changed after; the document records its key count and checksum, so a damaged or
 * swapped file is refused rather than silently trusted.
 */
import { readFile } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import type { DedupEntry, DedupFileRef } from './document.ts';
import { replaceFile } from './durable-fs.ts';
import { refuseFile } from '../errors.ts';

const KIND = 'hookbot-dedup';
const VERSION = 1;

type Line = [key: string, id: string, expiresAt: number];

/**
 * Keys encoded per chunk. A chunk is written before the next is encoded, so a compaction holds one
 * chunk (about 60 KB) rather than the whole file, and yields to the appends between two: a file of
 * 20,000 keys as one string (2.4 MB) stalled the event loop while it was joined and encoded twice,
 * and went straight to V8's old generation.
 */
const KEYS_PER_CHUNK = 500;

/** Writes `entries` (oldest first) to `path` atomically and durably. */
export async function writeDedupFile(
  path: string,
  file: string,
  entries: readonly DedupEntry[],
): Promise<{ ref: DedupFileRef; fsyncs: number }> {
  let bytes = 0;
  let crc = 0;
  let newest = 0;
  // The same text as JSON.stringify({ dedup, version, keys }) and a line break, in chunks.
  async function* chunks(): AsyncGenerator<Buffer> {
    // `{"dedup":...,"keys":[`: the empty list's JSON without its closing `]}`.
    let text = JSON.stringify({ dedup: KIND, version: VERSION, keys: [] }).slice(0, -2);
    for (let at = 0; at < entries.length; at += KEYS_PER_CHUNK) {
      const lines: string[] = [];
      for (const { key, id, expiresAt } of entries.slice(at, at + KEYS_PER_CHUNK)) {
        lines.push(JSON.stringify([key, id, expiresAt] satisfies Line));
        newest = Math.max(newest, expiresAt);
      }
      text += `${at > 0 ? ',' : ''}${lines.join(',')}`;
      yield counted(text);
      text = '';
    }
    yield counted(`${text}]}\n`);
  }
  const counted = (text: string): Buffer => {
    const chunk = Buffer.from(text, 'utf8');
    bytes += chunk.length;
    crc = crc32(chunk, crc);
    return chunk;
  };
  const fsyncs = await replaceFile(path, chunks());
  return { ref: { file, keys: entries.length, bytes, newest, crc: hex(crc) }, fsyncs };
}

/**
 * Reads a file the document names. Refuses a missing, damaged or unexpected one, naming it. An empty
 * file is the documented way for an operator to give up a lost file's keys: it reads as no keys.
 */
export async function readDedupFile(
  path: string,
  ref: DedupFileRef,
  documentPath: string,
): Promise<{ entries: DedupEntry[]; emptied: boolean }> {
  const hint = `Restore it together with ${documentPath}, or empty it (a zero-byte file) to start without its de-duplication keys: a delivery repeated within the window would then be processed again.`;
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw refuseFile('mismatch', path, `is missing, but the document ${documentPath} relies on it`, hint);
    throw error;
  }
  if (data.length === 0) return { entries: [], emptied: true };
  if (data.length !== ref.bytes || checksum(data) !== ref.crc)
    throw refuseFile(
      'corrupt',
      path,
      'is damaged (its size or checksum differs from what the document holds)',
      hint,
    );
  const parsed = parse(data.toString('utf8'));
  if (parsed === undefined || parsed.length !== ref.keys)
    throw refuseFile('corrupt', path, `does not hold the ${ref.keys} de-dup keys the document expects`, hint);
  return {
    entries: parsed.map(([key, id, expiresAt]) => ({ key, id, expiresAt })),
    emptied: false,
  };
}

function parse(text: string): Line[] | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { dedup, version, keys } = (raw ?? {}) as { dedup?: unknown; version?: unknown; keys?: unknown };
  if (dedup !== KIND || version !== VERSION || !Array.isArray(keys)) return undefined;
  // Plain checks, not zod: a full window is 100,000 entries, read on every start.
  for (const line of keys as unknown[]) {
    if (
      !Array.isArray(line) ||
      line.length !== 3 ||
      typeof line[0] !== 'string' ||
      typeof line[1] !== 'string' ||
      typeof line[2] !== 'number' ||
      !Number.isFinite(line[2])
    )
      return undefined;
  }
  return keys as Line[];
}

function checksum(data: Uint8Array): string {
  return hex(crc32(data));
}

function hex(crc: number): string {
  return crc.toString(16).padStart(8, '0');
}

/**
 * The files still worth keeping, oldest first. A file goes once its newest key expired, or once newer
 * keys alone (`newerKeys` inline ones, plus those of newer files) fill `maxKeys`: the memory keeps
 * the newest `maxKeys` keys, so none of it would be loaded.
 */
export function keptDedupFiles(
  files: readonly DedupFileRef[],
  newerKeys: number,
  now: number,
  maxKeys: number,
): DedupFileRef[] {
  const kept: DedupFileRef[] = [];
  let newer = newerKeys;
  for (let i = files.length - 1; i >= 0; i--) {
    const file = files[i];
    if (file === undefined || file.newest <= now || newer >= maxKeys) continue;
    kept.unshift(file);
    newer += file.keys;
  }
  return kept;
}
