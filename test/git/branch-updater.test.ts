/**
 * The branch updater against the sandbox over real git HTTP: up to date, updated (a two-parent merge
 * commit pushed with a lease), conflict, moved, missing, refused; and no credential in any log line
 * or error.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBranchUpdater, redactor, type GitCredentials } from '../../src/git/branch-updater.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { DEVELOPER } from '../../src/sandbox/permissions.ts';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const PASSWORD = 'bot-secret-password-1234';
const PAT = 'bot-personal-access-token-5678';
const OAUTH = 'bot-oauth-token-91011';

describe('branch updater', () => {
  const sb = useSandbox();
  let cacheDir = '';
  const lines: string[] = [];
  beforeAll(async () => {
    cacheDir = await mkdtemp(path.join(tmpdir(), 'hookbot-updater-test-'));
  });
  afterAll(async () => {
    await rm(cacheDir, { recursive: true, force: true });
    // Whatever happened, no line told a credential.
    const all = lines.join('\n');
    for (const secret of [PASSWORD, PAT, OAUTH, Buffer.from(`bot:${PASSWORD}`).toString('base64')])
      expect(all).not.toContain(secret);
  });

  let n = 0;
  async function world() {
    const { ctx, db } = sb();
    n += 1;
    const owner = addUser(db, { username: `uowner${n}` });
    const bot = addUser(db, { username: `ubot${n}`, password: PASSWORD, personal_access_tokens: [PAT] });
    bot.oauth_tokens.push(`${OAUTH}-${n}`);
    const project = await addProject(ctx, {
      name: `upd-${n}`,
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
    const file = (branch: string, file: string, content: string, mode: 'create' | 'update' = 'create') =>
      ctx.git.commitFile(project.id, {
        branch,
        path: file,
        content,
        message: `${file} on ${branch}`,
        author,
        mode,
      });
    const updater = (credentials: GitCredentials) =>
      createBranchUpdater({
        cacheDir: path.join(cacheDir, String(n)),
        credentials,
        identity: { name: 'hookbot', email: 'hookbot@example.com' },
        log: (line) => lines.push(line),
      });
    await ctx.git.createBranch(project.id, 'feature', 'master');
    return { project, bot, url, file, updater, ctx };
  }

  it('is up to date when the source already holds the target head', async () => {
    const w = await world();
    const head = await w.file('feature', 'f.txt', 'f\n');
    const outcome = await w.updater({ kind: 'https', username: w.bot.username, password: PASSWORD }).update({
      targetUrl: w.url,
      sourceBranch: 'feature',
      targetBranch: 'master',
      expectedSourceSha: head.id,
    });
    expect(outcome).toMatchObject({ kind: 'up-to-date', sha: head.id });
  });

  it('pushes a merge commit of source and target with a personal access token', async () => {
    const w = await world();
    const source = await w.file('feature', 'f.txt', 'f\n');
    const target = await w.file('master', 'm.txt', 'm\n');
    const outcome = await w.updater({ kind: 'https', username: w.bot.username, password: PAT }).update({
      targetUrl: w.url,
      sourceBranch: 'feature',
      targetBranch: 'master',
      expectedSourceSha: source.id,
    });
    expect(outcome).toMatchObject({ kind: 'updated', previousSha: source.id, targetSha: target.id });
    const head = await w.ctx.git.branch(w.project.id, 'feature');
    expect(outcome.kind === 'updated' && head?.id).toBe(outcome.kind === 'updated' ? outcome.sha : '');
    expect(head?.parent_ids).toEqual([source.id, target.id]);
    expect(head?.message).toBe("Merge branch 'master' into feature\n");
    expect(head?.author_name).toBe('hookbot');
  });

  it('reports the conflicting files and pushes nothing', async () => {
    const w = await world();
    const source = await w.file('feature', 'shared.txt', 'feature side\n', 'update');
    await w.file('master', 'shared.txt', 'master side\n', 'update');
    const outcome = await w.updater({ kind: 'https', username: w.bot.username, password: PASSWORD }).update({
      targetUrl: w.url,
      sourceBranch: 'feature',
      targetBranch: 'master',
    });
    expect(outcome).toMatchObject({ kind: 'conflict', files: ['shared.txt'], sourceSha: source.id });
    expect((await w.ctx.git.branch(w.project.id, 'feature'))?.id).toBe(source.id);
  });

  it('reports moved when the source is not where it was expected, and missing branches', async () => {
    const w = await world();
    const first = await w.file('feature', 'f.txt', 'f\n');
    const second = await w.file('feature', 'g.txt', 'g\n');
    await w.file('master', 'm.txt', 'm\n');
    const updater = w.updater({ kind: 'https', username: w.bot.username, password: PASSWORD });
    const base = { targetUrl: w.url, targetBranch: 'master' };
    expect(await updater.update({ ...base, sourceBranch: 'feature', expectedSourceSha: first.id })).toEqual({
      kind: 'moved',
      sha: second.id,
    });
    expect((await w.ctx.git.branch(w.project.id, 'feature'))?.id).toBe(second.id);
    expect(await updater.update({ ...base, sourceBranch: 'nope' })).toEqual({
      kind: 'missing',
      branch: 'source',
    });
    expect(await updater.update({ ...base, sourceBranch: 'feature', targetBranch: 'gone' })).toEqual({
      kind: 'missing',
      branch: 'target',
    });
  });

  it('reports moved when someone pushes between its fetch and its push: the lease overwrites nothing', async () => {
    const w = await world();
    const source = await w.file('feature', 'f.txt', 'f\n');
    await w.file('master', 'm.txt', 'm\n');
    const proxy = await startFaultProxy(sb().sb.url);
    try {
      let theirs = '';
      proxy.fail({
        method: 'POST',
        path: /git-receive-pack$/,
        before: async () => {
          theirs = (await w.file('feature', 'theirs.txt', 'pushed meanwhile\n')).id;
        },
      });
      const outcome = await w
        .updater({ kind: 'https', username: w.bot.username, password: PASSWORD })
        .update({
          targetUrl: w.url.replace(sb().sb.url, proxy.url),
          sourceBranch: 'feature',
          targetBranch: 'master',
          expectedSourceSha: source.id,
        });
      expect(outcome).toEqual({ kind: 'moved' });
      expect((await w.ctx.git.branch(w.project.id, 'feature'))?.id).toBe(theirs);
    } finally {
      await proxy.close();
    }
  });

  it('is refused with a wrong password or a read-only OAuth token, and says so without the secret', async () => {
    const w = await world();
    await w.file('master', 'm.txt', 'm\n');
    const wrong = await w
      .updater({ kind: 'https', username: w.bot.username, password: `${PASSWORD}-wrong` })
      .update({
        targetUrl: w.url,
        sourceBranch: 'feature',
        targetBranch: 'master',
      });
    expect(wrong.kind).toBe('refused');
    expect(JSON.stringify(wrong)).not.toContain(PASSWORD);
    const oauth = await w.updater({ kind: 'https', username: 'oauth2', password: `${OAUTH}-${n}` }).update({
      targetUrl: w.url,
      sourceBranch: 'feature',
      targetBranch: 'master',
    });
    expect(oauth.kind).toBe('refused');
    expect(JSON.stringify(oauth)).not.toContain(OAUTH);
  });

  it('redacts the password, its Basic form and URL credentials from any text', () => {
    const redact = redactor({ kind: 'https', username: 'bot', password: PASSWORD });
    const basic = Buffer.from(`bot:${PASSWORD}`).toString('base64');
    const text = `fatal: https://bot:${PASSWORD}@host/x.git Authorization: Basic ${basic} ${encodeURIComponent(PASSWORD)}`;
    const out = redact(text);
    expect(out).not.toContain(PASSWORD);
    expect(out).not.toContain(basic);
    expect(out).toContain('https://bot:[REDACTED]@host/x.git');
  });
});
