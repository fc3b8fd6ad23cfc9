/**
 * What the sandbox does in-process instead of starting git (src/sandbox/git/): every answer must be
 * git's own. Each part is checked against the git CLI on the same input: ref names against
 * `check-ref-format`, trees and commits against `mktree` and `commit-tree`, history walks against
 * `rev-list --topo-order`, merges against `merge-tree --write-tree`, over many generated cases.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GitCommit } from '../../src/sandbox/context.ts';
import { createGitRepos } from '../../src/sandbox/git.ts';
import {
  commitsBetween,
  lineMergeBase,
  treeMerge,
  type HistoryReader,
} from '../../src/sandbox/git/history.ts';
import { encodeTree, parseTree, writeObject, type TreeEntry } from '../../src/sandbox/git/objects.ts';
import { parseCommit } from '../../src/sandbox/git/parse.ts';
import { validRefName } from '../../src/sandbox/git/refs.ts';

const ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: tmpdir(),
  LC_ALL: 'C',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'T',
  GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 'T',
  GIT_COMMITTER_EMAIL: 't@example.com',
  GIT_AUTHOR_DATE: '@1700000000 +0000',
  GIT_COMMITTER_DATE: '@1700000000 +0000',
};

function git(repo: string, args: string[], input?: string | Buffer, env: Record<string, string> = {}) {
  return execFileSync('git', ['-C', repo, ...args], { env: { ...ENV, ...env }, input })
    .toString('utf8')
    .trim();
}

/** A seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

describe('the sandbox git internals agree with git', () => {
  let dir = '';
  let repo = '';
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-git-internals-'));
    repo = path.join(dir, 'r.git');
    execFileSync('git', ['init', '--quiet', '--bare', repo], { env: ENV });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Reads through the git CLI (once per object: objects never change), writes through the code under test. */
  const seenCommits = new Map<string, GitCommit>();
  const seenTrees = new Map<string, TreeEntry[]>();
  const reader = (): HistoryReader => ({
    async commits(shas) {
      return shas.map((sha) => {
        let commit = seenCommits.get(sha);
        if (!commit) {
          commit = parseCommit(
            sha,
            execFileSync('git', ['-C', repo, 'cat-file', 'commit', sha], { env: ENV }),
          );
          seenCommits.set(sha, commit);
        }
        return commit;
      });
    },
    async tree(oid) {
      let entries = seenTrees.get(oid);
      if (!entries) {
        entries = parseTree(execFileSync('git', ['-C', repo, 'cat-file', 'tree', oid], { env: ENV }));
        seenTrees.set(oid, entries);
      }
      return entries;
    },
    writeTree: (entries) => writeObject(repo, 'tree', encodeTree(entries)),
  });

  it('takes and refuses ref names as git check-ref-format does', () => {
    const names = [
      'refs/heads/master',
      'refs/heads/feature/x',
      'refs/heads/a..b',
      'refs/heads/.hidden',
      'refs/heads/x.lock',
      'refs/heads/x.lock/y',
      'refs/heads/end.',
      'refs/heads/end/',
      'refs/heads//double',
      'refs/heads/sp ace',
      'refs/heads/tab\there',
      'refs/heads/til~de',
      'refs/heads/ca^ret',
      'refs/heads/co:lon',
      'refs/heads/qu?',
      'refs/heads/st*r',
      'refs/heads/br[acket',
      'refs/heads/back\\slash',
      'refs/heads/at@{brace',
      'refs/heads/@',
      '@',
      'refs/heads/a@b',
      'refs/heads/ünïcode',
      'refs/heads/-dash',
      'refs/heads/a-',
      'refs/heads/.',
      'refs/heads/a/.b',
      'refs/heads/a/b.',
      'onelevel',
      'refs/heads/del\x7f',
      'refs/heads/ok.dot',
      'refs/heads/a.lockx',
      'refs/heads/{curly}',
      'refs/heads/semi;colon',
      "refs/heads/quote'",
      'refs/heads/#hash',
      'refs/heads/!bang',
      'refs/heads/a/..',
      'refs/heads/...',
      'refs/heads/a.b.c',
      'refs/heads/%20',
    ];
    for (const name of names) {
      let gitSays: boolean;
      try {
        execFileSync('git', ['check-ref-format', name], { env: ENV, stdio: 'ignore' });
        gitSays = true;
      } catch {
        gitSays = false;
      }
      expect([name, validRefName(name)]).toEqual([name, gitSays]);
    }
  });

  it('writes trees byte for byte as git mktree does (entry order included)', async () => {
    const blob = git(repo, ['hash-object', '-w', '--stdin'], 'x\n');
    const sub = git(repo, ['mktree'], `100644 blob ${blob}\tinner\n`);
    const names = ['a', 'a-b', 'a.b', 'a0', 'b', 'A', 'z', 'a_b', 'é', 'a b'];
    const entries: TreeEntry[] = [
      ...names.map((name) => ({ mode: '100644', name, oid: blob })),
      { mode: '40000', name: 'a/', oid: sub }, // placeholder replaced below
    ].filter((e) => e.name !== 'a/');
    entries.push({ mode: '40000', name: 'ab', oid: sub }, { mode: '100755', name: 'run', oid: blob });
    entries.push({ mode: '40000', name: 'a+', oid: sub });
    const listing = entries
      .map((e) => `${e.mode === '40000' ? '040000 tree' : `${e.mode} blob`} ${e.oid}\t${e.name}`)
      .join('\n');
    const byGit = git(repo, ['mktree'], `${listing}\n`);
    expect(await writeObject(repo, 'tree', encodeTree(entries))).toBe(byGit);
  });

  it('writes commits as git commit-tree does, identities trimmed as git trims them', async () => {
    const reposDir = path.join(dir, 'commits');
    const at = new Date('2024-03-05T06:07:08Z');
    const repos = createGitRepos(reposDir, { clock: () => at });
    try {
      await repos.create(1, { defaultBranch: 'master', author: { name: 'A', email: 'a@example.com' } });
      const cases = [
        { name: 'Plain Name', email: 'plain@example.com', message: 'Add a file' },
        { name: '  .Dotted, Name;  ', email: ' <weird@example.com> ', message: 'no newline at the end' },
        { name: 'Ünïcödé 名前', email: 'u@example.com', message: 'line one\n\nline three\n' },
        { name: 'Angle <Brackets> Inside', email: 'a<b>c@example.com', message: '' },
        { name: 'Quote "Name"', email: "o'brien@example.com", message: 'tabs\tand\r\ncarriage returns' },
        { name: 'Non Character', email: 'n@example.com', message: 'git rewrites \uFFFE this' },
      ];
      let parent: GitCommit | undefined;
      for (const [i, c] of cases.entries()) {
        const commit = await repos.commitFile(1, {
          branch: 'master',
          path: `f${i}.txt`,
          content: `${i}\n`,
          message: c.message,
          author: { name: c.name, email: c.email },
          mode: 'create',
        });
        const repoDir = path.join(reposDir, '1.git');
        const args = ['commit-tree', commit.tree, ...(parent ? ['-p', parent.id] : [])];
        const minutes = -at.getTimezoneOffset();
        const zone = `${minutes < 0 ? '-' : '+'}${String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0')}${String(Math.abs(minutes) % 60).padStart(2, '0')}`;
        const date = `@${Math.floor(at.getTime() / 1000)} ${zone}`;
        const byGit = git(repoDir, args, c.message, {
          GIT_AUTHOR_NAME: c.name,
          GIT_AUTHOR_EMAIL: c.email,
          GIT_COMMITTER_NAME: c.name,
          GIT_COMMITTER_EMAIL: c.email,
          GIT_AUTHOR_DATE: date,
          GIT_COMMITTER_DATE: date,
        });
        expect([i, commit.id]).toEqual([i, byGit]);
        parent = commit;
      }
    } finally {
      repos.close();
    }
  }, 30_000);

  /** A random history: commits on branches that fork and merge, each adding or changing a file. */
  async function history(seed: number) {
    const rnd = random(seed);
    const files = new Map<string, string>();
    // Blobs and trees through the (separately checked) object writer; commits through git.
    const treeOf = async (map: Map<string, string>) => {
      const entries: TreeEntry[] = [];
      for (const [name, content] of map)
        entries.push({ mode: '100644', name, oid: await writeObject(repo, 'blob', Buffer.from(content)) });
      return writeObject(repo, 'tree', encodeTree(entries));
    };
    const commit = (tree: string, parents: string[], message: string) =>
      git(repo, ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p])], message);
    files.set('base.txt', 'base');
    const commits = [commit(await treeOf(files), [], `root ${seed}`)];
    for (let i = 0; i < 12; i++) {
      const parent = commits[Math.floor(rnd() * commits.length)]!;
      const parents = [parent];
      if (rnd() < 0.25) {
        const other = commits[Math.floor(rnd() * commits.length)]!;
        if (other !== parent) parents.push(other);
      }
      files.set(`f${i}.txt`, `${seed} ${i}`);
      commits.push(commit(await treeOf(files), parents, `c${i}`));
    }
    return commits;
  }

  it('walks from..to as git rev-list --topo-order does, or leaves it to git', async () => {
    let walked = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const commits = await history(seed);
      const rnd = random(seed * 7);
      for (let k = 0; k < 6; k++) {
        const from = commits[Math.floor(rnd() * commits.length)]!;
        const to = commits[Math.floor(rnd() * commits.length)]!;
        const mine = await commitsBetween(reader(), from, to);
        if (mine === undefined) continue;
        walked += 1;
        const byGit = git(repo, ['rev-list', '--topo-order', `${from}..${to}`])
          .split('\n')
          .filter(Boolean);
        expect([seed, k, mine]).toEqual([seed, k, byGit]);
      }
    }
    // The walk answered a good share of the cases itself (lines of commits are common).
    expect(walked).toBeGreaterThan(25);
  }, 60_000);

  it('merges different changes as git merge-tree does, and leaves the rest to git', async () => {
    const rnd = random(4242);
    const blob = (content: string) => git(repo, ['hash-object', '-w', '--stdin'], content);
    type Files = Map<string, { mode: string; content: string }>;
    const treeOf = async (files: Files) => {
      const nested = new Map<string, TreeEntry[]>();
      const dirs = new Set<string>(['']);
      for (const p of files.keys()) {
        const parts = p.split('/');
        for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
      }
      // Deepest folders first.
      for (const d of [...dirs].sort(
        (a, b) => b.split('/').length - a.split('/').length || b.length - a.length,
      )) {
        const entries: TreeEntry[] = [];
        for (const [p, f] of files) {
          const parent = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '';
          if (parent === d)
            entries.push({
              mode: f.mode,
              name: p.slice(parent ? parent.length + 1 : 0),
              oid: blob(f.content),
            });
        }
        for (const [sub, subEntries] of nested) {
          const parent = sub.includes('/') ? sub.slice(0, sub.lastIndexOf('/')) : '';
          if (parent === d && sub !== '' && subEntries.length > 0)
            entries.push({
              mode: '40000',
              name: sub.slice(parent ? parent.length + 1 : 0),
              oid: await writeObject(repo, 'tree', encodeTree(subEntries)),
            });
        }
        nested.set(d, entries);
      }
      return writeObject(repo, 'tree', encodeTree(nested.get('')!));
    };
    const mutate = (files: Files, side: string): Files => {
      const next: Files = new Map(files);
      const paths = [...files.keys()];
      const n = 1 + Math.floor(rnd() * 3);
      for (let i = 0; i < n; i++) {
        const pick = paths[Math.floor(rnd() * paths.length)]!;
        const roll = rnd();
        if (roll < 0.35)
          next.set(`${['', 'src/', 'src/lib/', 'doc/'][Math.floor(rnd() * 4)]}${side}${i}.txt`, {
            mode: '100644',
            content: `${side} ${i}`,
          });
        else if (roll < 0.7)
          next.set(pick, { mode: next.get(pick)?.mode ?? '100644', content: `${side} changed ${i}` });
        else if (roll < 0.8) next.set(pick, { mode: '100755', content: next.get(pick)?.content ?? '' });
        else next.delete(pick);
      }
      return next;
    };
    let mergedHere = 0;
    for (let round = 0; round < 40; round++) {
      const base: Files = new Map([
        ['README', { mode: '100644', content: 'readme' }],
        ['src/a.ts', { mode: '100644', content: 'a' }],
        ['src/lib/b.ts', { mode: '100644', content: 'b' }],
        ['doc/c.md', { mode: '100644', content: 'c' }],
      ]);
      const ours = mutate(base, 'ours');
      const theirs = rnd() < 0.2 ? new Map(ours) : mutate(base, 'theirs');
      const [b, o, t] = await Promise.all([treeOf(base), treeOf(ours), treeOf(theirs)]);
      const commit = (tree: string, parents: string[], message: string) =>
        git(repo, ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p])], `${message} ${round}`);
      const baseCommit = commit(b, [], 'base');
      const oursCommit = commit(o, [baseCommit], 'ours');
      const theirsCommit = commit(t, [baseCommit], 'theirs');
      expect(await lineMergeBase(reader(), oursCommit, theirsCommit)).toBe(baseCommit);
      const mine = await treeMerge(reader(), b, o, t);
      if (mine === undefined) continue;
      mergedHere += 1;
      const out = execFileSync(
        'git',
        [
          '-C',
          repo,
          'merge-tree',
          '--write-tree',
          '-z',
          '--name-only',
          '--no-messages',
          oursCommit,
          theirsCommit,
        ],
        { env: ENV },
      );
      const byGit = out.toString('utf8').split('\0')[0];
      expect([round, mine]).toEqual([round, byGit]);
    }
    expect(mergedHere).toBeGreaterThan(10);
  }, 120_000);
});
