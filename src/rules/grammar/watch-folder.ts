/**
 * Watches a folder tree for any change: one non-recursive `fs.watch` per directory, re-armed as
 * directories come and go.
 *
 * Not `fs.watch(dir, { recursive: true })`: on Linux, Node (20 to 24) implements it in JavaScript
 * with one inotify watch per *file*. A file replaced by a rename (`sed -i`, an editor's safe write,
 * `git checkout`) is a new inode the old watch does not follow, so every later in-place write to it
 * went unseen (measured: 6 appends after one `sed -i`, 0 reloads). A directory's own watch reports
 * every write to, creation, rename and removal of an entry in it whatever inode the entry is, on
 * Linux (inotify), macOS (FSEvents) and Windows alike, so watching the directories holds up.
 *
 * Not chokidar either: it solves the same case with more machinery (and a dependency), and this
 * folder is a few files that are reloaded whole on any change anyway.
 */
import { readdirSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';

export interface FolderWatch {
  close(): void;
}

/** Calls `onChange` on each change in `dir` or below. Throws when `dir` itself cannot be watched. */
export function watchFolder(
  dir: string,
  onChange: () => void,
  onError?: (error: unknown) => void,
): FolderWatch {
  const watchers = new Map<string, FSWatcher>();
  let closed = false;

  function arm(folder: string): void {
    if (watchers.has(folder)) return;
    const watcher = watch(folder, () => {
      onChange();
      // A directory made, removed or renamed here changes what must be watched.
      rearm();
    });
    watcher.on('error', (error) => {
      // A watched directory removed: forget it (a rescan arms it again should it come back).
      watcher.close();
      watchers.delete(folder);
      if (folder === dir) onError?.(error);
    });
    watchers.set(folder, watcher);
  }

  function subfolders(folder: string): string[] {
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return [];
    }
    return entries
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => {
        const sub = path.join(folder, entry.name);
        return [sub, ...subfolders(sub)];
      });
  }

  /** Watches every directory there is now, and stops watching the ones that are gone. */
  function rearm(): void {
    if (closed) return;
    const present = new Set([dir, ...subfolders(dir)]);
    for (const [folder, watcher] of watchers)
      if (!present.has(folder)) {
        watcher.close();
        watchers.delete(folder);
      }
    for (const folder of present) {
      try {
        arm(folder);
      } catch (error) {
        if (folder === dir) throw error;
        // A subfolder removed between the listing and the watch: its parent's watch saw that.
      }
    }
  }

  rearm();
  return {
    close() {
      closed = true;
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
