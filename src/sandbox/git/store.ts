/**
 * The machinery behind the sandbox's repositories (git.ts): running git, the batch readers and
 * creating a repository (runner.ts), the memos of what never changes, reading commits and trees, writing trees, commits and refs, history
 * walks and merges, each answering as git would. git.ts builds the API's operations on it.
 */
import path from 'node:path';
import type { GitAuthor, GitCommit } from '../context.ts';
import { GitError, validBranchShape } from './common.ts';
import * as history from './history.ts';
import type { HistoryReader } from './history.ts';
import { encodeCommit, encodeTree, entryType, parseTree, writeObject, type TreeEntry } from './objects.ts';
import { Memo } from './memo.ts';
import { parseCommit, parseDiff } from './parse.ts';
import { createRunner, type GitReposOptions } from './runner.ts';
import { readRef, updateRef, validRefName } from './refs.ts';

export type { GitReposOptions } from './runner.ts';

const FULL_SHA = /^[0-9a-f]{40}$/;

type MergeTree = { clean: true; tree: string } | { clean: false; files: string[] };

export function createStore(dir: string, options: GitReposOptions = {}) {
  const runner = createRunner(dir, options);
  const { repoPath, batch, run, text, exists, requireRepo, identityEnv, ident } = runner;

  // ---- memos of what never changes ---------------------------------------------------------
  // A commit, once written, is never rewritten or deleted (repositories are removed only with
  // their project, and ids are not reused): so "this full sha is a commit" and the commit itself
  // can be remembered; so can what a merge of two given commits gives, and the last commit that
  // changed a path up to a given commit. Refs move, so branch and tag names are always asked of git.
  const knownCommits = new Memo<GitCommit>(20_000);
  const memoKey = (repo: string, sha: string, env?: Record<string, string>) =>
    `${repo}\0${env?.GIT_ALTERNATE_OBJECT_DIRECTORIES ?? ''}\0${sha}`;
  const mergeTrees = new Memo<MergeTree>(5_000);
  // Trees never change either; callers never change what they are given (they copy to write).
  const knownTrees = new Memo<TreeEntry[]>(200_000, (entries) => entries.length + 1);
  const lastCommits = new Memo<string>(5_000);

  /** A full sha for a branch, tag or sha (only commits), or undefined. */
  async function resolveIn(
    repo: string,
    ref: string,
    env?: Record<string, string>,
  ): Promise<string | undefined> {
    if (!ref || ref.includes('\0')) return undefined;
    if (FULL_SHA.test(ref) && knownCommits.has(memoKey(repo, ref, env))) return ref;
    const found = await batch.read(repo, 'info', `${ref}^{commit}`, env);
    return found?.type === 'commit' ? found.oid : undefined;
  }

  /**
   * A branch's head. Its ref is read here (a branch holds a commit id, so there is nothing to peel);
   * a symbolic or odd one is left to git.
   */
  async function branchHead(repo: string, name: string): Promise<string | undefined> {
    if (!validBranchShape(name)) return undefined;
    const refname = `refs/heads/${name}`;
    const sha = validRefName(refname) ? readRef(repo, refname) : undefined;
    if (sha && knownCommits.has(memoKey(repo, sha))) return sha;
    return resolveIn(repo, refname);
  }

  async function readCommits(
    repo: string,
    shas: string[],
    env?: Record<string, string>,
    copies = true,
  ): Promise<GitCommit[]> {
    const read = await Promise.all(
      shas.map(async (sha) => {
        const known = FULL_SHA.test(sha) ? knownCommits.get(memoKey(repo, sha, env)) : undefined;
        if (known) return known;
        const object = await batch.read(repo, 'contents', sha, env);
        if (object?.type !== 'commit' || !object.content) return undefined;
        const commit = parseCommit(object.oid, object.content);
        knownCommits.set(memoKey(repo, object.oid, env), commit);
        return commit;
      }),
    );
    // Copies: callers may shape what they are given; the memo stays as git wrote it. (The history
    // walks of git/history.ts only read.)
    return read.flatMap((commit) => (commit ? [copies ? structuredClone(commit) : commit] : []));
  }

  async function readCommit(repo: string, sha: string, env?: Record<string, string>): Promise<GitCommit> {
    const [commit] = await readCommits(repo, [sha], env);
    if (!commit) throw new GitError('failed', `commit ${sha} could not be read`);
    return commit;
  }

  async function readTree(repo: string, oid: string, env?: Record<string, string>): Promise<TreeEntry[]> {
    const key = memoKey(repo, oid, env);
    const known = knownTrees.get(key);
    if (known) return known;
    const object = await batch.read(repo, 'contents', oid, env);
    if (object?.type !== 'tree' || !object.content)
      throw new GitError('failed', `tree ${oid} could not be read`);
    const entries = parseTree(object.content);
    knownTrees.set(key, entries);
    return entries;
  }

  async function revList(repo: string, args: string[], env?: Record<string, string>): Promise<string[]> {
    const r = await run(['-C', repo, 'rev-list', '--topo-order', ...args], { env });
    return text(r).split('\n').filter(Boolean);
  }

  /**
   * `git rev-list --topo-order from..to`: the commits of `to` not in `from`, newest first. A plain
   * line of single-parent commits from `to` down to `from` (what a file commit or a push usually
   * adds) is walked here; anything else is asked of git.
   */
  /** What git/history.ts reads and writes in one repository. */
  const historyOf = (repo: string): HistoryReader => ({
    commits: (shas) => readCommits(repo, shas, undefined, false),
    tree: (oid) => readTree(repo, oid),
    writeTree: (entries) => writeTree(repo, entries),
  });

  /**
   * `git rev-list --topo-order from..to`: the commits of `to` not in `from`, newest first. A line of
   * commits (what a file commit, a push or a merge usually adds) is walked here (git/history.ts);
   * anything else is asked of git.
   */
  async function commitsBetween(
    repo: string,
    from: string,
    to: string,
    env?: Record<string, string>,
  ): Promise<string[]> {
    // The usual case first: single-parent commits from `to` straight down to `from`.
    const line: string[] = [];
    for (let at = to; line.length < 50;) {
      if (at === from) return line;
      const [commit] = await readCommits(repo, [at], env, false);
      if (!commit || commit.parent_ids.length !== 1) break;
      line.push(at);
      at = commit.parent_ids[0]!;
    }
    if (!env) {
      const walked = await history.commitsBetween(historyOf(repo), from, to);
      if (walked) return walked;
    }
    return revList(repo, [`${from}..${to}`], env);
  }

  async function checkBranchName(name: string): Promise<void> {
    // Real servers run `git check-ref-format refs/<name>` and refuse refs/heads/ and refs/remotes/ prefixes.
    const valid =
      validBranchShape(name) &&
      !name.startsWith('refs/heads/') &&
      !name.startsWith('refs/remotes/') &&
      validRefName(`refs/heads/${name}`);
    if (!valid) throw new GitError('invalid-branch-name', `"${name}" is not a valid branch name`);
  }

  /** The entries of `filePath`'s folders and of the path itself at `tree` (absent ones missing). */
  async function entriesAlong(repo: string, tree: string, filePath: string) {
    const parts = filePath.split('/');
    const entries = new Map<string, { mode: string; type: string; oid: string }>();
    let current: string | undefined = tree;
    for (let i = 0; i < parts.length && current; i++) {
      const found: TreeEntry | undefined = (await readTree(repo, current)).find((e) => e.name === parts[i]);
      if (!found) break;
      const at = parts.slice(0, i + 1).join('/');
      entries.set(at, { mode: found.mode, type: entryType(found.mode), oid: found.oid });
      current = found.mode === '40000' ? found.oid : undefined;
    }
    return entries;
  }

  /**
   * `tree` (or nothing) with `parts` set to `entry` (undefined: removed); folders left empty go, as
   * they would from an index. Answers the new tree's id, or undefined when it is empty.
   */
  async function withEntry(
    repo: string,
    tree: string | undefined,
    parts: string[],
    entry: { mode: string; oid: string } | undefined,
  ): Promise<string | undefined> {
    const [name = '', ...rest] = parts;
    const entries = tree ? await readTree(repo, tree) : [];
    const others = entries.filter((e) => e.name !== name);
    const existing = entries.find((e) => e.name === name);
    let next: { mode: string; oid: string } | undefined = entry;
    if (rest.length > 0) {
      const sub = await withEntry(repo, existing?.mode === '40000' ? existing.oid : undefined, rest, entry);
      next = sub === undefined ? undefined : { mode: '40000', oid: sub };
    }
    const result = next ? [...others, { name, ...next }] : others;
    if (result.length === 0) return undefined;
    return writeTree(repo, result);
  }

  /** Writes a tree and remembers it: the push that follows reads it again. */
  async function writeTree(repo: string, entries: TreeEntry[]): Promise<string> {
    const bytes = encodeTree(entries);
    const oid = await writeObject(repo, 'tree', bytes);
    knownTrees.set(memoKey(repo, oid), parseTree(bytes));
    return oid;
  }

  /** A tree of `files` (paths to content), folders made as they are needed. */
  async function treeOf(repo: string, files: [string, string | Buffer][]): Promise<string> {
    const here: TreeEntry[] = [];
    const folders = new Map<string, [string, string | Buffer][]>();
    for (const [filePath, content] of files) {
      const slash = filePath.indexOf('/');
      if (slash < 0) {
        const oid = await writeObject(repo, 'blob', Buffer.from(content));
        here.push({ mode: '100644', name: filePath, oid });
      } else {
        const folder = filePath.slice(0, slash);
        const list = folders.get(folder) ?? [];
        list.push([filePath.slice(slash + 1), content]);
        folders.set(folder, list);
      }
    }
    for (const [name, list] of folders) here.push({ mode: '40000', name, oid: await treeOf(repo, list) });
    return writeTree(repo, here);
  }

  /** A commit written here; `git commit-tree` for what git would not take verbatim (it reports why). */
  async function commitTree(
    repo: string,
    tree: string,
    parents: string[],
    message: string,
    author: GitAuthor,
  ): Promise<GitCommit> {
    const who = ident(author, message);
    let sha: string;
    if (who) {
      // The message goes in verbatim, as `commit-tree` takes it from stdin: real servers store the
      // text as given, so a commit made through the API reads back exactly.
      const bytes = encodeCommit(tree, parents, who, who, message);
      sha = await writeObject(repo, 'commit', bytes);
      const commit = parseCommit(sha, bytes);
      knownCommits.set(memoKey(repo, sha), commit);
      return structuredClone(commit);
    }
    const args = ['-C', repo, 'commit-tree', tree];
    for (const p of parents) args.push('-p', p);
    sha = text(await run(args, { env: identityEnv(author), input: message }));
    return readCommit(repo, sha);
  }

  /** Moves `ref` from `old` (undefined: must not exist yet) to `sha` (undefined: deletes it). */
  async function casRef(
    repo: string,
    ref: string,
    sha: string | undefined,
    old: string | undefined,
  ): Promise<void> {
    let outcome = updateRef(repo, ref, sha, old);
    if (outcome === 'fallback') {
      const args =
        sha === undefined ? ['update-ref', '-d', ref, old ?? ''] : ['update-ref', ref, sha, old ?? ''];
      const r = await run(['-C', repo, ...args], { allow: [1, 128] });
      outcome = r.code === 0 ? 'ok' : 'moved';
    }
    if (outcome !== 'ok') throw new GitError('concurrent-update', `${ref} moved while it was being updated`);
  }

  async function diffBetween(repo: string, from: string, to: string, env?: Record<string, string>) {
    const [raw, patch] = await Promise.all([
      run(['-C', repo, 'diff-tree', '-r', '-z', '--raw', '-M', '--no-color', from, to], { env }),
      run(['-C', repo, 'diff-tree', '-r', '-p', '-M', '--no-color', from, to], { env }),
    ]);
    return parseDiff(raw.stdout.toString('utf8'), patch.stdout.toString('utf8'));
  }

  /**
   * The paths `to` adds, changes and removes against `from` (trees), walking only the folders that
   * differ; undefined when a file was removed and another added (a rename, which only git's
   * `diff-tree -M` judges).
   */
  async function treeChanges(repo: string, from: string, to: string) {
    const added: string[] = [];
    const modified: string[] = [];
    const removed: string[] = [];
    async function walk(a: string | undefined, b: string | undefined, prefix: string): Promise<void> {
      const left = new Map((a ? await readTree(repo, a) : []).map((e) => [e.name, e]));
      const right = new Map((b ? await readTree(repo, b) : []).map((e) => [e.name, e]));
      for (const name of new Set([...left.keys(), ...right.keys()])) {
        const l = left.get(name);
        const r = right.get(name);
        if (l && r && l.oid === r.oid && l.mode === r.mode) continue;
        const at = `${prefix}${name}`;
        const lTree = l?.mode === '40000';
        const rTree = r?.mode === '40000';
        if (lTree || rTree) await walk(lTree ? l.oid : undefined, rTree ? r.oid : undefined, `${at}/`);
        if (l && !lTree && r && !rTree) modified.push(at);
        else if (l && !lTree) removed.push(at);
        else if (r && !rTree) added.push(at);
      }
    }
    await walk(from, to, '');
    if (added.length > 0 && removed.length > 0) return undefined;
    const order = (list: string[]) => list.sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    return { added: order(added), modified: order(modified), removed: order(removed) };
  }

  /** Environment that lets `repo` read the objects of another project's repository (forks). */
  async function alternatesEnv(projectId: number, sourceProjectId: number) {
    if (projectId === sourceProjectId) return undefined;
    const source = await requireRepo(sourceProjectId);
    return { GIT_ALTERNATE_OBJECT_DIRECTORIES: path.join(source, 'objects') };
  }

  /** Both ends of a merge, read-only: the source is read from its own repository through alternates. */
  async function mergeEnds(projectId: number, target: string, sourceProjectId: number, source: string) {
    if (!(await exists(projectId)) || !(await exists(sourceProjectId))) return undefined;
    const repo = repoPath(projectId);
    const env = await alternatesEnv(projectId, sourceProjectId);
    const targetSha = await resolveIn(repo, target);
    const sourceSha = await resolveIn(repoPath(sourceProjectId), source);
    if (!targetSha || !sourceSha) return undefined;
    return { repo, env, targetSha, sourceSha };
  }

  /** A real three-way merge of two commits, nothing but its tree written; remembered per pair. */
  async function mergeTree(
    repo: string,
    ours: string,
    theirs: string,
    env?: Record<string, string>,
  ): Promise<MergeTree> {
    const key = memoKey(repo, `${ours}\0${theirs}`, env);
    const known = mergeTrees.get(key);
    if (known) return known;
    if (!env) {
      // Different files changed on a line of commits off the target: merged here (git/history.ts).
      const read = historyOf(repo);
      const base = await history.lineMergeBase(read, ours, theirs);
      if (base) {
        const [b, o, t] = await readCommits(repo, [base, ours, theirs], undefined, false);
        const tree = b && o && t ? await history.treeMerge(read, b.tree, o.tree, t.tree) : undefined;
        if (tree) {
          const merged: MergeTree = { clean: true, tree };
          mergeTrees.set(key, merged);
          return merged;
        }
      }
    }
    const r = await run(
      [
        '-C',
        repo,
        'merge-tree',
        '--write-tree',
        '-z',
        '--name-only',
        '--no-messages',
        '--allow-unrelated-histories',
        ours,
        theirs,
      ],
      { env, allow: [1] },
    );
    const [tree = '', ...rest] = r.stdout.toString('utf8').split('\0');
    const result: MergeTree =
      r.code === 0 ? { clean: true, tree } : { clean: false, files: [...new Set(rest.filter(Boolean))] };
    mergeTrees.set(key, result);
    return result;
  }

  return {
    ...runner,
    memoKey,
    lastCommits,
    resolveIn,
    branchHead,
    readCommits,
    readCommit,
    revList,
    commitsBetween,
    checkBranchName,
    entriesAlong,
    withEntry,
    writeTree,
    treeOf,
    commitTree,
    casRef,
    diffBetween,
    treeChanges,
    mergeEnds,
    mergeTree,
  };
}
