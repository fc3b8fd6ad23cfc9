/**
 * The few file operations that must survive a crash or a power cut. Atomic replacement is the
 * temp-file-and-rename of lowdb's adapters (steno), plus what steno leaves out: an fsync of the
 * temp file before the rename (else a power cut can leave the new name on an empty file) and of
 * the folder after it (else the rename itself can be lost).
 */
import { chmod, copyFile, link, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * State files hold delivery bodies (titles and texts of private projects) and decisions: only the
 * bot's user may read them. Files are created 0600 and folders 0700 (the umask can only narrow).
 */
export const STATE_FILE_MODE = 0o600;
export const STATE_FOLDER_MODE = 0o700;

/** `/a/b.json` -> `/a/.b.json.tmp`, the name lowdb's adapters use too. */
export function tempPathOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp`);
}

/**
 * Replaces `path` with `data` atomically and durably; returns the fsync calls made. `data` may come
 * in chunks (an async iterable), written as they come: a large file never sits in memory whole.
 */
export async function replaceFile(
  path: string,
  data: string | Uint8Array | AsyncIterable<Uint8Array>,
): Promise<number> {
  const temp = tempPathOf(path);
  const file = await open(temp, 'w', STATE_FILE_MODE);
  try {
    if (typeof data === 'string' || data instanceof Uint8Array) await file.writeFile(data);
    else
      for await (const chunk of data)
        // A write may take less than it was given (a full disk): the rest goes on, or fails.
        for (let at = 0; at < chunk.length;) at += (await file.write(chunk, at)).bytesWritten;
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
  // A copy takes its source's mode: one written by an older version may be wider.
  await chmod(temp, STATE_FILE_MODE);
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

/**
 * Narrows to 0600 the files of `folder` that `isOurs` names and that others may read (an older
 * version created them 0644). Returns the names changed.
 */
export async function tightenStateFiles(
  folder: string,
  isOurs: (name: string) => boolean,
): Promise<string[]> {
  const changed: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    if (!entry.isFile() || !isOurs(entry.name)) continue;
    const path = join(folder, entry.name);
    if (((await stat(path)).mode & 0o077) === 0) continue;
    await chmod(path, STATE_FILE_MODE);
    changed.push(entry.name);
  }
  return changed;
}

/** Whether users other than the owner may enter or list `folder`. */
export async function folderOpenToOthers(folder: string): Promise<boolean> {
  return ((await stat(folder)).mode & 0o077) !== 0;
}
