/**
 * Git objects written and read in this process: a blob, a tree or a commit is a few bytes hashed
 * with SHA-1 and deflated into `objects/xx/yyyy`, exactly what `git hash-object -w`, `git mktree`
 * and `git commit-tree` write (same bytes, same object ids), without a process per object. The
 * sandbox's own writes (file commits, merges, new repositories) go through here; reading is the
 * batch reader's (batch.ts), which knows packs too.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { deflate as deflateCallback, deflateSync } from 'node:zlib';

const deflate = promisify(deflateCallback);

export type ObjectType = 'blob' | 'tree' | 'commit' | 'tag';

export interface TreeEntry {
  mode: string;
  name: string;
  /** 40 hex digits. */
  oid: string;
}

export function objectId(type: ObjectType, content: Buffer): string {
  return createHash('sha1').update(`${type} ${content.length}\0`).update(content).digest('hex');
}

/** Object folders (`objects/xx`) known to exist: a folder is made once, not checked per object. */
const madeFolders = new Set<string>();

/** Objects up to this size are deflated and written without leaving this thread (see writeObject). */
const SMALL_OBJECT = 256 * 1024;

/**
 * Writes one loose object unless it is there already (as git checks first); answers its id. A
 * temporary file first, renamed to the final name: a reader never sees half an object, and a second
 * writer of the same object replaces it with the same bytes.
 *
 * Small objects (almost all: trees, commits, a changed file) are written with synchronous calls: a
 * few file-system calls of some microseconds each, where handing each to libuv's thread pool costs
 * more than the call itself, and on one core (the sandbox under load) a thread switch per call.
 */
export async function writeObject(repo: string, type: ObjectType, content: Buffer): Promise<string> {
  const oid = objectId(type, content);
  const dir = path.join(repo, 'objects', oid.slice(0, 2));
  const file = path.join(dir, oid.slice(2));
  if (existsSync(file)) return oid;
  const raw = Buffer.concat([Buffer.from(`${type} ${content.length}\0`), content]);
  const data = raw.length <= SMALL_OBJECT ? deflateSync(raw) : await deflate(raw);
  if (!madeFolders.has(dir)) {
    mkdirSync(dir, { recursive: true });
    if (madeFolders.size > 100_000) madeFolders.clear();
    madeFolders.add(dir);
  }
  const temp = path.join(dir, `tmp_obj_${randomBytes(6).toString('hex')}`);
  try {
    writeFileSync(temp, data, { mode: 0o444, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    // The folder is gone (a repository removed and made again under its name): make it again.
    mkdirSync(dir, { recursive: true });
    writeFileSync(temp, data, { mode: 0o444, flag: 'wx' });
  }
  renameSync(temp, file);
  return oid;
}

/** Git's order of tree entries: by name, a tree's name compared as if it ended in `/`. */
function sortKey(entry: TreeEntry): Buffer {
  return Buffer.from(entry.mode === '40000' ? `${entry.name}/` : entry.name, 'utf8');
}

export function encodeTree(entries: TreeEntry[]): Buffer {
  const sorted = [...entries].sort((a, b) => Buffer.compare(sortKey(a), sortKey(b)));
  const parts: Buffer[] = [];
  for (const entry of sorted) {
    parts.push(Buffer.from(`${entry.mode} ${entry.name}\0`, 'utf8'), Buffer.from(entry.oid, 'hex'));
  }
  return Buffer.concat(parts);
}

export function parseTree(content: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let pos = 0;
  while (pos < content.length) {
    const space = content.indexOf(0x20, pos);
    const nul = content.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > content.length) break;
    entries.push({
      mode: content.subarray(pos, space).toString('latin1'),
      name: content.subarray(space + 1, nul).toString('utf8'),
      oid: content.subarray(nul + 1, nul + 21).toString('hex'),
    });
    pos = nul + 21;
  }
  return entries;
}

/** What `ls-tree` calls an entry's type. */
export function entryType(mode: string): 'blob' | 'tree' | 'commit' {
  if (mode === '40000') return 'tree';
  if (mode === '160000') return 'commit';
  return 'blob';
}

/** Characters git strips from both ends of a name or an e-mail (ident.c `crud`). */
function crud(code: number): boolean {
  return code <= 32 || '.,:;<>"\\\''.includes(String.fromCharCode(code));
}

/**
 * A name or e-mail as git writes it into an identity line (ident.c `strbuf_addstr_without_crud`):
 * crud trimmed from both ends, `<`, `>` and newlines dropped.
 */
export function identPart(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && crud(text.charCodeAt(start))) start++;
  while (end > start && crud(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end).replace(/[<>\n]/g, '');
}

/**
 * Whether git would take these bytes as they are: it rewrites a commit whose text is not what it
 * counts as UTF-8 (commit.c `verify_utf8` refuses non-characters such as U+FFFE and U+FDD0-U+FDEF
 * too). Such a commit is left to `git commit-tree`.
 */
export function gitTakesVerbatim(text: string): boolean {
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if ((code & 0xfffe) === 0xfffe || (code >= 0xfdd0 && code <= 0xfdef)) return false;
    if (code >= 0xd800 && code <= 0xdfff) return false; // a lone surrogate: not UTF-8 at all
  }
  return true;
}

export interface Ident {
  name: string;
  email: string;
  /** Seconds since the epoch. */
  seconds: number;
  /** `+0100`, `-0530`. */
  offset: string;
}

/** The text of a commit object, as `git commit-tree` writes it (the message verbatim). */
export function encodeCommit(
  tree: string,
  parents: string[],
  author: Ident,
  committer: Ident,
  message: string,
): Buffer {
  const line = (who: Ident) => `${who.name} <${who.email}> ${who.seconds} ${who.offset}`;
  const head = [
    `tree ${tree}`,
    ...parents.map((p) => `parent ${p}`),
    `author ${line(author)}`,
    `committer ${line(committer)}`,
  ].join('\n');
  return Buffer.from(`${head}\n\n${message}`, 'utf8');
}

/** The id of the empty tree, what a root commit's diff is taken against. */
export const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
