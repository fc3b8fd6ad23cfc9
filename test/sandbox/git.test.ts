import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitTitle, createGitRepos, GitError, normalisePath } from '../../src/sandbox/git.ts';

const alice = { name: 'Alice Example', email: 'alice@example.com' };
const bob = { name: 'Bob Example', email: 'bob@example.com' };

describe('sandbox git repositories', () => {
  let dir = '';
  let git: ReturnType<typeof createGitRepos>;
  let nextId = 100;
  const newId = () => nextId++;
  /** Asks git itself, to check the repositories independently of the code under test. */
  const gitIn = (projectId: number, ...args: string[]) =>
    execFileSync('git', ['-C', path.join(dir, `${projectId}.git`), ...args], {
      env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1' },
    })
      .toString('utf8')
      .trim();

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookbot-git-test-'));
    git = createGitRepos(dir);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function project(files: Record<string, string> = { 'README.md': 'one\ntwo\nthree\n' }) {
    const id = newId();
    await git.create(id, { defaultBranch: 'master', initialFiles: files, author: alice });
    return id;
  }

  describe('create', () => {
    it('makes a first commit with the initial files on the default branch', async () => {
      const id = await project({ 'README.md': 'hello\n', 'src/index.ts': 'export {};\n' });
      const head = await git.branch(id, 'master');
      expect(head).toMatchObject({
        title: 'Initial commit',
        message: 'Initial commit',
        author_name: 'Alice Example',
        author_email: 'alice@example.com',
        committer_name: 'Alice Example',
        parent_ids: [],
      });
      expect(head!.id).toMatch(/^[0-9a-f]{40}$/);
      expect(head!.short_id).toBe(head!.id.slice(0, 11));
      expect(head!.tree).toBe(gitIn(id, 'rev-parse', 'master^{tree}'));
      expect(head!.authored_date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
      expect(gitIn(id, 'show', 'master:src/index.ts')).toBe('export {};');
      expect(gitIn(id, 'symbolic-ref', 'HEAD')).toBe('refs/heads/master');
    });

    it('starts an empty repository without initial files', async () => {
      const id = newId();
      await git.create(id, { defaultBranch: 'main', author: alice });
      expect(await git.branches(id)).toEqual([]);
      expect(await git.log(id, 'main')).toEqual([]);
      expect(await git.commit(id, 'main')).toBeUndefined();
    });

    it('takes the first file of an empty repository on any branch', async () => {
      const id = newId();
      await git.create(id, { defaultBranch: 'main', author: alice });
      const commit = await git.commitFile(id, {
        branch: 'main',
        path: 'a.txt',
        content: 'a\n',
        message: 'first',
        author: alice,
        mode: 'create',
      });
      expect(commit.parent_ids).toEqual([]);
      expect((await git.branches(id)).map((b) => b.name)).toEqual(['main']);
    });
  });

  describe('commitFile', () => {
    it('creates a file with one commit whose parent is the old head', async () => {
      const id = await project();
      const before = await git.branch(id, 'master');
      const commit = await git.commitFile(id, {
        branch: 'master',
        path: 'docs/guide.md',
        content: '# Guide\n',
        message: 'Add the guide\n\nWith a body.',
        author: bob,
        mode: 'create',
      });
      expect(commit.parent_ids).toEqual([before!.id]);
      expect(commit.title).toBe('Add the guide');
      expect(commit.message).toBe('Add the guide\n\nWith a body.');
      expect(commit.author_name).toBe('Bob Example');
      expect((await git.branch(id, 'master'))!.id).toBe(commit.id);
      expect(gitIn(id, 'show', 'master:docs/guide.md')).toBe('# Guide');
      expect(gitIn(id, 'show', 'master:README.md')).toBe('one\ntwo\nthree');
    });

    it('updates a file and keeps binary content exact', async () => {
      const id = await project();
      const bytes = Buffer.from([0, 1, 2, 255, 10]);
      await git.commitFile(id, {
        branch: 'master',
        path: 'README.md',
        content: bytes,
        message: 'binary',
        author: alice,
        mode: 'update',
      });
      const file = await git.readFile(id, 'master', 'README.md');
      expect(file?.content.equals(bytes)).toBe(true);
      expect(file?.size).toBe(5);
    });

    it.each([
      ['create an existing file', 'README.md', 'create' as const, 'master', 'file-exists'],
      ['update a missing file', 'nope.md', 'update' as const, 'master', 'file-missing'],
      ['commit on a missing branch', 'x.md', 'create' as const, 'nope', 'missing-branch'],
      ['create under a path that is a file', 'README.md/x', 'create' as const, 'master', 'invalid-path'],
      ['use a path with ..', '../x', 'create' as const, 'master', 'invalid-path'],
      ['write into .git', '.git/config', 'create' as const, 'master', 'invalid-path'],
    ])('refuses to %s with a GitError', async (_name, filePath, mode, branch, kind) => {
      const id = await project();
      const head = (await git.branch(id, 'master'))!.id;
      const attempt = git.commitFile(id, {
        branch,
        path: filePath,
        content: 'x',
        message: 'm',
        author: alice,
        mode,
      });
      await expect(attempt).rejects.toBeInstanceOf(GitError);
      await expect(attempt).rejects.toMatchObject({ kind });
      expect((await git.branch(id, 'master'))!.id).toBe(head);
    });

    it('loses no update when many commits race on one branch', async () => {
      const id = await project();
      const count = 12;
      const commits = await Promise.all(
        Array.from({ length: count }, (_, i) =>
          git.commitFile(id, {
            branch: 'master',
            path: `race/file-${i}.txt`,
            content: `${i}\n`,
            message: `race ${i}`,
            author: alice,
            mode: 'create',
          }),
        ),
      );
      const log = await git.log(id, 'master');
      expect(log).toHaveLength(count + 1);
      expect(new Set(log.map((c) => c.id))).toEqual(new Set([...commits.map((c) => c.id), log.at(-1)!.id]));
      const files = gitIn(id, 'ls-tree', '--name-only', 'master', 'race/').split('\n');
      expect(files).toHaveLength(count);
    });
  });

  describe('branches', () => {
    it('creates, lists, reads and deletes branches', async () => {
      const id = await project();
      const master = (await git.branch(id, 'master'))!;
      const created = await git.createBranch(id, 'feature/x', 'master');
      expect(created?.id).toBe(master.id);
      const fromSha = await git.createBranch(id, 'from-sha', master.id);
      expect(fromSha?.id).toBe(master.id);
      expect((await git.branches(id)).map((b) => [b.name, b.commit.id])).toEqual([
        ['feature/x', master.id],
        ['from-sha', master.id],
        ['master', master.id],
      ]);
      await git.deleteBranch(id, 'from-sha');
      expect(await git.branch(id, 'from-sha')).toBeUndefined();
      await expect(git.deleteBranch(id, 'from-sha')).rejects.toMatchObject({ kind: 'missing-branch' });
    });

    it.each([
      ['an unknown ref', 'ok-name', 'no-such-ref', undefined],
      ['an existing name', 'master', 'master', 'branch-exists'],
      ['an invalid name', 'bad..name', 'master', 'invalid-branch-name'],
      ['a name starting with a dash', '-x', 'master', 'invalid-branch-name'],
    ])('refuses a branch with %s', async (_name, name, ref, kind) => {
      const id = await project();
      const attempt = git.createBranch(id, name, ref);
      if (kind === undefined) await expect(attempt).resolves.toBeUndefined();
      else await expect(attempt).rejects.toMatchObject({ kind });
    });
  });

  describe('log, commit, resolve and diff', () => {
    it('lists commits newest first, with a limit, and resolves branches, shas and short shas', async () => {
      const id = await project();
      const second = await git.commitFile(id, {
        branch: 'master',
        path: 'b.txt',
        content: 'b\n',
        message: 'second',
        author: alice,
        mode: 'create',
      });
      const log = await git.log(id, 'master');
      expect(log.map((c) => c.title)).toEqual(['second', 'Initial commit']);
      expect(await git.log(id, 'master', { limit: 1 })).toEqual([second]);
      expect(await git.log(id, 'nope')).toEqual([]);
      expect(await git.resolve(id, 'master')).toBe(second.id);
      expect(await git.resolve(id, second.id.slice(0, 11))).toBe(second.id);
      expect(await git.resolve(id, '--help')).toBeUndefined();
      expect(await git.commit(id, second.id)).toEqual(second);
      expect(await git.commit(id, 'deadbeef')).toBeUndefined();
    });

    it('describes added, modified, deleted and renamed files like real servers', async () => {
      const id = await project({
        'keep.txt': 'a\nb\nc\n',
        'gone.txt': 'bye\n',
        'old-name.txt': 'same content here\n',
      });
      const root = (await git.branch(id, 'master'))!;
      const rootDiff = await git.diff(id, root.id);
      expect(rootDiff.map((d) => [d.new_path, d.new_file, d.a_mode, d.b_mode])).toEqual([
        ['gone.txt', true, '0', '100644'],
        ['keep.txt', true, '0', '100644'],
        ['old-name.txt', true, '0', '100644'],
      ]);
      expect(rootDiff[0]!.diff).toBe('--- /dev/null\n+++ b/gone.txt\n@@ -0,0 +1 @@\n+bye\n');

      // One commit with every kind of change, built with git itself.
      const env = { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1' };
      const repo = path.join(dir, `${id}.git`);
      const run = (args: string[], input?: string) =>
        execFileSync('git', ['-C', repo, ...args], {
          env: {
            ...env,
            GIT_INDEX_FILE: path.join(dir, `idx-${id}`),
            GIT_AUTHOR_NAME: 'a',
            GIT_AUTHOR_EMAIL: 'a@x',
            GIT_COMMITTER_NAME: 'a',
            GIT_COMMITTER_EMAIL: 'a@x',
          },
          input,
        })
          .toString()
          .trim();
      run(['read-tree', 'master']);
      const blob = run(['hash-object', '-w', '--stdin'], 'a\nB\nc\n');
      const same = run(['rev-parse', 'master:old-name.txt']);
      const zero = '0'.repeat(40);
      // Mode 0 removes a path from the index (no work tree needed, as in a bare repository).
      run(
        ['update-index', '--index-info'],
        `100644 ${blob}\tkeep.txt\n0 ${zero}\tgone.txt\n0 ${zero}\told-name.txt\n100644 ${same}\tnew-name.txt\n`,
      );
      const tree = run(['write-tree']);
      const sha = run(['commit-tree', tree, '-p', 'master', '-m', 'changes']);
      run(['update-ref', 'refs/heads/master', sha]);

      const diff = await git.diff(id, sha);
      const byPath = Object.fromEntries(diff.map((d) => [d.new_path, d]));
      expect(byPath['keep.txt']).toEqual({
        diff: '--- a/keep.txt\n+++ b/keep.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n',
        old_path: 'keep.txt',
        new_path: 'keep.txt',
        a_mode: '100644',
        b_mode: '100644',
        new_file: false,
        renamed_file: false,
        deleted_file: false,
      });
      expect(byPath['gone.txt']).toMatchObject({
        deleted_file: true,
        new_file: false,
        a_mode: '100644',
        b_mode: '0',
        diff: '--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n',
      });
      expect(byPath['new-name.txt']).toMatchObject({
        old_path: 'old-name.txt',
        renamed_file: true,
        new_file: false,
        deleted_file: false,
        diff: '',
      });
      expect(diff).toHaveLength(3);
    });

    it('shows a binary change as git names it', async () => {
      const id = await project();
      const commit = await git.commitFile(id, {
        branch: 'master',
        path: 'logo.bin',
        content: Buffer.from([0, 159, 146, 150, 0]),
        message: 'logo',
        author: alice,
        mode: 'create',
      });
      const [entry] = await git.diff(id, commit.id);
      expect(entry?.diff).toBe('Binary files /dev/null and b/logo.bin differ\n');
    });
  });

  describe('compare, canMerge and merge', () => {
    async function diverged() {
      const id = await project();
      await git.createBranch(id, 'feature', 'master');
      const f1 = await git.commitFile(id, {
        branch: 'feature',
        path: 'feature.txt',
        content: 'f\n',
        message: 'feature one',
        author: bob,
        mode: 'create',
      });
      const f2 = await git.commitFile(id, {
        branch: 'feature',
        path: 'README.md',
        content: 'one\ntwo\nthree\nfour\n',
        message: 'feature two',
        author: bob,
        mode: 'update',
      });
      await git.commitFile(id, {
        branch: 'master',
        path: 'master.txt',
        content: 'm\n',
        message: 'master moves on',
        author: alice,
        mode: 'create',
      });
      return { id, f1, f2 };
    }

    it('compares: the commits on source not on target, and the diff from the merge base', async () => {
      const { id, f1, f2 } = await diverged();
      const base = gitIn(id, 'merge-base', 'master', 'feature');
      const result = await git.compare(id, 'master', id, 'feature');
      expect(result.mergeBase).toBe(base);
      expect(result.commits.map((c) => c.id)).toEqual([f2.id, f1.id]);
      expect(result.diffs.map((d) => d.new_path).sort()).toEqual(['README.md', 'feature.txt']);
      expect(result.diffs.some((d) => d.new_path === 'master.txt')).toBe(false);
      expect(await git.compare(id, 'master', id, 'nope')).toEqual({
        commits: [],
        diffs: [],
        mergeBase: undefined,
      });
    });

    it('merges with a real merge commit whose tree holds both sides', async () => {
      const { id, f2 } = await diverged();
      const target = (await git.branch(id, 'master'))!;
      expect(await git.canMerge(id, 'master', id, 'feature')).toBe(true);
      const result = await git.merge(id, {
        target: 'master',
        sourceProjectId: id,
        source: 'feature',
        message: "Merge branch 'feature' into 'master'",
        author: alice,
      });
      expect(result.ok).toBe(true);
      const merged = (await git.branch(id, 'master'))!;
      expect(result).toEqual({ ok: true, sha: merged.id });
      expect(merged.parent_ids).toEqual([target.id, f2.id]);
      expect(merged.message).toBe("Merge branch 'feature' into 'master'");
      expect(gitIn(id, 'show', 'master:README.md')).toBe('one\ntwo\nthree\nfour');
      expect(gitIn(id, 'show', 'master:master.txt')).toBe('m');
      expect(gitIn(id, 'show', 'master:feature.txt')).toBe('f');
    });

    it('still makes a merge commit when a fast-forward would do', async () => {
      const id = await project();
      await git.createBranch(id, 'ff', 'master');
      const tip = await git.commitFile(id, {
        branch: 'ff',
        path: 'x',
        content: 'x',
        message: 'x',
        author: alice,
        mode: 'create',
      });
      const result = await git.merge(id, {
        target: 'master',
        sourceProjectId: id,
        source: 'ff',
        message: 'm',
        author: alice,
      });
      const merged = (await git.branch(id, 'master'))!;
      expect(result).toEqual({ ok: true, sha: merged.id });
      expect(merged.parent_ids).toHaveLength(2);
      expect(merged.parent_ids[1]).toBe(tip.id);
    });

    it('reports a real conflict when both branches edit the same line, and writes nothing', async () => {
      const id = await project();
      await git.createBranch(id, 'left', 'master');
      await git.commitFile(id, {
        branch: 'left',
        path: 'README.md',
        content: 'one\nLEFT\nthree\n',
        message: 'left',
        author: alice,
        mode: 'update',
      });
      await git.commitFile(id, {
        branch: 'master',
        path: 'README.md',
        content: 'one\nMASTER\nthree\n',
        message: 'master',
        author: bob,
        mode: 'update',
      });
      const head = (await git.branch(id, 'master'))!.id;
      expect(await git.canMerge(id, 'master', id, 'left')).toBe(false);
      const result = await git.merge(id, {
        target: 'master',
        sourceProjectId: id,
        source: 'left',
        message: 'm',
        author: alice,
      });
      expect(result).toEqual({ ok: false, conflict: true, files: ['README.md'] });
      expect((await git.branch(id, 'master'))!.id).toBe(head);
    });

    it('refuses to merge a missing branch', async () => {
      const id = await project();
      await expect(
        git.merge(id, { target: 'master', sourceProjectId: id, source: 'nope', message: 'm', author: alice }),
      ).rejects.toMatchObject({ kind: 'missing-branch' });
      expect(await git.canMerge(id, 'master', id, 'nope')).toBe(false);
    });
  });

  describe('forks', () => {
    it('copies every branch, then merges a fork branch into its upstream', async () => {
      const upstream = await project();
      await git.createBranch(upstream, 'other', 'master');
      const fork = newId();
      await git.fork(upstream, fork);
      expect((await git.branches(fork)).map((b) => b.name)).toEqual(['master', 'other']);
      expect(gitIn(fork, 'symbolic-ref', 'HEAD')).toBe('refs/heads/master');

      await git.createBranch(fork, 'contrib', 'master');
      const contrib = await git.commitFile(fork, {
        branch: 'contrib',
        path: 'contrib.txt',
        content: 'from the fork\n',
        message: 'contribution',
        author: bob,
        mode: 'create',
      });
      // The upstream repository does not have the fork's commit until it is merged.
      expect(await git.commit(upstream, contrib.id)).toBeUndefined();

      const compared = await git.compare(upstream, 'master', fork, 'contrib');
      expect(compared.commits.map((c) => c.id)).toEqual([contrib.id]);
      expect(compared.diffs.map((d) => d.new_path)).toEqual(['contrib.txt']);
      expect(await git.canMerge(upstream, 'master', fork, 'contrib')).toBe(true);

      const result = await git.merge(upstream, {
        target: 'master',
        sourceProjectId: fork,
        source: 'contrib',
        message: 'Merge the fork',
        author: alice,
      });
      expect(result.ok).toBe(true);
      const merged = (await git.branch(upstream, 'master'))!;
      expect(merged.parent_ids[1]).toBe(contrib.id);
      expect(gitIn(upstream, 'show', 'master:contrib.txt')).toBe('from the fork');
      // No temporary ref is left behind.
      expect(gitIn(upstream, 'for-each-ref', '--format=%(refname)')).toBe(
        'refs/heads/master\nrefs/heads/other',
      );
    });
  });

  describe('readFile and remove', () => {
    it('reads a file at a ref with its blob id and last commit', async () => {
      const id = await project({ 'a.txt': 'A\n', 'b.txt': 'B\n' });
      const first = (await git.branch(id, 'master'))!;
      const second = await git.commitFile(id, {
        branch: 'master',
        path: 'b.txt',
        content: 'BB\n',
        message: 'b',
        author: alice,
        mode: 'update',
      });
      const a = await git.readFile(id, 'master', 'a.txt');
      expect(a).toMatchObject({ path: 'a.txt', size: 2, commit_id: second.id, last_commit_id: first.id });
      expect(a?.blob_id).toBe(gitIn(id, 'rev-parse', 'master:a.txt'));
      expect(a?.content.toString()).toBe('A\n');
      expect(await git.readFile(id, 'master', 'nope.txt')).toBeUndefined();
      expect(await git.readFile(id, 'nope', 'a.txt')).toBeUndefined();
    });

    it('removes a repository', async () => {
      const id = await project();
      await git.remove(id);
      expect(await git.branches(id)).toEqual([]);
      expect(await git.commit(id, 'master')).toBeUndefined();
    });
  });

  describe('clock', () => {
    it('dates commits by the given clock, in the local offset', async () => {
      const at = new Date('2016-01-19T08:40:25Z');
      const clocked = createGitRepos(dir, { clock: () => at });
      const id = newId();
      await clocked.create(id, { defaultBranch: 'master', initialFiles: { a: 'a' }, author: alice });
      const head = (await clocked.branch(id, 'master'))!;
      expect(new Date(head.authored_date).getTime()).toBe(at.getTime());
      expect(head.committed_date).toBe(head.authored_date);
      const minutes = -at.getTimezoneOffset();
      const sign = minutes < 0 ? '-' : '+';
      const hh = String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0');
      const mm = String(Math.abs(minutes) % 60).padStart(2, '0');
      expect(head.authored_date.endsWith(`${sign}${hh}:${mm}`)).toBe(true);
    });
  });

  describe('helpers', () => {
    it.each([
      ['a one-line message', 'Fix it', 'Fix it'],
      ['a message with a body', 'Fix it\n\nBecause.', 'Fix it'],
      ['an empty message', '', '--no commit message'],
      ['a first line over 100 characters', 'x'.repeat(101), `${'x'.repeat(80)}…`],
    ])('titles %s', (_name, message, title) => {
      expect(commitTitle(message)).toBe(title);
    });

    it.each([
      ['/docs/a.md', 'docs/a.md'],
      ['a b/c.txt', 'a b/c.txt'],
    ])('normalises the path %s', (raw, expected) => {
      expect(normalisePath(raw)).toBe(expected);
    });

    it.each(['', 'a//b', './a', 'a/../b', 'a/.git/x'])('refuses the path %j', (raw) => {
      expect(() => normalisePath(raw)).toThrow(GitError);
    });
  });
});
