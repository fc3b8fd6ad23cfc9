/**
 * The few file operations that must survive a crash or a power cut. Atomic replacement is the
 * temp-file-and-rename of lowdb's adapters (steno), plus what steno leaves out: an fsync of the
 * temp file before the rename (else a power cut can leave the new name on an empty file) and of
 * the folder after it (else the rename itself can be lost).
 */
import { copyFile, link, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** `/a/b.json` -> `/a/.b.json.tmp`, the name lowdb's adapters use too. */
export function tempPathOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp`);
}

/** Replaces `path` with `data` atomically and durably; returns the fsync calls made. */
export async function replaceFile(path: string, data: string | Uint8Array): Promise<number> {
  const temp = tempPathOf(path);
  const file = await open(temp, 'w');
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, path);
  return 1 + (await syncFolder(path));
}

/** Copies `from` over `to` atomically and durably (for backups); returns the fsync calls made. */
export async function copyFileDurably(from: string, to: string): Promise<number> {
  const temp = tempPathOf(to);
  await copyFile(from, temp);
  const file = await open(temp, 'r+');
  try {
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, to);
  return 1 + (await syncFolder(to));
}

/**
 * Gives the file at `from` the name `to` as well (replacing `to` atomically), without copying it: a
 * hard link. For the backup of a document that is about to be replaced by rename, so never changes
 * in place. The new name becomes durable with the next sync of its folder (the caller's). Where
 * links are not supported, copies durably instead. Returns the fsync calls made.
 */
export async function linkOrCopy(from: string, to: string): Promise<number> {
  const temp = tempPathOf(to);
  await rm(temp, { force: true });
  try {
    await link(from, temp);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (
      code === 'EXDEV' ||
      code === 'EPERM' ||
      code === 'ENOTSUP' ||
      code === 'EOPNOTSUPP' ||
      code === 'EMLINK'
    )
      return copyFileDurably(from, to);
    throw error;
  }
  await rename(temp, to);
  return 0;
}

/** Makes a rename or a creation in the folder of `path` durable; returns the fsync calls made. */
export async function syncFolder(path: string): Promise<number> {
  let folder;
  try {
    folder = await open(dirname(path), 'r');
  } catch {
    // Some platforms (Windows) cannot open a folder; their renames are durable by other means.
    return 0;
  }
  try {
    await folder.sync();
    return 1;
  } catch {
    return 0;
  } finally {
    await folder.close();
  }
}

/** Removes a temp file a crash left behind, if any. */
export async function removeStaleTemp(path: string): Promise<void> {
  await rm(tempPathOf(path), { force: true });
}
