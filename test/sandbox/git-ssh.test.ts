/**
 * Git over SSH against the sandbox with the system's ssh client (through GIT_SSH_COMMAND): clone,
 * fetch and push at the project's `ssh_url_to_repo` with a key registered through the API, what a
 * push becomes (push event, Push Hook, merge request head, merge-when-build-succeeds disarmed), and
 * what is refused: an unregistered key, a blocked user, a reporter's push, a force push to a protected
 * branch, a shell and any command but git's two.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { utils } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushEvent } from '../../src/sandbox/context.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import { hostKeyPair, parseGitCommand } from '../../src/sandbox/git-ssh.ts';
import { DEVELOPER, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { gitSshCommand, knownHostsFile, sshKeyPair, type KeyPair } from '../helpers/ssh-keys.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let home = '';
let knownHosts = '';

function exec(file: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        cwd,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: home,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_TERMINAL_PROMPT: '0',
          GIT_AUTHOR_NAME: 'Tester',
          GIT_AUTHOR_EMAIL: 'tester@example.com',
          GIT_COMMITTER_NAME: 'Tester',
          GIT_COMMITTER_EMAIL: 'tester@example.com',
          LC_ALL: 'C',
          ...env,
        },
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** git as the holder of `key`. */
const git = (key: KeyPair, cwd: string, args: string[]) =>
  exec('git', args, cwd, { GIT_SSH_COMMAND: gitSshCommand(key.keyFile, knownHosts) });

// Each test runs several real git and ssh processes: allow for a slow, busy machine.
describe('sandbox git over SSH', { timeout: 60_000 }, () => {
  const sb = useSandbox({ sshPort: 0 });
  const pushes: PushEvent[] = [];
  const keys: Record<string, KeyPair> = {};
  beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'hookbot-git-ssh-test-'));
    knownHosts = await knownHostsFile(home, 'known_hosts', sb().sb.ssh!.knownHostsLine);
    for (const name of ['master', 'developer', 'reporter', 'stranger', 'blocked'])
      keys[name] = await sshKeyPair(home, `id_${name}`);
    sb().ctx.on.push.push((event) => {
      pushes.push(event);
    });
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
  });

  let n = 0;
  async function world() {
    const { ctx, db, call } = sb();
    n += 1;
    const owner = addUser(db, { username: `sowner${n}` });
    const project = await addProject(ctx, {
      name: `ssh-${n}`,
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'hello\n' },
    });
    const member = async (name: string, level: number) => {
      const user = addUser(db, { username: `s${name}${n}` });
      db.data.members.push({
        project_id: project.id,
        user_id: user.id,
        access_level: level,
        created_at: db.now(),
      });
      // The key of this role moves to this world's user: a key belongs to one account at a time.
      db.data.keys = db.data.keys.filter((k) => k.key !== keys[name]!.publicKey);
      const added = await call('POST', '/user/keys', {
        token: user.private_token,
        body: { title: `${name} laptop`, key: keys[name]!.publicKey },
      });
      expect(added.status).toBe(201);
      return user;
    };
    const master = await member('master', MASTER);
    const developer = await member('developer', DEVELOPER);
    const reporter = await member('reporter', REPORTER);
    const url = `ssh://git@127.0.0.1:${sb().sb.ssh!.port}/${owner.username}/${project.path}.git`;
    const workdir = await mkdtemp(path.join(home, 'work-'));
    return { project, owner, master, developer, reporter, url, workdir };
  }

  async function cloned(key: KeyPair, url: string, workdir: string, name = 'clone'): Promise<string> {
    const r = await git(key, workdir, ['clone', '--quiet', url, name]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return path.join(workdir, name);
  }

  async function commit(key: KeyPair, dir: string, file: string, content: string): Promise<string> {
    await writeFile(path.join(dir, file), content);
    expect((await git(key, dir, ['add', file])).code).toBe(0);
    expect((await git(key, dir, ['commit', '--quiet', '-m', `change ${file}`])).code).toBe(0);
    return (await git(key, dir, ['rev-parse', 'HEAD'])).stdout.trim();
  }

  it('the ssh_url_to_repo the API answers clones, fetches and pushes with a registered key', async () => {
    const w = await world();
    const { body } = await sb().call('GET', `/projects/${w.project.id}`);
    expect(body.ssh_url_to_repo).toBe(w.url);
    const dir = await cloned(keys.developer!, w.url, w.workdir);
    expect((await git(keys.developer!, dir, ['log', '--format=%s'])).stdout.trim()).toBe('Initial commit');

    // A commit made through the API arrives with a fetch.
    const upstream = await sb().ctx.git.commitFile(w.project.id, {
      branch: 'master',
      path: 'api.txt',
      content: 'api\n',
      message: 'through the API',
      author: { name: 'Owner', email: 'owner@example.com' },
      mode: 'create',
    });
    expect((await git(keys.developer!, dir, ['fetch', '--quiet', 'origin'])).code).toBe(0);
    expect((await git(keys.developer!, dir, ['rev-parse', 'origin/master'])).stdout.trim()).toBe(upstream.id);

    // A push of a new branch: the branch in the API and one push event by the key's owner.
    const sha = await commit(keys.developer!, dir, 'feature.txt', 'feature\n');
    const push = await git(keys.developer!, dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/feature']);
    expect(push.stderr).toBe('');
    expect(push.code).toBe(0);
    await pushWorkIdle(sb().ctx); // a push's consequences come after its answer, as on 8.x
    expect(pushes.filter((p) => p.project.id === w.project.id)).toEqual([
      expect.objectContaining({
        ref: 'refs/heads/feature',
        before: '0000000000000000000000000000000000000000',
        after: sha,
        user: expect.objectContaining({ id: w.developer.id }),
      }),
    ]);
    const branch = await sb().call('GET', `/projects/${w.project.id}/repository/branches/feature`);
    expect(branch.body.commit.id).toBe(sha);
    // The path without `.git` names the same repository, as on real servers.
    const bare = await git(keys.developer!, w.workdir, [
      'ls-remote',
      `ssh://git@127.0.0.1:${sb().sb.ssh!.port}/${w.owner.username}/${w.project.path}`,
      'refs/heads/feature',
    ]);
    expect(bare.stdout).toContain(sha);
  });

  it('a key an administrator registered (POST /users/:id/keys) opens the same doors', async () => {
    const w = await world();
    const { db, call } = sb();
    const other = addUser(db, { username: `sother${n}` });
    db.data.members.push({
      project_id: w.project.id,
      user_id: other.id,
      access_level: DEVELOPER,
      created_at: db.now(),
    });
    const key = await sshKeyPair(w.workdir, 'id_other');
    const added = await call('POST', `/users/${other.id}/keys`, {
      body: { title: 'other', key: key.publicKey },
    });
    expect(added.status).toBe(201);
    await cloned(key, w.url, w.workdir);
  });

  it('a push fires the Push Hook and the Merge Request Hook update, moves the head and disarms merge-when-build-succeeds', async () => {
    const w = await world();
    const { call, ctx } = sb();
    await call('POST', `/projects/${w.project.id}/hooks`, {
      body: { url: 'http://127.0.0.1:9/hook', push_events: true, merge_requests_events: true },
    });
    const dir = await cloned(keys.master!, w.url, w.workdir);
    const head = await commit(keys.master!, dir, 'topic.txt', 'one\n');
    expect((await git(keys.master!, dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/topic'])).code).toBe(
      0,
    );
    const mr = await call('POST', `/projects/${w.project.id}/merge_requests`, {
      body: { source_branch: 'topic', target_branch: 'master', title: 'Topic' },
    });
    expect(mr.status).toBe(200);
    await call('POST', `/projects/${w.project.id}/statuses/${head}`, {
      body: { state: 'pending', name: 'ci' },
    });
    const armed = await call('PUT', `/projects/${w.project.id}/merge_requests/${mr.body.id}/merge`, {
      body: { merge_when_build_succeeds: true },
    });
    expect(armed.body).toMatchObject({ state: 'opened', merge_when_build_succeeds: true });

    const next = await commit(keys.master!, dir, 'topic.txt', 'two\n');
    expect((await git(keys.master!, dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/topic'])).code).toBe(
      0,
    );
    // The push's consequences come after the command ended, as over HTTP (and on 8.x).
    await pushWorkIdle(ctx);
    const after = await call('GET', `/projects/${w.project.id}/merge_requests/${mr.body.id}`);
    expect(after.body).toMatchObject({ sha: next, merge_when_build_succeeds: false, state: 'opened' });
    await ctx.hooks.idle();
    const delivered = ctx.hooks
      .recent()
      .filter(
        (d) =>
          d.payload.project_id === w.project.id ||
          (d.payload.object_attributes as { id?: number } | undefined)?.id === mr.body.id,
      );
    expect(delivered).toContainEqual(
      expect.objectContaining({
        event: 'Push Hook',
        payload: expect.objectContaining({
          ref: 'refs/heads/topic',
          after: next,
          user_name: w.master.name,
          project: expect.objectContaining({ git_ssh_url: w.url }),
        }),
      }),
    );
    expect(delivered).toContainEqual(
      expect.objectContaining({
        event: 'Merge Request Hook',
        payload: expect.objectContaining({
          object_attributes: expect.objectContaining({ action: 'update', oldrev: head }),
        }),
      }),
    );
  });

  it('refuses a key nobody registered, and a blocked user with a registered key', async () => {
    const w = await world();
    const clone = await git(keys.stranger!, w.workdir, ['clone', '--quiet', w.url, 'x']);
    expect(clone.code).not.toBe(0);
    expect(clone.stderr).toContain('Permission denied (publickey)');

    const { db, call } = sb();
    const blocked = addUser(db, { username: `sblocked${n}` });
    db.data.members.push({
      project_id: w.project.id,
      user_id: blocked.id,
      access_level: MASTER,
      created_at: db.now(),
    });
    db.data.keys = db.data.keys.filter((k) => k.key !== keys.blocked!.publicKey);
    await call('POST', `/users/${blocked.id}/keys`, { body: { title: 'b', key: keys.blocked!.publicKey } });
    expect((await call('PUT', `/users/${blocked.id}/block`)).status).toBe(200);
    const refused = await git(keys.blocked!, w.workdir, ['clone', '--quiet', w.url, 'y']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('GitLab: Your account has been blocked.');
  });

  it('a reporter fetches but cannot push; a stranger to a private project does not see it', async () => {
    const w = await world();
    const dir = await cloned(keys.reporter!, w.url, w.workdir);
    await commit(keys.reporter!, dir, 'r.txt', 'r\n');
    const push = await git(keys.reporter!, dir, ['push', 'origin', 'HEAD:refs/heads/reported']);
    expect(push.code).not.toBe(0);
    expect(push.stderr).toContain('GitLab: You are not allowed to push code to this project.');
    expect(await sb().ctx.git.branch(w.project.id, 'reported')).toBeUndefined();

    const { db, call } = sb();
    const outsider = addUser(db, { username: `soutsider${n}` });
    const key = await sshKeyPair(w.workdir, 'id_outsider');
    await call('POST', `/users/${outsider.id}/keys`, { body: { title: 'o', key: key.publicKey } });
    const hidden = await git(key, w.workdir, ['clone', '--quiet', w.url, 'z']);
    expect(hidden.code).not.toBe(0);
    expect(hidden.stderr).toContain('GitLab: The project you were looking for could not be found.');
  });

  it('a protected branch refuses a force push and a developer push, and takes a master fast-forward', async () => {
    const w = await world();
    const { call } = sb();
    expect((await call('PUT', `/projects/${w.project.id}/repository/branches/master/protect`)).status).toBe(
      200,
    );
    const master = await cloned(keys.master!, w.url, w.workdir, 'm');
    const base = (await git(keys.master!, master, ['rev-parse', 'HEAD'])).stdout.trim();
    const ff = await commit(keys.master!, master, 'ff.txt', 'ff\n');
    expect((await git(keys.master!, master, ['push', '--quiet', 'origin', 'HEAD:master'])).code).toBe(0);

    expect((await git(keys.master!, master, ['reset', '--quiet', '--hard', base])).code).toBe(0);
    await commit(keys.master!, master, 'other.txt', 'rewritten\n');
    const force = await git(keys.master!, master, ['push', '--force', 'origin', 'HEAD:master']);
    expect(force.code).not.toBe(0);
    expect(force.stderr).toContain(
      'You are not allowed to force push code to a protected branch on this project.',
    );

    const dev = await cloned(keys.developer!, w.url, w.workdir, 'd');
    await commit(keys.developer!, dev, 'dev.txt', 'dev\n');
    const refused = await git(keys.developer!, dev, ['push', 'origin', 'HEAD:master']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      'You are not allowed to push code to protected branches on this project.',
    );
    expect((await sb().ctx.git.branch(w.project.id, 'master'))?.id).toBe(ff);
  });

  it('refuses a shell and any command but git-upload-pack and git-receive-pack, with exit status 1', async () => {
    const w = await world();
    const port = String(sb().sb.ssh!.port);
    const ssh = (...args: string[]) =>
      exec(
        '/bin/sh',
        [
          '-c',
          `${gitSshCommand(keys.developer!.keyFile, knownHosts)} -p ${port} git@127.0.0.1 "$@"`,
          'ssh',
          ...args,
        ],
        w.workdir,
      );
    for (const command of [
      [],
      ['ls', '-la'],
      ['git-upload-archive', `'${w.owner.username}/${w.project.path}.git'`],
      ['git-upload-pack', `'../../etc/passwd'`],
      ['git-upload-pack', `'${w.owner.username}/${w.project.path}.git'; id`],
    ]) {
      const r = await ssh(...command);
      expect(r.code, command.join(' ')).toBe(1);
      expect(r.stderr, command.join(' ')).toContain('GitLab: Disallowed command');
      expect(r.stdout).toBe('');
    }
  });

  it('reads git commands as gitlab-shell does', () => {
    expect(parseGitCommand("git-upload-pack '/ns/p.git'")).toEqual({
      service: 'git-upload-pack',
      path: 'ns/p',
    });
    expect(parseGitCommand("git-receive-pack 'ns/p.git'")).toEqual({
      service: 'git-receive-pack',
      path: 'ns/p',
    });
    expect(parseGitCommand("git-upload-pack 'ns/p'")).toEqual({ service: 'git-upload-pack', path: 'ns/p' });
    expect(parseGitCommand('git-upload-pack ns/p.git')).toBeUndefined();
    expect(parseGitCommand("git-upload-pack 'ns/p.git' extra")).toBeUndefined();
    expect(parseGitCommand("git upload-pack 'ns/p.git'")).toBeUndefined();
    expect(parseGitCommand("git-upload-pack 'a/b/c.git'")).toBeUndefined();
  });
});

describe('sandbox git over SSH, closing', () => {
  it('closes with a connection open: the connection ends and the port is free', async () => {
    const sb = await startSandbox({ sshPort: 0, hookTimeoutMs: 2_000 });
    const port = sb.ssh!.port;
    const socket = connect(port, '127.0.0.1');
    const greeting = new Promise<string>((resolve) =>
      socket.once('data', (d: Buffer) => resolve(d.toString())),
    );
    expect(await greeting).toMatch(/^SSH-2\.0-hookbot-sandbox/);
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await sb.close();
    await ended;
    const refused = await new Promise<string | undefined>((resolve) => {
      const probe = connect(port, '127.0.0.1');
      probe.once('connect', () => {
        probe.destroy();
        resolve(undefined);
      });
      probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code));
    });
    expect(refused).toBe('ECONNREFUSED');
  });

  it('is off unless asked for: no SSH and the scp-like ssh_url_to_repo', async () => {
    const sb = await startSandbox({ hookTimeoutMs: 2_000 });
    try {
      expect(sb.ssh).toBeUndefined();
      const host = new URL(sb.url).hostname;
      const root = sb.ctx.db.data.users.find((u) => u.id === 1)!;
      const project = await addProject(sb.ctx, {
        name: 'plain',
        namespace_id: ensureUserNamespace(sb.ctx.db, root).id,
        creator_id: 1,
      });
      const answer = await fetch(`${sb.apiUrl}/projects/${project.id}`, {
        headers: { 'private-token': sb.adminToken },
      });
      expect(((await answer.json()) as { ssh_url_to_repo: string }).ssh_url_to_repo).toMatch(
        new RegExp(`^git@${host}:[^/]+/plain\\.git$`),
      );
    } finally {
      await sb.close();
    }
  });
});

describe("the sandbox's SSH host key", () => {
  it('is always one ssh2 can read back (its generator alone makes an unreadable one about once in 200)', () => {
    for (let i = 0; i < 2000; i++) expect(utils.parseKey(hostKeyPair().private)).not.toBeInstanceOf(Error);
  });
});
