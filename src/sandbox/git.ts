/**
 * Real git repositories for the sandbox: one bare repository per project under `<dir>/<id>.git`, so
 * SHAs, diffs and merges are real and any git client can clone and push them (git >= 2.38 for
 * `merge-tree --write-tree`). What the API writes never needs a work tree or a process per object:
 *
 * - blobs, trees and commits are written by this process, byte for byte what `hash-object`,
 *   `mktree` and `commit-tree` write (git/objects.ts); refs move by git's own lock-file protocol with
 *   the old value as compare-and-swap (git/refs.ts);
 * - names are resolved and objects read by one long-lived `git cat-file --batch-command` per
 *   repository (git/batch.ts), as git resolves them;
 * - what needs git's machinery runs git: merges (`merge-tree`), diffs, history walks that are not a
 *   plain line of commits, forks.
 *
 * Writes to one branch run one at a time (a read-modify-write of its head); different branches and
 * different repositories go on side by side. Every git process runs with a controlled environment (no
 * system or user configuration, `LC_ALL=C`, literal pathspecs) so the sandbox behaves the same on
 * every machine and inside git hooks, where `GIT_DIR` and `GIT_INDEX_FILE` of the caller would
 * otherwise leak in.
 */
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { GitMergeResult, GitRepos } from './context.ts';
import { GitError, normalisePath, parentDirs, validBranchShape } from './git/common.ts';
import { EMPTY_TREE, writeObject } from './git/objects.ts';
import { commitTitle } from './git/parse.ts';
import { listRefs } from './git/refs.ts';
import { createStore, type GitReposOptions } from './git/store.ts';

export { commitTitle, GitError, normalisePath };
export { NULL_SHA } from './git/common.ts';

/** One file as stored at a commit (what `GET .../repository/files` answers). */
export interface GitFile {
  path: string;
  blob_id: string;
  mode: string;
  size: number;
  content: Buffer;
  /** The commit `ref` resolved to. */
  commit_id: string;
  /** The last commit at or before `commit_id` that changed the file. */
  last_commit_id: string;
}

/**
 * Reading one file. Not part of `GitRepos` (context.ts), so routes reach it through `readsFiles`;
 * the repositories made here always have it.
 */
export interface GitFileReader {
  readFile(projectId: number, ref: string, filePath: string): Promise<GitFile | undefined>;
}

export function readsFiles(git: GitRepos): git is GitRepos & GitFileReader {
  return typeof (git as Partial<GitFileReader>).readFile === 'function';
}

export function createGitRepos(
  dir: string,
  options: GitReposOptions = {},
): GitRepos & GitFileReader & { close(): void } {
  const store = createStore(dir, options);
  const {
    repoPath,
    batch,
    run,
    text,
    exclusive,
    branchKey,
    exists,
    requireRepo,
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
    initRepo,
  } = store;
  return {
    async create(projectId, { defaultBranch, initialFiles, author, message }) {
      await exclusive(String(projectId), async () => {
        const repo = repoPath(projectId);
        await initRepo(repo, defaultBranch);
        const entries = Object.entries(initialFiles ?? {});
        if (entries.length === 0) return;
        const files: [string, string][] = entries.map(([filePath, content]) => [
          normalisePath(filePath),
          content,
        ]);
        const tree = await treeOf(repo, files);
        const commit = await commitTree(repo, tree, [], message ?? 'Initial commit', author);
        await casRef(repo, `refs/heads/${defaultBranch}`, commit.id, undefined);
      });
    },

    async remove(projectId) {
      await exclusive(String(projectId), async () => {
        store.forget(projectId);
        await rm(repoPath(projectId), { recursive: true, force: true });
      });
    },

    async fork(fromProjectId, toProjectId) {
      const source = await requireRepo(fromProjectId);
      await exclusive(String(toProjectId), async () => {
        const repo = repoPath(toProjectId);
        const head = (await readFile(path.join(source, 'HEAD'), 'utf8').catch(() => '')).trim();
        const branch = head.startsWith('ref: refs/heads/') ? head.slice('ref: refs/heads/'.length) : 'master';
        await initRepo(repo, branch);
        await run([
          '-C',
          repo,
          'fetch',
          '--quiet',
          '--no-tags',
          source,
          '+refs/heads/*:refs/heads/*',
          '+refs/tags/*:refs/tags/*',
        ]);
      });
    },

    async branches(projectId) {
      if (!(await exists(projectId))) return [];
      const repo = repoPath(projectId);
      const heads = listRefs(repo, 'refs/heads/').map((r) => ({
        sha: r.oid,
        name: r.name.slice('refs/heads/'.length),
      }));
      const commits = new Map(
        (await readCommits(repo, [...new Set(heads.map((h) => h.sha))])).map((c) => [c.id, c]),
      );
      return heads.flatMap((h) => {
        const commit = commits.get(h.sha);
        return commit ? [{ name: h.name, commit }] : [];
      });
    },

    async branch(projectId, name) {
      if (!(await exists(projectId))) return undefined;
      const repo = repoPath(projectId);
      const sha = await branchHead(repo, name);
      return sha ? readCommit(repo, sha) : undefined;
    },

    async createBranch(projectId, name, ref) {
      const repo = await requireRepo(projectId);
      return exclusive(branchKey(projectId, name), async () => {
        await checkBranchName(name);
        if (await branchHead(repo, name))
          throw new GitError('branch-exists', `branch "${name}" already exists`);
        const sha = await resolveIn(repo, ref);
        if (!sha) return undefined;
        await casRef(repo, `refs/heads/${name}`, sha, undefined);
        return readCommit(repo, sha);
      });
    },

    async deleteBranch(projectId, name) {
      const repo = await requireRepo(projectId);
      await exclusive(branchKey(projectId, name), async () => {
        const sha = await branchHead(repo, name);
        if (!sha) throw new GitError('missing-branch', `branch "${name}" does not exist`);
        try {
          await casRef(repo, `refs/heads/${name}`, undefined, sha);
        } catch {
          throw new GitError('concurrent-update', `refs/heads/${name} moved while it was being deleted`);
        }
      });
    },

    async commitFile(projectId, { branch, path: rawPath, content, message, author, mode }) {
      const repo = await requireRepo(projectId);
      const filePath = normalisePath(rawPath);
      return exclusive(branchKey(projectId, branch), async () => {
        const head = await branchHead(repo, branch);
        if (!head) {
          // An empty repository takes its first file on any branch (real servers allow the first
          // commit of an empty project through the files API); otherwise the branch must exist.
          const anyBranch = listRefs(repo, 'refs/heads/').length > 0;
          if (anyBranch || mode !== 'create')
            throw new GitError('missing-branch', `branch "${branch}" does not exist`);
          await checkBranchName(branch);
        }
        let fileMode = '100644';
        const baseTree = head ? (await readCommit(repo, head)).tree : undefined;
        if (baseTree) {
          const entries = await entriesAlong(repo, baseTree, filePath);
          for (const dirPath of parentDirs(filePath))
            if (entries.get(dirPath)?.type === 'blob')
              throw new GitError(
                'invalid-path',
                `"${dirPath}" is a file, so "${filePath}" cannot be created`,
              );
          const existing = entries.get(filePath);
          if (mode === 'create' && existing)
            throw new GitError(
              'file-exists',
              existing.type === 'tree'
                ? `a directory named "${filePath}" already exists`
                : `a file named "${filePath}" already exists`,
            );
          if (mode !== 'create') {
            if (existing?.type !== 'blob')
              throw new GitError('file-missing', `file "${filePath}" does not exist`);
            fileMode = existing.mode; // keep an executable bit or a symlink as it was
          }
        }
        const entry =
          mode === 'delete'
            ? undefined
            : { mode: fileMode, oid: await writeObject(repo, 'blob', Buffer.from(content)) };
        const tree =
          (await withEntry(repo, baseTree, filePath.split('/'), entry)) ?? (await writeTree(repo, []));
        const commit = await commitTree(repo, tree, head ? [head] : [], message, author);
        await casRef(repo, `refs/heads/${branch}`, commit.id, head);
        return commit;
      });
    },

    async log(projectId, ref, logOptions = {}) {
      if (!(await exists(projectId))) return [];
      const repo = repoPath(projectId);
      const sha = await resolveIn(repo, ref);
      if (!sha) return [];
      const limit = logOptions.limit === undefined ? [] : [`--max-count=${Math.max(0, logOptions.limit)}`];
      return readCommits(repo, await revList(repo, [...limit, sha]));
    },

    async commit(projectId, ref) {
      if (!(await exists(projectId))) return undefined;
      const repo = repoPath(projectId);
      const sha = await resolveIn(repo, ref);
      return sha ? readCommit(repo, sha) : undefined;
    },

    async diff(projectId, ref) {
      if (!(await exists(projectId))) return [];
      const repo = repoPath(projectId);
      const sha = await resolveIn(repo, ref);
      if (!sha) return [];
      // Against the first parent, as real servers show a commit (a merge shows what it brought in).
      const commit = await readCommit(repo, sha);
      return diffBetween(repo, commit.parent_ids[0] ?? EMPTY_TREE, sha);
    },

    async changes(projectId, ref) {
      const none = { added: [], modified: [], removed: [] };
      if (!(await exists(projectId))) return none;
      const repo = repoPath(projectId);
      const sha = await resolveIn(repo, ref);
      if (!sha) return none;
      const commit = await readCommit(repo, sha);
      const parent = commit.parent_ids[0];
      const from = parent ? (await readCommit(repo, parent)).tree : undefined;
      const walked = await treeChanges(repo, from ?? EMPTY_TREE, commit.tree);
      if (walked) return walked;
      // A possible rename: git's diff-tree -M decides, and a rename counts as added (its new path).
      const out = { added: [] as string[], modified: [] as string[], removed: [] as string[] };
      for (const d of await diffBetween(repo, parent ?? EMPTY_TREE, sha)) {
        if (d.deleted_file) out.removed.push(d.old_path);
        else if (d.renamed_file || d.new_file) out.added.push(d.new_path);
        else out.modified.push(d.new_path);
      }
      return out;
    },

    async compare(projectId, target, sourceProjectId, source, compareOptions = {}) {
      const ends = await mergeEnds(projectId, target, sourceProjectId, source);
      if (!ends) return { commits: [], diffs: [], mergeBase: undefined };
      const { repo, env, targetSha, sourceSha } = ends;
      const commits = await readCommits(repo, await commitsBetween(repo, targetSha, sourceSha, env), env);
      if (compareOptions.diffs === false) return { commits, diffs: [], mergeBase: undefined };
      const base = await run(['-C', repo, 'merge-base', targetSha, sourceSha], { env, allow: [1] });
      const mergeBase = base.code === 0 ? text(base) : undefined;
      const diffs = await diffBetween(repo, mergeBase ?? EMPTY_TREE, sourceSha, env);
      return { commits, diffs, mergeBase };
    },

    async canMerge(projectId, target, sourceProjectId, source) {
      const ends = await mergeEnds(projectId, target, sourceProjectId, source);
      if (!ends) return false;
      return (await mergeTree(ends.repo, ends.targetSha, ends.sourceSha, ends.env)).clean;
    },

    async merge(projectId, { target, sourceProjectId, source, message, author }): Promise<GitMergeResult> {
      const repo = await requireRepo(projectId);
      const sourceRepo = await requireRepo(sourceProjectId);
      return exclusive(branchKey(projectId, target), async () => {
        const targetSha = await branchHead(repo, target);
        if (!targetSha) throw new GitError('missing-branch', `branch "${target}" does not exist`);
        let tempRef: string | undefined;
        try {
          let sourceSha: string | undefined;
          if (sourceProjectId === projectId) sourceSha = await branchHead(repo, source);
          else if (validBranchShape(source) && (await branchHead(sourceRepo, source))) {
            // A fork's branch: bring its objects into this repository first, so the merge commit
            // stands on its own once written.
            tempRef = `refs/sandbox-tmp/${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
            await run([
              '-C',
              repo,
              'fetch',
              '--quiet',
              '--no-tags',
              sourceRepo,
              `+refs/heads/${source}:${tempRef}`,
            ]);
            sourceSha = await resolveIn(repo, tempRef);
          }
          if (!sourceSha) throw new GitError('missing-branch', `branch "${source}" does not exist`);
          const result = await mergeTree(repo, targetSha, sourceSha);
          if (!result.clean) return { ok: false, conflict: true, files: result.files };
          // Always a merge commit, never a fast-forward: real servers of that era did the same.
          const commit = await commitTree(repo, result.tree, [targetSha, sourceSha], message, author);
          await casRef(repo, `refs/heads/${target}`, commit.id, targetSha);
          return { ok: true, sha: commit.id };
        } finally {
          if (tempRef) await run(['-C', repo, 'update-ref', '-d', tempRef], { allow: [1, 128] });
        }
      });
    },

    async resolve(projectId, ref) {
      if (!(await exists(projectId))) return undefined;
      return resolveIn(repoPath(projectId), ref);
    },

    async readFile(projectId, ref, rawPath) {
      if (!(await exists(projectId))) return undefined;
      const repo = repoPath(projectId);
      const commitId = await resolveIn(repo, ref);
      let filePath: string;
      try {
        filePath = normalisePath(rawPath);
      } catch {
        return undefined;
      }
      if (!commitId) return undefined;
      const entry = (await entriesAlong(repo, (await readCommit(repo, commitId)).tree, filePath)).get(
        filePath,
      );
      if (entry?.type !== 'blob') return undefined;
      const key = memoKey(repo, `${commitId}\0${filePath}`);
      const [blob, last] = await Promise.all([
        batch.read(repo, 'contents', entry.oid),
        lastCommits.get(key) ??
          run(['-C', repo, 'rev-list', '--max-count=1', commitId, '--', filePath]).then((r) => {
            const found = text(r) || commitId;
            lastCommits.set(key, found);
            return found;
          }),
      ]);
      const content = blob?.content ?? Buffer.alloc(0);
      return {
        path: filePath,
        blob_id: entry.oid,
        mode: entry.mode,
        size: content.length,
        content,
        commit_id: commitId,
        last_commit_id: last,
      };
    },

    close() {
      store.close();
    },
  };
}
