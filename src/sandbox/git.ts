/**
 * Real git repositories for the sandbox: one bare repository per project under `<dir>/<id>.git`,
 * driven through the git CLI (>= 2.38 for `merge-tree --write-tree`). Commits are built with
 * plumbing (blobs, a temporary index, `write-tree`, `commit-tree`, `update-ref` with the old value
 * as compare-and-swap), so no work tree is ever needed and SHAs, diffs and merges are real.
 *
 * Every call runs git with a controlled environment (no system or user configuration, `LC_ALL=C`,
 * literal pathspecs) so the sandbox behaves the same on every machine and inside git hooks, where
 * `GIT_DIR` and `GIT_INDEX_FILE` of the caller would otherwise leak in.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { GitAuthor, GitCommit, GitDiffEntry, GitMergeResult, GitRepos } from './context.ts';

export type GitErrorKind =
  | 'missing-repository'
  | 'missing-branch'
  | 'invalid-branch-name'
  | 'branch-exists'
  | 'invalid-path'
  | 'file-exists'
  | 'file-missing'
  | 'concurrent-update'
  | 'failed';

/** A refused repository operation; `kind` lets the routes answer with the real servers' wording. */
export class GitError extends Error {
  constructor(
    readonly kind: GitErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'GitError';
  }
}

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

export interface GitReposOptions {
  /** Commit timestamps come from this clock when given (tests); git's own clock otherwise. */
  clock?: () => Date;
}

/** The empty tree of SHA-1 repositories: what a root commit's diff is taken against. */
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

interface GitRun {
  code: number;
  stdout: Buffer;
  stderr: string;
}

interface RunOptions {
  env?: Record<string, string>;
  input?: string | Buffer;
  /** Exit codes that are answers rather than failures (e.g. 1 for "not found" or "conflict"). */
  allow?: number[];
}

export function createGitRepos(dir: string, options: GitReposOptions = {}): GitRepos & GitFileReader {
  const repoPath = (projectId: number) => path.join(dir, `${projectId}.git`);

  const baseEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: dir,
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    // Paths given to ls-tree and rev-list are file names, never patterns (`*.md` is a file here).
    GIT_LITERAL_PATHSPECS: '1',
    // No background gc or maintenance racing a `remove` or the end of a test.
    GIT_CONFIG_COUNT: '2',
    GIT_CONFIG_KEY_0: 'gc.auto',
    GIT_CONFIG_VALUE_0: '0',
    GIT_CONFIG_KEY_1: 'maintenance.auto',
    GIT_CONFIG_VALUE_1: 'false',
    // Commands that never commit still want an identity on some versions.
    GIT_AUTHOR_NAME: 'Sandbox',
    GIT_AUTHOR_EMAIL: 'sandbox@localhost',
    GIT_COMMITTER_NAME: 'Sandbox',
    GIT_COMMITTER_EMAIL: 'sandbox@localhost',
  };
  // The commit offset is the server's local zone, as on a real server.
  if (process.env.TZ) baseEnv.TZ = process.env.TZ;

  function run(args: string[], opts: RunOptions = {}): Promise<GitRun> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        'git',
        args,
        { env: { ...baseEnv, ...opts.env }, encoding: 'buffer', maxBuffer: 512 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          const result = { code, stdout, stderr: stderr.toString('utf8') };
          if (code === 0 || opts.allow?.includes(code)) resolve(result);
          else
            reject(
              new GitError(
                'failed',
                `git ${args[0] === '-C' ? args[2] : args[0]} failed: ${result.stderr.trim() || String(error?.message)}`,
              ),
            );
        },
      );
      // git may exit before reading all of stdin (an error): the EPIPE is not ours to report.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(opts.input ?? '');
    });
  }

  const text = (r: GitRun) => r.stdout.toString('utf8').trim();

  // ---- per-repository write serialisation -------------------------------------------------
  // Writes to one repository run one at a time, so a read-modify-write (read head, commit, move
  // the ref) never races another; `update-ref <new> <old>` is the safety net behind it.
  const locks = new Map<number, Promise<void>>();
  function exclusive<T>(projectId: number, fn: () => Promise<T>): Promise<T> {
    const previous = locks.get(projectId) ?? Promise.resolve();
    const result = previous.then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    locks.set(projectId, tail);
    void tail.then(() => {
      if (locks.get(projectId) === tail) locks.delete(projectId);
    });
    return result;
  }

  async function exists(projectId: number): Promise<boolean> {
    try {
      return (await stat(repoPath(projectId))).isDirectory();
    } catch {
      return false;
    }
  }

  async function requireRepo(projectId: number): Promise<string> {
    if (!(await exists(projectId)))
      throw new GitError('missing-repository', `project ${projectId} has no repository`);
    return repoPath(projectId);
  }

  function identityEnv(author: GitAuthor): Record<string, string> {
    const env: Record<string, string> = {
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_COMMITTER_NAME: author.name,
      GIT_COMMITTER_EMAIL: author.email,
    };
    if (options.clock) {
      const now = options.clock();
      const date = `@${Math.floor(now.getTime() / 1000)} ${formatOffset(-now.getTimezoneOffset(), '')}`;
      env.GIT_AUTHOR_DATE = date;
      env.GIT_COMMITTER_DATE = date;
    }
    return env;
  }

  // ---- memos of what never changes ---------------------------------------------------------
  // A commit, once written, is never rewritten or deleted (repositories are removed only with
  // their project, and ids are not reused): so "this full sha is a commit" and the commit itself
  // can be remembered. Refs move, so branch and tag names are always asked of git. The memo saves
  // about half of the git processes a merge request read costs. Bounded: oldest entries go first.
  const MEMO_LIMIT = 20_000;
  const knownCommits = new Map<string, GitCommit>();
  const memoKey = (repo: string, sha: string, env?: Record<string, string>) =>
    `${repo}\0${env?.GIT_ALTERNATE_OBJECT_DIRECTORIES ?? ''}\0${sha}`;
  function remember(key: string, commit: GitCommit): void {
    if (knownCommits.size >= MEMO_LIMIT) knownCommits.delete(knownCommits.keys().next().value!);
    knownCommits.set(key, commit);
  }

  /** A full sha for a branch, tag or sha (only commits), or undefined. */
  async function resolveIn(
    repo: string,
    ref: string,
    env?: Record<string, string>,
  ): Promise<string | undefined> {
    if (!ref || ref.includes('\0')) return undefined;
    if (FULL_SHA.test(ref) && knownCommits.has(memoKey(repo, ref, env))) return ref;
    const r = await run(
      ['-C', repo, 'rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`],
      {
        env,
        allow: [1, 128],
      },
    );
    return r.code === 0 ? text(r) : undefined;
  }

  function branchHead(repo: string, name: string): Promise<string | undefined> {
    if (!validBranchShape(name)) return Promise.resolve(undefined);
    return resolveIn(repo, `refs/heads/${name}`);
  }

  async function readCommits(
    repo: string,
    shas: string[],
    env?: Record<string, string>,
  ): Promise<GitCommit[]> {
    if (shas.length === 0) return [];
    if (!shas.every((sha) => FULL_SHA.test(sha))) {
      const r = await run(['-C', repo, 'cat-file', '--batch'], { env, input: `${shas.join('\n')}\n` });
      return parseBatch(r.stdout)
        .filter((o) => o.type === 'commit')
        .map((o) => parseCommit(o.sha, o.content));
    }
    const missing = shas.filter((sha) => !knownCommits.has(memoKey(repo, sha, env)));
    const read = new Map<string, GitCommit>();
    if (missing.length > 0) {
      const r = await run(['-C', repo, 'cat-file', '--batch'], { env, input: `${missing.join('\n')}\n` });
      for (const o of parseBatch(r.stdout))
        if (o.type === 'commit') {
          const commit = parseCommit(o.sha, o.content);
          read.set(o.sha, commit);
          remember(memoKey(repo, o.sha, env), commit);
        }
    }
    const out: GitCommit[] = [];
    for (const sha of shas) {
      const commit = read.get(sha) ?? knownCommits.get(memoKey(repo, sha, env));
      // A copy: callers may shape what they are given; the memo stays as git wrote it.
      if (commit) out.push(structuredClone(commit));
    }
    return out;
  }

  async function readCommit(repo: string, sha: string, env?: Record<string, string>): Promise<GitCommit> {
    const [commit] = await readCommits(repo, [sha], env);
    if (!commit) throw new GitError('failed', `commit ${sha} could not be read`);
    return commit;
  }

  async function revList(repo: string, args: string[], env?: Record<string, string>): Promise<string[]> {
    const r = await run(['-C', repo, 'rev-list', '--topo-order', ...args], { env });
    return text(r).split('\n').filter(Boolean);
  }

  async function checkBranchName(name: string): Promise<void> {
    // Real servers run `git check-ref-format refs/<name>` and refuse refs/heads/ and refs/remotes/ prefixes.
    const shapeOk =
      validBranchShape(name) && !name.startsWith('refs/heads/') && !name.startsWith('refs/remotes/');
    const r = shapeOk ? await run(['check-ref-format', `refs/heads/${name}`], { allow: [1] }) : undefined;
    if (!r || r.code !== 0) throw new GitError('invalid-branch-name', `"${name}" is not a valid branch name`);
  }

  /** Entries of `paths` at `treeish` (missing paths are absent from the map). */
  async function lsTree(repo: string, treeish: string, paths: string[]): Promise<Map<string, TreeEntry>> {
    const r = await run(['-C', repo, 'ls-tree', '-z', treeish, '--', ...paths]);
    const entries = new Map<string, TreeEntry>();
    for (const record of r.stdout.toString('utf8').split('\0')) {
      const tab = record.indexOf('\t');
      if (tab < 0) continue;
      const [mode = '', type = '', oid = ''] = record.slice(0, tab).split(' ');
      entries.set(record.slice(tab + 1), { mode, type, oid });
    }
    return entries;
  }

  /** A tree made of `base` (or nothing) plus `files`, through a temporary index. */
  async function writeTree(
    repo: string,
    base: string | undefined,
    files: { path: string; mode: string; blob: string }[],
  ) {
    const index = path.join(repo, `sandbox-index-${randomBytes(6).toString('hex')}`);
    const env = { GIT_INDEX_FILE: index };
    try {
      if (base) await run(['-C', repo, 'read-tree', base], { env });
      const info = files.map((f) => `${f.mode} ${f.blob}\t${f.path}\0`).join('');
      await run(['-C', repo, 'update-index', '-z', '--add', '--index-info'], { env, input: info });
      return text(await run(['-C', repo, 'write-tree'], { env }));
    } finally {
      await rm(index, { force: true });
    }
  }

  async function hashBlob(repo: string, content: string | Buffer): Promise<string> {
    return text(await run(['-C', repo, 'hash-object', '-w', '--no-filters', '--stdin'], { input: content }));
  }

  async function commitTree(
    repo: string,
    tree: string,
    parents: string[],
    message: string,
    author: GitAuthor,
  ) {
    const args = ['-C', repo, 'commit-tree', tree];
    for (const p of parents) args.push('-p', p);
    // The message goes in verbatim through stdin (`-m` would append a newline): real servers store
    // the text as given, so a commit made through the API reads back exactly.
    return text(await run(args, { env: identityEnv(author), input: message }));
  }

  /** Moves `ref` from `old` (undefined: must not exist yet) to `sha`; refuses if someone moved it. */
  async function casRef(repo: string, ref: string, sha: string, old: string | undefined): Promise<void> {
    const r = await run(['-C', repo, 'update-ref', ref, sha, old ?? ''], { allow: [128] });
    if (r.code !== 0) throw new GitError('concurrent-update', `${ref} moved while it was being updated`);
  }

  async function diffBetween(repo: string, from: string, to: string, env?: Record<string, string>) {
    const [raw, patch] = await Promise.all([
      run(['-C', repo, 'diff-tree', '-r', '-z', '--raw', '-M', '--no-color', from, to], { env }),
      run(['-C', repo, 'diff-tree', '-r', '-p', '-M', '--no-color', from, to], { env }),
    ]);
    return parseDiff(raw.stdout.toString('utf8'), patch.stdout.toString('utf8'));
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

  async function mergeTree(repo: string, ours: string, theirs: string, env?: Record<string, string>) {
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
    if (r.code === 0) return { clean: true as const, tree };
    return { clean: false as const, files: [...new Set(rest.filter(Boolean))] };
  }

  return {
    async create(projectId, { defaultBranch, initialFiles, author, message }) {
      await exclusive(projectId, async () => {
        await mkdir(dir, { recursive: true });
        const repo = repoPath(projectId);
        await run(['init', '--quiet', '--bare', `--initial-branch=${defaultBranch}`, repo]);
        const entries = Object.entries(initialFiles ?? {});
        if (entries.length === 0) return;
        const files = [];
        for (const [filePath, content] of entries)
          files.push({ path: normalisePath(filePath), mode: '100644', blob: await hashBlob(repo, content) });
        const tree = await writeTree(repo, undefined, files);
        const sha = await commitTree(repo, tree, [], message ?? 'Initial commit', author);
        await casRef(repo, `refs/heads/${defaultBranch}`, sha, undefined);
      });
    },

    async remove(projectId) {
      await exclusive(projectId, () => rm(repoPath(projectId), { recursive: true, force: true }));
    },

    async fork(fromProjectId, toProjectId) {
      const source = await requireRepo(fromProjectId);
      await exclusive(toProjectId, async () => {
        const repo = repoPath(toProjectId);
        const head = await run(['-C', source, 'symbolic-ref', 'HEAD'], { allow: [1, 128] });
        await run(['init', '--quiet', '--bare', repo]);
        if (head.code === 0) await run(['-C', repo, 'symbolic-ref', 'HEAD', text(head)]);
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
      const r = await run(['-C', repo, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/']);
      const heads = text(r)
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const space = line.indexOf(' ');
          return { sha: line.slice(0, space), name: line.slice(space + 1 + 'refs/heads/'.length) };
        });
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
      return exclusive(projectId, async () => {
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
      await exclusive(projectId, async () => {
        const sha = await branchHead(repo, name);
        if (!sha) throw new GitError('missing-branch', `branch "${name}" does not exist`);
        const r = await run(['-C', repo, 'update-ref', '-d', `refs/heads/${name}`, sha], { allow: [128] });
        if (r.code !== 0)
          throw new GitError('concurrent-update', `refs/heads/${name} moved while it was being deleted`);
      });
    },

    async commitFile(projectId, { branch, path: rawPath, content, message, author, mode }) {
      const repo = await requireRepo(projectId);
      const filePath = normalisePath(rawPath);
      return exclusive(projectId, async () => {
        const head = await branchHead(repo, branch);
        if (!head) {
          // An empty repository takes its first file on any branch (real servers allow the first
          // commit of an empty project through the files API); otherwise the branch must exist.
          const anyBranch = text(await run(['-C', repo, 'for-each-ref', '--count=1', 'refs/heads/']));
          if (anyBranch || mode !== 'create')
            throw new GitError('missing-branch', `branch "${branch}" does not exist`);
          await checkBranchName(branch);
        }
        let fileMode = '100644';
        if (head) {
          const parents = parentDirs(filePath);
          const entries = await lsTree(repo, head, [...parents, filePath]);
          for (const dirPath of parents)
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
        // Mode 0 with the null id takes the path out of the index (`update-index --index-info`).
        const entry =
          mode === 'delete'
            ? { path: filePath, mode: '0', blob: NULL_SHA }
            : { path: filePath, mode: fileMode, blob: await hashBlob(repo, content) };
        const tree = await writeTree(repo, head, [entry]);
        const sha = await commitTree(repo, tree, head ? [head] : [], message, author);
        await casRef(repo, `refs/heads/${branch}`, sha, head);
        return readCommit(repo, sha);
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

    async compare(projectId, target, sourceProjectId, source) {
      const ends = await mergeEnds(projectId, target, sourceProjectId, source);
      if (!ends) return { commits: [], diffs: [], mergeBase: undefined };
      const { repo, env, targetSha, sourceSha } = ends;
      const base = await run(['-C', repo, 'merge-base', targetSha, sourceSha], { env, allow: [1] });
      const mergeBase = base.code === 0 ? text(base) : undefined;
      const commits = await readCommits(repo, await revList(repo, [`${targetSha}..${sourceSha}`], env), env);
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
      return exclusive(projectId, async () => {
        const targetSha = await branchHead(repo, target);
        if (!targetSha) throw new GitError('missing-branch', `branch "${target}" does not exist`);
        let tempRef: string | undefined;
        try {
          let sourceSha: string | undefined;
          if (sourceProjectId === projectId) sourceSha = await branchHead(repo, source);
          else if (validBranchShape(source) && (await branchHead(sourceRepo, source))) {
            // A fork's branch: bring its objects into this repository first, so the merge commit
            // stands on its own once written.
            tempRef = `refs/sandbox-tmp/${randomBytes(8).toString('hex')}`;
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
          const sha = await commitTree(repo, result.tree, [targetSha, sourceSha], message, author);
          await casRef(repo, `refs/heads/${target}`, sha, targetSha);
          return { ok: true, sha };
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
      const entry = (await lsTree(repo, commitId, [filePath])).get(filePath);
      if (entry?.type !== 'blob') return undefined;
      const [blob, last] = await Promise.all([
        run(['-C', repo, 'cat-file', 'blob', entry.oid]),
        run(['-C', repo, 'rev-list', '--max-count=1', commitId, '--', filePath]),
      ]);
      return {
        path: filePath,
        blob_id: entry.oid,
        mode: entry.mode,
        size: blob.stdout.length,
        content: blob.stdout,
        commit_id: commitId,
        last_commit_id: text(last) || commitId,
      };
    },
  };
}

interface TreeEntry {
  mode: string;
  type: string;
  oid: string;
}

/** The all-zeros sha real servers send as `before` of a new branch and `after` of a deleted one. */
export const NULL_SHA = '0000000000000000000000000000000000000000';

/** Names git could never take as a branch, refused before asking git (and before any option parsing). */
function validBranchShape(name: string): boolean {
  return name.length > 0 && !name.startsWith('-') && !/[\0\n\r]/.test(name);
}

/** A repository path: no leading slash (real servers drop it), no `.`/`..`/empty parts, no `.git`. */
export function normalisePath(raw: string): string {
  const trimmed = raw.replace(/^\/+/, '');
  const parts = trimmed.split('/');
  if (
    trimmed === '' ||
    /[\0\n\r]/.test(trimmed) ||
    parts.some((p) => p === '' || p === '.' || p === '..' || p.toLowerCase() === '.git')
  )
    throw new GitError('invalid-path', `"${raw}" is not a valid file path`);
  return trimmed;
}

function parentDirs(filePath: string): string[] {
  const parts = filePath.split('/');
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** Objects of `git cat-file --batch` output. */
const FULL_SHA = /^[0-9a-f]{40}$/;

function parseBatch(out: Buffer): { sha: string; type: string; content: Buffer }[] {
  const objects: { sha: string; type: string; content: Buffer }[] = [];
  let pos = 0;
  while (pos < out.length) {
    const nl = out.indexOf(10, pos);
    if (nl < 0) break;
    const [sha = '', type = '', size] = out.subarray(pos, nl).toString('utf8').split(' ');
    if (type === 'missing' || size === undefined) {
      pos = nl + 1;
      continue;
    }
    const length = Number(size);
    objects.push({ sha, type, content: out.subarray(nl + 1, nl + 1 + length) });
    pos = nl + 1 + length + 1;
  }
  return objects;
}

function parseCommit(sha: string, raw: Buffer): GitCommit {
  const body = raw.toString('utf8');
  const split = body.indexOf('\n\n');
  const headers = split < 0 ? body : body.slice(0, split);
  const message = split < 0 ? '' : body.slice(split + 2);
  let tree = '';
  const parents: string[] = [];
  let author: Signature = { name: '', email: '', date: '' };
  let committer: Signature = author;
  for (const line of headers.split('\n')) {
    if (line.startsWith(' ')) continue; // continuation of a multi-line header (gpgsig, mergetag)
    const space = line.indexOf(' ');
    const key = line.slice(0, space);
    const value = line.slice(space + 1);
    if (key === 'tree') tree = value;
    else if (key === 'parent') parents.push(value);
    else if (key === 'author') author = parseSignature(value);
    else if (key === 'committer') committer = parseSignature(value);
  }
  return {
    id: sha,
    // gitlab_git's `short_id` is `id[0..10]`: 11 characters (the 8.x samples show `ed899a2f4b5`).
    short_id: sha.slice(0, 11),
    title: commitTitle(message),
    message,
    author_name: author.name,
    author_email: author.email,
    authored_date: author.date,
    committer_name: committer.name,
    committer_email: committer.email,
    committed_date: committer.date,
    parent_ids: parents,
    tree,
  };
}

interface Signature {
  name: string;
  email: string;
  date: string;
}

function parseSignature(value: string): Signature {
  const match = /^(.*?) ?<([^>]*)> (\d+) ([+-])(\d\d)(\d\d)$/.exec(value);
  if (!match) return { name: value, email: '', date: '' };
  const [, name = '', email = '', seconds = '0', sign = '+', hh = '00', mm = '00'] = match;
  const offset = (sign === '-' ? -1 : 1) * (Number(hh) * 60 + Number(mm));
  const local = new Date(Number(seconds) * 1000 + offset * 60_000).toISOString().slice(0, 19);
  return { name, email, date: `${local}${formatOffset(offset, ':')}` };
}

function formatOffset(minutes: number, separator: string): string {
  const abs = Math.abs(minutes);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${minutes < 0 ? '-' : '+'}${hh}${separator}${mm}`;
}

/**
 * The title real servers show (Commit#title of 8.x): the first line, or its first 80 characters and
 * an ellipsis when that line is longer than 100; `--no commit message` when there is none.
 */
export function commitTitle(message: string): string {
  if (message.trim() === '') return '--no commit message';
  const end = message.indexOf('\n');
  const first = end < 0 ? message : message.slice(0, end);
  return first.length > 100 ? `${first.slice(0, 80)}…` : first;
}

/**
 * Diff entries from `diff-tree -z --raw` (exact paths, modes, status) zipped with the patches of
 * `diff-tree -p` (same order). The `diff` text starts at `--- a/...` (or `Binary files ...`), as
 * real servers strip the `diff --git`/`index` header lines, and is empty when there is no such line
 * (a pure rename or mode change).
 */
function parseDiff(raw: string, patch: string): GitDiffEntry[] {
  const fields = raw.split('\0');
  const records: { aMode: string; bMode: string; status: string; oldPath: string; newPath: string }[] = [];
  for (let i = 0; i < fields.length;) {
    const meta = fields[i++] ?? '';
    if (!meta.startsWith(':')) continue;
    const [aMode = '', bMode = '', , , status = ''] = meta.slice(1).split(' ');
    const letter = status.charAt(0);
    const oldPath = fields[i++] ?? '';
    const newPath = letter === 'R' || letter === 'C' ? (fields[i++] ?? '') : oldPath;
    records.push({ aMode, bMode, status: letter, oldPath, newPath });
  }
  const patches = patch.length === 0 ? [] : `\n${patch}`.split('\ndiff --git ').slice(1);
  let next = 0;
  return records.map((r) => ({
    // A type change (file <-> symlink) is one raw record but two patches (a deletion and an addition).
    diff:
      r.status === 'T'
        ? stripHeaders(patches[next++] ?? '') + stripHeaders(patches[next++] ?? '')
        : stripHeaders(patches[next++] ?? ''),
    old_path: r.oldPath,
    new_path: r.newPath,
    // A side that does not exist has mode 0 (`"0"`), as libgit2 reported it to real servers.
    a_mode: r.aMode === '000000' ? '0' : r.aMode,
    b_mode: r.bMode === '000000' ? '0' : r.bMode,
    new_file: r.status === 'A',
    renamed_file: r.status === 'R',
    deleted_file: r.status === 'D',
  }));
}

function stripHeaders(filePatch: string): string {
  const lines = filePatch.split('\n');
  const start = lines.findIndex((l) => l.startsWith('---') || l.startsWith('Binary'));
  if (start < 0) return '';
  // git pads `--- a/name with space` with a tab for GNU patch; libgit2 (real servers) does not.
  const kept = lines
    .slice(start)
    .map((l, i) => (i < 2 && /^(---|\+\+\+) /.test(l) ? l.replace(/\t$/, '') : l));
  const out = kept.join('\n');
  return out.endsWith('\n') ? out : `${out}\n`;
}
