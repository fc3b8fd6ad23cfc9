/**
 * The de-dup files of one document (dedup-file.ts), as a set: their names (`hookbot.dedup.<seq>`
 * next to `hookbot.json`, `seq` being the record the compaction that wrote one stopped at), and the
 * removal of those nothing names any more. The document only ever names files of this form, so a
 * damaged document cannot make the store read or delete anything else.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { DedupFileRef } from './document.ts';

export class DedupFolder {
  readonly folder: string;
  readonly #stem: string;
  readonly #backupPath: string;

  constructor(documentPath: string, backupPath: string) {
    this.folder = dirname(documentPath);
    this.#stem = `${basename(documentPath, extname(documentPath))}.dedup.`;
    this.#backupPath = backupPath;
  }

  path(file: string): string {
    return join(this.folder, file);
  }

  /** Whether `name` is a name this store gives its de-dup files. */
  owns(name: string): boolean {
    return name.startsWith(this.#stem) && /^[0-9]+(-[0-9]+)?$/.test(name.slice(this.#stem.length));
  }

  /** The name for a file written at record `seq`, none of `taken`'s. */
  name(seq: number, taken: Iterable<DedupFileRef>): string {
    const names = new Set(Array.from(taken, (ref) => ref.file));
    let name = `${this.#stem}${seq}`;
    for (let n = 2; names.has(name); n++) name = `${this.#stem}${seq}-${n}`;
    return name;
  }

  /** The files the backup document names, so that restoring it finds them. Best effort: it is not the state. */
  async backupRefs(): Promise<DedupFileRef[]> {
    try {
      const backup = JSON.parse(await readFile(this.#backupPath, 'utf8')) as { dedupFiles?: unknown };
      if (!Array.isArray(backup.dedupFiles)) return [];
      return (backup.dedupFiles as DedupFileRef[]).filter(
        (ref) => typeof ref?.file === 'string' && this.owns(ref.file),
      );
    } catch {
      return [];
    }
  }

  /**
   * Removes the de-dup files none of `keep` names (written by a compaction a crash stopped before its
   * document replaced the old one) and the temp files of interrupted writes.
   */
  async removeUnnamed(keep: Iterable<DedupFileRef>): Promise<void> {
    const kept = new Set(Array.from(keep, (ref) => ref.file));
    for (const name of await readdir(this.folder)) {
      const temp = name.startsWith('.') && name.endsWith('.tmp') ? name.slice(1, -'.tmp'.length) : undefined;
      if ((temp !== undefined && this.owns(temp)) || (this.owns(name) && !kept.has(name)))
        await rm(this.path(name), { force: true });
    }
  }
}
