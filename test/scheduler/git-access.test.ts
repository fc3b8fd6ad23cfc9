/**
 * The merge queue's git access from the configuration: HTTPS with a password or token (the bot's
 * username unless git.username), an SSH key, or none; and a branch updater made from it that works
 * against the sandbox's git over HTTP.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createConfigSchema } from '../../src/config/schema.ts';
import { gitAccessOf } from '../../src/scheduler/from-config.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { knownHostsFile, sshKeyPair } from '../helpers/ssh-keys.ts';

const configWith = (git: Record<string, unknown>) => createConfigSchema().parse({ git });

describe('gitAccessOf', () => {
  const sb = useSandbox({ sshPort: 0 });

  it('has no updater without a password or key: the queue says so instead of failing to push', () => {
    expect(gitAccessOf(configWith({}), 'hookbot')).toEqual({ gitSsh: false });
    // A password without any username to go with it is no credential either.
    expect(gitAccessOf(configWith({ password: 'pw-123456' }), undefined)).toEqual({ gitSsh: false });
  });

  it('an SSH key clones over ssh_url_to_repo', () => {
    const access = gitAccessOf(configWith({ ssh_key_file: '/run/secrets/key' }), 'hookbot');
    expect(access.gitSsh).toBe(true);
    expect(access.updater).toBeDefined();
  });

  it("HTTPS with the bot's username and the configured password pushes to the sandbox; nothing logged holds it", async () => {
    const { ctx, db } = sb();
    const owner = addUser(db, { username: 'gaowner' });
    const bot = addUser(db, { username: 'gabot', password: 'ga-bot-password-99' });
    const project = await addProject(ctx, {
      name: 'ga',
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'x\n' },
    });
    db.data.members.push({ project_id: project.id, user_id: bot.id, access_level: 30, created_at: db.now() });
    await ctx.git.createBranch(project.id, 'feature', 'master');
    const author = { name: 'o', email: 'o@example.com' };
    await ctx.git.commitFile(project.id, {
      branch: 'master',
      path: 'm.txt',
      content: 'm\n',
      message: 'm',
      author,
      mode: 'create',
    });
    const cacheDir = await mkdtemp(path.join(tmpdir(), 'hookbot-git-access-'));
    const lines: string[] = [];
    try {
      const access = gitAccessOf(
        configWith({ password: 'ga-bot-password-99', cache_dir: cacheDir, timeout_ms: 30_000 }),
        'gabot',
        (line) => lines.push(line),
      );
      expect(access.gitSsh).toBe(false);
      const outcome = await access.updater!.update({
        targetUrl: `${sb().sb.url}/${owner.username}/${project.path}.git`,
        sourceBranch: 'feature',
        targetBranch: 'master',
      });
      expect(outcome.kind).toBe('updated');
      expect((await ctx.git.branch(project.id, 'feature'))?.author_name).toBe('gabot');
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join('\n')).not.toContain('ga-bot-password-99');
    } finally {
      await rm(cacheDir, { recursive: true, force: true });
    }
  });

  it('git.ssh_key_file and git.ssh_known_hosts_file reach the updater: it pushes over ssh_url_to_repo', async () => {
    const { ctx, db, call } = sb();
    const owner = addUser(db, { username: 'gsowner' });
    const bot = addUser(db, { username: 'gsbot' });
    const project = await addProject(ctx, {
      name: 'gs',
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'x\n' },
    });
    db.data.members.push({ project_id: project.id, user_id: bot.id, access_level: 30, created_at: db.now() });
    await ctx.git.createBranch(project.id, 'feature', 'master');
    await ctx.git.commitFile(project.id, {
      branch: 'master',
      path: 'm.txt',
      content: 'm\n',
      message: 'm',
      author: { name: 'o', email: 'o@example.com' },
      mode: 'create',
    });
    const dir = await mkdtemp(path.join(tmpdir(), 'hookbot-git-access-ssh-'));
    try {
      const key = await sshKeyPair(dir, 'id_bot');
      await call('POST', '/user/keys', {
        token: bot.private_token,
        body: { title: 'bot', key: key.publicKey },
      });
      const known = await knownHostsFile(dir, 'known_hosts', sb().sb.ssh!.knownHostsLine);
      const access = gitAccessOf(
        configWith({
          ssh_key_file: key.keyFile,
          ssh_known_hosts_file: known,
          cache_dir: path.join(dir, 'cache'),
        }),
        'gsbot',
      );
      expect(access.gitSsh).toBe(true);
      const { body } = await call('GET', `/projects/${project.id}`);
      const outcome = await access.updater!.update({
        targetUrl: body.ssh_url_to_repo,
        sourceBranch: 'feature',
        targetBranch: 'master',
      });
      expect(outcome.kind).toBe('updated');
      expect((await ctx.git.branch(project.id, 'feature'))?.author_name).toBe('gsbot');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
