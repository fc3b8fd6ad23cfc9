/**
 * History and merges worked out in this process for the shapes the API meets most (a branch that is a
 * plain line of commits off its target, changes to different files), so that a merge, a merge
 * request's commits or a push's commits start no git process. Every function answers `undefined`
 * when the shape is anything else, and the caller asks git (`rev-list`, `merge-tree`): the answers
 * here are exactly git's, or none.
 *
 * - `commitsBetween(from, to)`: `git rev-list --topo-order from..to` when those commits form one line
 *   (its order is then the only one).
 * - `lineMergeBase(target, source)`: the merge base when the source is a line of single-parent commits
 *   off the target's history (then it is the only one).
 * - `treeMerge(base, ours, theirs)`: the tree `git merge-tree` writes when the two sides changed
 *   different paths, neither side removed a file while the other added one (git's rename detection
 *   could pair them), and no file stands where the other side has a folder.
 */
import type { GitCommit } from '../context.ts';
import type { TreeEntry } from './objects.ts';

export interface HistoryReader {
  commits(shas: string[]): Promise<GitCommit[]>;
  tree(oid: string): Promise<TreeEntry[]>;
  writeTree(entries: TreeEntry[]): Promise<string>;
}

/** How many commits a walk may visit before it leaves the question to git. */
const WALK_LIMIT = 2_000;

/** Every commit reachable from `tip` (itself included), or undefined past the limit. */
async function ancestors(read: HistoryReader, tip: string): Promise<Map<string, GitCommit> | undefined> {
  const seen = new Map<string, GitCommit>();
  let level = [tip];
  while (level.length > 0) {
    const fresh = level.filter((sha) => !seen.has(sha));
    if (fresh.length === 0) break;
    const commits = await read.commits(fresh);
    if (commits.length !== fresh.length) return undefined; // a commit git could not give here
    const next: string[] = [];
    for (const commit of commits) {
      seen.set(commit.id, commit);
      next.push(...commit.parent_ids);
    }
    if (seen.size > WALK_LIMIT) return undefined;
    level = [...new Set(next)];
  }
  return seen;
}

/** `from..to` newest first when it is one line of commits; undefined otherwise. */
export async function commitsBetween(
  read: HistoryReader,
  from: string,
  to: string,
): Promise<string[] | undefined> {
  if (from === to) return [];
  const excluded = await ancestors(read, from);
  if (!excluded) return undefined;
  const result = new Map<string, GitCommit>();
  let level = [to];
  while (level.length > 0) {
    const fresh = level.filter((sha) => !excluded.has(sha) && !result.has(sha));
    if (fresh.length === 0) break;
    const commits = await read.commits(fresh);
    if (commits.length !== fresh.length) return undefined;
    for (const commit of commits) result.set(commit.id, commit);
    if (result.size > WALK_LIMIT) return undefined;
    level = [...new Set(commits.flatMap((c) => c.parent_ids))];
  }
  // One line: from `to`, each commit has exactly one parent inside the result until the last.
  const line: string[] = [];
  for (let at: string | undefined = to; at !== undefined;) {
    const commit = result.get(at);
    if (!commit) break;
    line.push(at);
    const inside = commit.parent_ids.filter((p) => result.has(p));
    if (inside.length > 1) return undefined;
    at = inside[0];
  }
  return line.length === result.size ? line : undefined;
}

/** The merge base when `source` is a line of single-parent commits off `target`'s history. */
export async function lineMergeBase(
  read: HistoryReader,
  target: string,
  source: string,
): Promise<string | undefined> {
  const reachable = await ancestors(read, target);
  if (!reachable) return undefined;
  for (let at = source, steps = 0; steps < WALK_LIMIT; steps++) {
    if (reachable.has(at)) return at;
    const [commit] = await read.commits([at]);
    if (commit?.parent_ids.length !== 1) return undefined; // a root or a merge on the way
    at = commit.parent_ids[0]!;
  }
  return undefined;
}

/** A path's entry on one side: added, modified (both with the new entry) or removed. */
type Change = { kind: 'added' | 'modified'; entry: TreeEntry } | { kind: 'removed' };

/** The paths whose entry differs between two trees (folders walked only where they differ). */
async function changesBetween(read: HistoryReader, from: string, to: string): Promise<Map<string, Change>> {
  const changes = new Map<string, Change>();
  async function walk(a: string | undefined, b: string | undefined, prefix: string): Promise<void> {
    const left = new Map((a ? await read.tree(a) : []).map((e) => [e.name, e]));
    const right = new Map((b ? await read.tree(b) : []).map((e) => [e.name, e]));
    for (const name of new Set([...left.keys(), ...right.keys()])) {
      const l = left.get(name);
      const r = right.get(name);
      if (l && r && l.oid === r.oid && l.mode === r.mode) continue;
      const at = `${prefix}${name}`;
      const lFile = l !== undefined && l.mode !== '40000';
      const rFile = r !== undefined && r.mode !== '40000';
      if ((l && !lFile) || (r && !rFile))
        await walk(l && !lFile ? l.oid : undefined, r && !rFile ? r.oid : undefined, `${at}/`);
      if (rFile) changes.set(at, { kind: lFile ? 'modified' : 'added', entry: r });
      else if (lFile) changes.set(at, { kind: 'removed' });
    }
  }
  await walk(from, to, '');
  return changes;
}

const has = (changes: Map<string, Change>, kind: Change['kind']) =>
  [...changes.values()].some((change) => change.kind === kind);

function sameChange(a: Change, b: Change): boolean {
  if (a.kind === 'removed' || b.kind === 'removed') return a.kind === b.kind;
  return a.entry.oid === b.entry.oid && a.entry.mode === b.entry.mode;
}

/** Whether a path of one side is a folder of a path of the other (a file where a folder goes). */
function folderClash(a: Map<string, Change>, b: Map<string, Change>): boolean {
  const folders = (changes: Map<string, Change>) => {
    const set = new Set<string>();
    for (const path of changes.keys())
      for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1))
        set.add(path.slice(0, slash));
    return set;
  };
  const aFolders = folders(a);
  const bFolders = folders(b);
  for (const path of a.keys()) if (bFolders.has(path)) return true;
  for (const path of b.keys()) if (aFolders.has(path)) return true;
  return false;
}

/**
 * The merged tree when the two sides changed different paths (or the same path the same way) and
 * nothing git could read as a rename or a folder clash is there; undefined otherwise.
 */
export async function treeMerge(
  read: HistoryReader,
  base: string,
  ours: string,
  theirs: string,
): Promise<string | undefined> {
  const [mine, their] = await Promise.all([
    changesBetween(read, base, ours),
    changesBetween(read, base, theirs),
  ]);
  for (const [path, change] of their) {
    const other = mine.get(path);
    if (other && !sameChange(change, other)) return undefined;
  }
  // A file removed on one side and one added on the other: git's rename detection could pair them.
  if ((has(mine, 'removed') && has(their, 'added')) || (has(their, 'removed') && has(mine, 'added')))
    return undefined;
  if (folderClash(mine, their)) return undefined;
  const wanted = new Map([...their].filter(([path]) => !mine.has(path)));
  if (wanted.size === 0) return ours;
  return (await apply(read, ours, wanted)) ?? read.writeTree([]);
}

/** `tree` with `changes` (paths below it) made, each folder rewritten once; undefined when empty. */
async function apply(
  read: HistoryReader,
  tree: string | undefined,
  changes: Map<string, Change>,
): Promise<string | undefined> {
  const entries = new Map((tree ? await read.tree(tree) : []).map((e) => [e.name, e]));
  const below = new Map<string, Map<string, Change>>();
  for (const [path, change] of changes) {
    const slash = path.indexOf('/');
    if (slash < 0) {
      if (change.kind === 'removed') entries.delete(path);
      else entries.set(path, { mode: change.entry.mode, name: path, oid: change.entry.oid });
      continue;
    }
    const folder = path.slice(0, slash);
    const inner = below.get(folder) ?? new Map<string, Change>();
    inner.set(path.slice(slash + 1), change);
    below.set(folder, inner);
  }
  for (const [folder, inner] of below) {
    const current = entries.get(folder);
    const sub = await apply(read, current?.mode === '40000' ? current.oid : undefined, inner);
    if (sub === undefined) entries.delete(folder);
    else entries.set(folder, { mode: '40000', name: folder, oid: sub });
  }
  if (entries.size === 0) return undefined;
  return read.writeTree([...entries.values()]);
}
