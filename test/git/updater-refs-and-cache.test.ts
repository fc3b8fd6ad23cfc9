/**
 * The branch updater's trust and housekeeping, against the sandbox over real git HTTP: refs named in
 * full (a tag named like a branch is never read or written), `--` before every repository URL, no push
 * to a fork's branch or when `beforePush` says no, a relative cache folder, the cache's modes (0700
 * folders, 0600 files), its pruning and its bound on repositories.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBranchUpdater, GitCommandError, type GitCredentials } from '../../src/git/branch-updater.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { DEVELOPER } from '../../src/sandbox/permissions.ts';
import { gitUser } from '../helpers/git-user.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { waitFor } from '../helpers/wait-for.ts';

const exec = promisify(execFile);
const PASSWORD = 'refs-bot-password-4321';
const cacheName = (url: string) => `${createHash('sha256').update(url).digest('hex').slice(0, 16)}.git`;

// Each test runs several real git processes: allow for a slow, busy machine.
describe('branch updater: refs, URLs, forks and the cache', { timeout: 60_000 }, () => {
  const sb = useSandbox();
  let dir = '';
  const lines: string[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookbot-updater-trust-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  let n = 0;
  async function world(options: { fork?: boolean } = {}) {
    const { ctx, db } = sb();
    n += 1;
    const owner = addUser(db, { username: `rowner${n}` });
    const bot = addUser(db, { username: `rbot${n}`, password: PASSWORD });
    const project = await addProject(ctx, {
      name: `refs-${n}`,
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'hello\n', 'shared.txt': 'base\n' },
    });
    db.data.members.push({
      project_id: project.id,
      user_id: bot.id,
      access_level: DEVELOPER,
      created_at: db.now(),
    });
    const url = `${sb().sb.url}/${owner.username}/${project.path}.git`;
    const author = { name: owner.name, email: owner.email };
    const file = (projectId: number, branch: string, name: string, content: string) =>
      ctx.git.commitFile(projectId, {
        branch,
        path: name,
        content,
        message: `${name} on ${branch}`,
        author,
        mode: 'create',
      });
    const credentials: GitCredentials = { kind: 'https', username: bot.username, password: PASSWORD };
    const cacheDir = path.join(dir, `cache-${n}`);
    const updater = (extra: Partial<Parameters<typeof createBranchUpdater>[0]> = {}) =>
      createBranchUpdater({
        cacheDir,
        credentials,
        identity: { name: 'hookbot', email: 'hookbot@example.com' },
        log: (line) => lines.push(line),
        ...extra,
      });
    await ctx.git.createBranch(project.id, 'feature', 'master');
    let fork: { id: number; url: string } | undefined;
    if (options.fork) {
      const forker = addUser(db, { username: `rforker${n}` });
      const copy = await addProject(ctx, {
        name: `refs-${n}`,
        namespace_id: ensureUserNamespace(db, forker).id,
        creator_id: forker.id,
        initialFiles: { 'README.md': 'hello\n' },
      });
      await ctx.git.fork(project.id, copy.id);
      db.data.members.push({
        project_id: copy.id,
        user_id: bot.id,
        access_level: DEVELOPER,
        created_at: db.now(),
      });
      fork = { id: copy.id, url: `${sb().sb.url}/${forker.username}/${copy.path}.git` };
    }
    return { project, bot, url, file, updater, ctx, cacheDir, fork, credentials };
  }

  it('fetches and pushes branches only: a tag named like the target or the source is never taken', async () => {
    const w = await world();
    const source = await w.file(w.project.id, 'feature', 'f.txt', 'f\n');
    const target = await w.file(w.project.id, 'master', 'm.txt', 'm\n');
    // A developer's tags named `master` and `feature`, on a commit of their own that no branch holds.
    const dev = await gitUser(dir, { username: w.bot.username, password: PASSWORD }, w.url);
    await dev.git('checkout', '--quiet', '-b', 'planted');
    const planted = await dev.commit('.hookbot.yml', 'rules: []\n', 'planted');
    await dev.git('push', '--quiet', 'origin', `${planted}:refs/tags/master`, `${planted}:refs/tags/feature`);
    const outcome = await w.updater().update({
      targetUrl: w.url,
      sourceBranch: 'feature',
      targetBranch: 'master',
      expectedSourceSha: source.id,
    });
    expect(outcome).toMatchObject({ kind: 'updated', previousSha: source.id, targetSha: target.id });
    const head = await w.ctx.git.branch(w.project.id, 'feature');
    expect(head?.parent_ids).toEqual([source.id, target.id]);
    // The tags are where the developer put them, and no branch moved to the planted commit.
    const remote = await dev.git('ls-remote', 'origin');
    expect(remote).toContain(`${planted}\trefs/tags/master`);
    expect(remote).toContain(`${planted}\trefs/tags/feature`);
    expect(remote).not.toMatch(new RegExp(`${planted}\\trefs/heads/`));
  });

  it('reads a repository URL that starts with `-` as a repository, never as an option', async () => {
    const w = await world();
    const marker = path.join(dir, `pwned-${n}`);
    // Without `--` before the URL, git takes it as --upload-pack and runs the command.
    const hostile = `--upload-pack=touch ${marker};false`;
    const attempt = w
      .updater()
      .update({ targetUrl: hostile, sourceBranch: 'feature', targetBranch: 'master' });
    await expect(attempt).rejects.toBeInstanceOf(GitCommandError);
    expect(existsSync(marker)).toBe(false);
  });

  it("never pushes to a fork's branch: behind its target it is not pushed; up to date it is tested as it is", async () => {
    const w = await world({ fork: true });
    const forkHead = await w.file(w.fork!.id, 'master', 'fork.txt', 'from the fork\n');
    await w.file(w.project.id, 'master', 'm.txt', 'm\n');
    const updater = w.updater();
    const behind = await updater.update({
      targetUrl: w.url,
      sourceUrl: w.fork!.url,
      sourceBranch: 'master',
      targetBranch: 'master',
      expectedSourceSha: forkHead.id,
    });
    expect(behind).toMatchObject({ kind: 'not-pushed', fork: true, sourceSha: forkHead.id });
    expect((await w.ctx.git.branch(w.fork!.id, 'master'))?.id).toBe(forkHead.id);
    // Nor is a branch of that name made in the target project.
    expect((await w.ctx.git.branch(w.project.id, 'master'))?.id).not.toBe(forkHead.id);
    const upToDate = await updater.update({
      targetUrl: w.url,
      sourceUrl: w.url,
      sourceBranch: 'feature',
      targetBranch: 'feature',
    });
    expect(upToDate.kind).toBe('up-to-date');
  });

  it('asks beforePush right before the push, and a reason given there pushes nothing', async () => {
    const w = await world();
    const source = await w.file(w.project.id, 'feature', 'f.txt', 'f\n');
    await w.file(w.project.id, 'master', 'm.txt', 'm\n');
    let asked = 0;
    const outcome = await w.updater().update({
      targetUrl: w.url,
      sourceBranch: 'feature',
      targetBranch: 'master',
      expectedSourceSha: source.id,
      beforePush: async () => {
        asked++;
        return 'feature became protected';
      },
    });
    expect(asked).toBe(1);
    expect(outcome).toMatchObject({ kind: 'not-pushed', reason: 'feature became protected', fork: false });
    expect((await w.ctx.git.branch(w.project.id, 'feature'))?.id).toBe(source.id);
  });

  it('works with a relative cache folder, taken from the folder it runs in (the default data/git-cache)', async () => {
    const w = await world();
    const source = await w.file(w.project.id, 'feature', 'f.txt', 'f\n');
    await w.file(w.project.id, 'master', 'm.txt', 'm\n');
    const started = process.cwd();
    const home = await mkdtemp(path.join(dir, 'cwd-'));
    process.chdir(home);
    try {
      const outcome = await w.updater({ cacheDir: 'data/git-cache' }).update({
        targetUrl: w.url,
        sourceBranch: 'feature',
        targetBranch: 'master',
        expectedSourceSha: source.id,
      });
      expect(outcome.kind).toBe('updated');
      expect(await readdir(path.join(home, 'data', 'git-cache'))).toEqual([cacheName(w.url)]);
      expect(existsSync(path.join(home, 'data', 'git-cache', 'data'))).toBe(false);
    } finally {
      process.chdir(started);
    }
  });

  it('keeps its cache to the bot user: folders 0700 and files 0600, whatever the umask it was started with', async () => {
    const w = await world();
    const source = await w.file(w.project.id, 'feature', 'f.txt', 'f\n');
    await w.file(w.project.id, 'master', 'm.txt', 'm\n');
    // The usual umask of a service (022): the cache must not depend on the process's.
    const umask = process.umask(0o022);
    try {
      const outcome = await w.updater().update({
        targetUrl: w.url,
        sourceBranch: 'feature',
        targetBranch: 'master',
        expectedSourceSha: source.id,
      });
      expect(outcome.kind).toBe('updated');
    } finally {
      process.umask(umask);
    }
    const loose: string[] = [];
    async function walk(at: string): Promise<void> {
      const info = await stat(at);
      if (info.isDirectory()) {
        if ((info.mode & 0o777) !== 0o700) loose.push(`${at} ${(info.mode & 0o777).toString(8)}`);
        for (const name of await readdir(at)) await walk(path.join(at, name));
      } else if (info.mode & 0o077) loose.push(`${at} ${(info.mode & 0o777).toString(8)}`);
    }
    await walk(w.cacheDir);
    expect(loose).toEqual([]);
  });

  it('prunes a cache repository after gcEveryUpdates updates: objects no ref holds go, the kept target stays', async () => {
    const w = await world();
    const source = await w.file(w.project.id, 'feature', 'f.txt', 'f\n');
    const target = await w.file(w.project.id, 'master', 'm.txt', 'm\n');
    // Pruned after every update, objects dropped at once: the defaults (20 updates, an hour) would
    // make the test wait for them.
    const updater = w.updater({ gcEveryUpdates: 1, pruneAfterMs: 0 });
    const outcome = await updater.update({
      targetUrl: w.url,
      sourceBranch: 'feature',
      targetBranch: 'master',
      expectedSourceSha: source.id,
    });
    if (outcome.kind !== 'updated') throw new Error(`expected an update, got ${outcome.kind}`);
    await updater.idle();
    const repo = path.join(w.cacheDir, cacheName(w.url));
    const has = async (sha: string) =>
      exec('git', ['-C', repo, 'cat-file', '-e', `${sha}^{commit}`]).then(
        () => true,
        () => false,
      );
    // The merge commit and the source's own commit: no ref of the cache holds them any more.
    await waitFor(
      async () => ((await has(outcome.sha)) ? undefined : true),
      20_000,
      'the merge commit pruned',
    );
    expect(await has(source.id)).toBe(false);
    expect(await has(target.id)).toBe(true);
    const refs = (await exec('git', ['-C', repo, 'for-each-ref', '--format=%(refname)'])).stdout
      .trim()
      .split('\n');
    expect(refs).toHaveLength(1);
    expect(refs[0]).toMatch(/^refs\/hookbot\/keep\/[0-9a-f]{16}$/);
  });

  it('holds at most maxRepositories cache repositories, deleting the least recently used', async () => {
    const worlds = [await world(), await world(), await world()];
    const cacheDir = path.join(dir, `shared-cache-${n}`);
    const updater = worlds[0]!.updater({ cacheDir, maxRepositories: 2 });
    for (const w of worlds) {
      // The bot's account of the first world may push to the others too.
      sb().db.data.members.push({
        project_id: w.project.id,
        user_id: worlds[0]!.bot.id,
        access_level: DEVELOPER,
        created_at: sb().db.now(),
      });
      const outcome = await updater.update({
        targetUrl: w.url,
        sourceBranch: 'feature',
        targetBranch: 'master',
      });
      expect(outcome.kind).toBe('up-to-date');
    }
    await updater.idle();
    const names = (await readdir(cacheDir)).sort();
    expect(names).toEqual([cacheName(worlds[1]!.url), cacheName(worlds[2]!.url)].sort());
  });
});
