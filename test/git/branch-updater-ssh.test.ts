/**
 * The branch updater with an SSH key against the sandbox's git over SSH: an update lands (and is a
 * push like any other), a key nobody registered is refused, and a host key that is not the trusted one
 * fails with one clear sentence and without the key file's path, in the error and in every log line.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createBranchUpdater,
  GitCommandError,
  redactor,
  type GitCredentials,
} from '../../src/git/branch-updater.ts';
import type { PushEvent } from '../../src/sandbox/context.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { DEVELOPER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { knownHostsFile, sshKeyPair, type KeyPair } from '../helpers/ssh-keys.ts';

// Each test runs several real git and ssh processes: allow for a slow, busy machine.
describe('branch updater over SSH', { timeout: 60_000 }, () => {
  const sb = useSandbox({ sshPort: 0 });
  let dir = '';
  let botKey: KeyPair;
  let knownHosts = '';
  const lines: string[] = [];
  const pushes: PushEvent[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookbot-updater-ssh-test-'));
    botKey = await sshKeyPair(dir, 'id_bot');
    knownHosts = await knownHostsFile(dir, 'known_hosts', sb().sb.ssh!.knownHostsLine);
    sb().ctx.on.push.push((event) => {
      pushes.push(event);
    });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    // Whatever happened, no line told where the key is (the known_hosts file may be named: no secret).
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toMatch(/id_(bot|stranger|impostor)/);
  });

  let n = 0;
  async function world() {
    const { ctx, db, call } = sb();
    n += 1;
    const owner = addUser(db, { username: `sshowner${n}` });
    const bot = addUser(db, { username: `sshbot${n}` });
    const project = await addProject(ctx, {
      name: `ssh-upd-${n}`,
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'hello\n' },
    });
    db.data.members.push({
      project_id: project.id,
      user_id: bot.id,
      access_level: DEVELOPER,
      created_at: db.now(),
    });
    // The bot's key moves to this world's bot: a key belongs to one account at a time.
    db.data.keys = db.data.keys.filter((k) => k.key !== botKey.publicKey);
    expect(
      (
        await call('POST', '/user/keys', {
          token: bot.private_token,
          body: { title: 'bot', key: botKey.publicKey },
        })
      ).status,
    ).toBe(201);
    const { body } = await call('GET', `/projects/${project.id}`);
    const author = { name: owner.name, email: owner.email };
    const file = (branch: string, name: string) =>
      ctx.git.commitFile(project.id, {
        branch,
        path: name,
        content: `${name}\n`,
        message: name,
        author,
        mode: 'create',
      });
    await ctx.git.createBranch(project.id, 'feature', 'master');
    const updater = (credentials: GitCredentials) =>
      createBranchUpdater({
        cacheDir: path.join(dir, `cache-${n}`),
        credentials,
        identity: { name: 'hookbot', email: 'hookbot@example.com' },
        timeoutMs: 60_000,
        log: (line) => lines.push(line),
      });
    return { project, bot, url: body.ssh_url_to_repo as string, file, updater, ctx };
  }

  it('pushes the merge commit over ssh_url_to_repo with a key file and a known_hosts file given as relative paths', async () => {
    const w = await world();
    expect(w.url).toBe(`ssh://git@127.0.0.1:${sb().sb.ssh!.port}/sshowner${n}/ssh-upd-${n}.git`);
    const source = await w.file('feature', 'f.txt');
    const target = await w.file('master', 'm.txt');
    // Relative to where hookbot runs, though git runs ssh inside the cache repository.
    const outcome = await w
      .updater({
        kind: 'ssh',
        keyFile: path.relative(process.cwd(), botKey.keyFile),
        knownHostsFile: path.relative(process.cwd(), knownHosts),
      })
      .update({
        targetUrl: w.url,
        sourceBranch: 'feature',
        targetBranch: 'master',
        expectedSourceSha: source.id,
      });
    expect(outcome).toMatchObject({ kind: 'updated', previousSha: source.id, targetSha: target.id });
    const head = await w.ctx.git.branch(w.project.id, 'feature');
    expect(head?.parent_ids).toEqual([source.id, target.id]);
    expect(head?.id).toBe(outcome.kind === 'updated' ? outcome.sha : '');
    // A push like any other: the push event (Push Hook, merge request heads) by the key's owner.
    expect(pushes.at(-1)).toMatchObject({
      ref: 'refs/heads/feature',
      before: source.id,
      after: head?.id,
      user: { id: w.bot.id },
    });
  });

  it('is refused with a key nobody registered', async () => {
    const w = await world();
    await w.file('master', 'm.txt');
    const stranger = await sshKeyPair(dir, `id_stranger${n}`);
    const outcome = await w
      .updater({ kind: 'ssh', keyFile: stranger.keyFile, knownHostsFile: knownHosts })
      .update({ targetUrl: w.url, sourceBranch: 'feature', targetBranch: 'master' });
    expect(outcome).toEqual({
      kind: 'refused',
      message: expect.stringContaining('Permission denied (publickey)'),
    });
    expect(JSON.stringify(outcome)).not.toContain(dir);
  });

  it('fails with a clear error, without the key path, when the known_hosts line is not the server key', async () => {
    const w = await world();
    const source = await w.file('feature', 'f.txt');
    await w.file('master', 'm.txt');
    const other = await sshKeyPair(dir, `id_impostor${n}`);
    const wrongLine = `[127.0.0.1]:${sb().sb.ssh!.port} ${other.publicKey.split(' ').slice(0, 2).join(' ')}`;
    const wrong = await knownHostsFile(dir, `known_hosts_wrong${n}`, wrongLine);
    const request = { targetUrl: w.url, sourceBranch: 'feature', targetBranch: 'master' };
    const error = await w
      .updater({ kind: 'ssh', keyFile: botKey.keyFile, knownHostsFile: wrong })
      .update(request)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(GitCommandError);
    const message = (error as Error).message;
    expect(message).toMatch(
      /^git fetch failed \(exit \d+\): the server's SSH host key is not the one the known_hosts file holds/,
    );
    expect(message).not.toContain(dir);
    expect(message).not.toContain('@@@');

    // A known_hosts file that knows other hosts only: unknown is refused too, never trusted on first use.
    const elsewhere = await knownHostsFile(
      dir,
      `known_hosts_other${n}`,
      `[127.0.0.2]:22 ${other.publicKey.split(' ').slice(0, 2).join(' ')}`,
    );
    await expect(
      w.updater({ kind: 'ssh', keyFile: botKey.keyFile, knownHostsFile: elsewhere }).update(request),
    ).rejects.toThrow(/the server's SSH host key is not in the known_hosts file/);
    expect((await w.ctx.git.branch(w.project.id, 'feature'))?.id).toBe(source.id);
  });

  it('says a key file that is not there is missing, without its path', async () => {
    const w = await world();
    await w.file('master', 'm.txt');
    const missing = path.join(dir, `id_missing${n}`);
    await expect(
      w
        .updater({ kind: 'ssh', keyFile: missing, knownHostsFile: knownHosts })
        .update({ targetUrl: w.url, sourceBranch: 'feature', targetBranch: 'master' }),
    ).rejects.toThrow(/^the SSH key file \(git.ssh_key_file\) cannot be read \(ENOENT\)$/);
    expect(lines.join('\n')).not.toContain(missing);
  });

  it('redacts the key file path, as given and resolved', () => {
    const redact = redactor({ kind: 'ssh', keyFile: 'secrets/id_bot' });
    const out = redact(`Load key "${path.resolve('secrets/id_bot')}": invalid format; -i secrets/id_bot`);
    expect(out).toBe('Load key "[key file]": invalid format; -i [key file]');
  });
});
