/**
 * Branch and tag refs of a bare repository read and moved in this process, by git's own protocol for
 * loose refs (refs/files-backend.c): a ref is the file `refs/...` holding its id; a writer creates
 * `<ref>.lock` exclusively (another writer, git's receive-pack included, waits or fails on it),
 * checks the current value against what it expects, writes the new one into the lock and renames it
 * over the ref. Refs git packed into `packed-refs` are read too; a change that would have to rewrite
 * that file is left to `git update-ref` (the caller's fallback).
 *
 * The calls are synchronous: a ref is a few bytes, and each of these file-system calls takes
 * microseconds, less than handing it to libuv's thread pool (on one core, a thread switch per call).
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';

const FULL_SHA = /^[0-9a-f]{40}$/;

/** git check-ref-format's rules (refs.c `check_refname_format` without options). */
export function validRefName(refname: string): boolean {
  if (refname === '@' || refname.length === 0) return false;
  if (refname.startsWith('/') || refname.endsWith('/') || refname.endsWith('.')) return false;
  if (refname.includes('..') || refname.includes('@{') || refname.includes('//')) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(refname)) return false;
  const components = refname.split('/');
  if (components.length < 2) return false; // one level: only with --allow-onelevel
  return components.every((c) => c.length > 0 && !c.startsWith('.') && !c.endsWith('.lock'));
}

interface PackedRefs {
  mtimeMs: number;
  size: number;
  refs: Map<string, string>;
}
const packedCache = new Map<string, PackedRefs>();

/** The refs of `packed-refs` (peeled lines skipped); empty when there is no such file. */
export function packedRefs(repo: string): Map<string, string> {
  const file = path.join(repo, 'packed-refs');
  let info;
  try {
    info = statSync(file);
  } catch {
    packedCache.delete(repo);
    return new Map();
  }
  const cached = packedCache.get(repo);
  if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.refs;
  const refs = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('#') || line.startsWith('^')) continue;
    const [oid = '', name = ''] = line.split(' ');
    if (FULL_SHA.test(oid) && name) refs.set(name, oid);
  }
  packedCache.set(repo, { mtimeMs: info.mtimeMs, size: info.size, refs });
  return refs;
}

/** The loose value of a ref file: an id, or undefined (absent, a folder, or symbolic). */
function looseRef(repo: string, refname: string): string | undefined | 'symbolic' {
  try {
    const text = readFileSync(path.join(repo, refname), 'utf8').trim();
    if (FULL_SHA.test(text)) return text;
    return text.startsWith('ref:') ? 'symbolic' : undefined;
  } catch {
    return undefined;
  }
}

/** A full refname's id (loose first, then packed); undefined when absent. Symbolic refs: undefined. */
export function readRef(repo: string, refname: string): string | undefined {
  const loose = looseRef(repo, refname);
  if (loose === 'symbolic') return undefined;
  return loose ?? packedRefs(repo).get(refname);
}

/** Every ref under `prefix` (e.g. `refs/heads/`) with its id, sorted by name. */
export function listRefs(repo: string, prefix: string): { name: string; oid: string }[] {
  const found = new Map<string, string>();
  for (const [name, oid] of packedRefs(repo)) if (name.startsWith(prefix)) found.set(name, oid);
  function walk(dir: string, rel: string): void {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const name = `${rel}${entry.name}`;
      if (entry.isDirectory()) walk(path.join(dir, entry.name), `${name}/`);
      else if (entry.isFile() && !entry.name.endsWith('.lock')) {
        const oid = looseRef(repo, name);
        if (oid && oid !== 'symbolic') found.set(name, oid);
      }
    }
  }
  walk(path.join(repo, prefix), prefix);
  return [...found]
    .map(([name, oid]) => ({ name, oid }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export type RefUpdate = 'ok' | 'moved' | 'fallback';

/**
 * Moves `refname` from `old` (undefined: it must not exist) to `next` (undefined: delete it), as
 * `git update-ref <ref> <next> <old>` does. `moved`: someone else holds the lock or moved the ref
 * (or another ref is in the way of the name); `fallback`: the change needs `packed-refs` rewritten
 * or a conflicting packed name checked, which only git does.
 */
export function updateRef(
  repo: string,
  refname: string,
  next: string | undefined,
  old: string | undefined,
): RefUpdate {
  const packed = packedRefs(repo);
  if (packed.size > 0) {
    // A packed entry to delete, or a packed name in the way of a new one: git's business.
    if (next === undefined && packed.has(refname)) return 'fallback';
    for (const name of packed.keys())
      if (name.startsWith(`${refname}/`) || refname.startsWith(`${name}/`)) return 'fallback';
  }
  const file = path.join(repo, refname);
  const lock = `${file}.lock`;
  let fd: number | undefined;
  try {
    fd = openSync(lock, 'wx', 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return 'moved'; // locked by another writer
    try {
      mkdirSync(path.dirname(file), { recursive: true });
      fd = openSync(lock, 'wx', 0o644);
    } catch {
      return 'moved'; // a ref file where a folder of refs would go (D/F conflict)
    }
  }
  let renamed = false;
  try {
    const current = readRef(repo, refname);
    if (current !== old) return 'moved';
    if (next === undefined) {
      try {
        unlinkSync(file);
      } catch {
        // gone already
      }
      pruneEmptyFolders(repo, path.dirname(file));
      return 'ok';
    }
    writeSync(fd, `${next}\n`);
    closeSync(fd);
    fd = undefined;
    try {
      renameSync(lock, file);
    } catch {
      // A folder in the way: git removes it when it holds no ref (a deleted branch's leftovers).
      if (!removeIfEmpty(file)) return 'moved';
      renameSync(lock, file);
    }
    renamed = true;
    return 'ok';
  } finally {
    if (fd !== undefined) closeSync(fd);
    if (!renamed) rmSync(lock, { force: true });
  }
}

/** Removes `dir` and the folders inside it when none holds a file; whether it is gone. */
function removeIfEmpty(dir: string): boolean {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const entry of entries)
    if (!entry.isDirectory() || !removeIfEmpty(path.join(dir, entry.name))) return false;
  try {
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/** After a deletion, the emptied folders up to (not including) `refs/heads` or `refs/tags`. */
function pruneEmptyFolders(repo: string, dir: string): void {
  const stop = new Set(['refs', 'refs/heads', 'refs/tags'].map((d) => path.join(repo, d)));
  for (let current = dir; current.startsWith(path.join(repo, 'refs')) && !stop.has(current);) {
    try {
      rmdirSync(current);
    } catch {
      return;
    }
    current = path.dirname(current);
  }
}
