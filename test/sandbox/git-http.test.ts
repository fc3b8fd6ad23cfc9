/**
 * Git over HTTP against the sandbox with the real git client: clone, fetch and push at the project's
 * `http_url_to_repo`, Basic authentication, protected branches, and what a push becomes (push event,
 * merge request head, merge-when-build-succeeds disarmed).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushEvent } from '../../src/sandbox/context.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { DEVELOPER, MASTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { waitFor } from '../helpers/wait-for.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let home = '';
function git(cwd: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'git',
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
        },
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('sandbox git over HTTP', () => {
  const sb = useSandbox();
  const pushes: PushEvent[] = [];
  beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'hookbot-git-http-test-'));
    sb().ctx.on.push.push((event) => {
      pushes.push(event);
    });
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
  });

  let n = 0;
  async function world(visibility: 0 | 20 = 0) {
    const { ctx, db } = sb();
    n += 1;
    const owner = addUser(db, { username: `gowner${n}`, password: `owner-password-${n}` });
    const project = await addProject(ctx, {
      name: `git-${n}`,
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'hello\n' },
    });
    project.visibility_level = visibility;
    const member = (name: string, level: number, extra: { personal_access_tokens?: string[] } = {}) => {
      const user = addUser(db, { username: `${name}${n}`, password: `${name}-password-${n}`, ...extra });
      db.data.members.push({
        project_id: project.id,
        user_id: user.id,
        access_level: level,
        created_at: db.now(),
      });
      return user;
    };
    const master = member('gmaster', MASTER);
    const developer = member('gdev', DEVELOPER, { personal_access_tokens: [`gdev-pat-${n}`] });
    developer.oauth_tokens.push(`gdev-oauth-${n}`);
    const url = (user?: string, secret?: string) => {
      const base = new URL(`${sb().sb.url}/${owner.username}/${project.path}.git`);
      if (user !== undefined) {
        base.username = user;
        base.password = secret ?? '';
      }
      return base.toString();
    };
    const workdir = await mkdtemp(path.join(home, 'work-'));
    return { project, owner, master, developer, url, workdir };
  }

  async function cloned(url: string, workdir: string, name = 'clone'): Promise<string> {
    const r = await git(workdir, ['clone', '--quiet', url, name]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return path.join(workdir, name);
  }

  async function commit(dir: string, file: string, content: string): Promise<string> {
    await writeFile(path.join(dir, file), content);
    expect((await git(dir, ['add', file])).code).toBe(0);
    expect((await git(dir, ['commit', '--quiet', '-m', `change ${file}`])).code).toBe(0);
    return (await git(dir, ['rev-parse', 'HEAD'])).stdout.trim();
  }

  it('the http_url_to_repo the API answers clones with a password or a personal access token', async () => {
    const w = await world();
    const { body } = await sb().call('GET', `/projects/${w.project.id}`);
    expect(body.http_url_to_repo).toBe(w.url());
    await cloned(w.url(w.developer.username, `gdev-password-${n}`), w.workdir, 'by-password');
    const dir = await cloned(w.url(w.developer.username, `gdev-pat-${n}`), w.workdir, 'by-pat');
    expect((await git(dir, ['log', '--format=%s'])).stdout.trim()).toBe('Initial commit');
  });

  it('a personal access token opens the API as the private token does; a password does not', async () => {
    const w = await world();
    const { call } = sb();
    const byPat = await call('GET', '/user', { token: `gdev-pat-${n}` });
    expect(byPat.status).toBe(200);
    expect(byPat.body.username).toBe(w.developer.username);
    expect((await call('GET', '/user', { token: `gdev-password-${n}` })).status).toBe(401);
  });

  it('answers 401 with WWW-Authenticate: Basic without credentials, with wrong ones or with the private token', async () => {
    const w = await world();
    const refs = `${w.url()}/info/refs?service=git-upload-pack`;
    const none = await fetch(refs);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic /);
    const basic = (user: string, secret: string) => ({
      headers: { authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}` },
    });
    expect((await fetch(refs, basic(w.developer.username, 'wrong'))).status).toBe(401);
    const privateToken = await fetch(refs, basic(w.developer.username, w.developer.private_token));
    expect(privateToken.status).toBe(401);
    expect(privateToken.headers.get('www-authenticate')).toMatch(/^Basic /);
    const ok = await fetch(refs, basic(w.developer.username, `gdev-password-${n}`));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
    const clone = await git(w.workdir, ['clone', '--quiet', w.url(w.developer.username, 'wrong'), 'x']);
    expect(clone.code).not.toBe(0);
    expect(clone.stderr).toMatch(/Authentication failed|401/);
  });

  it('a public project clones without credentials; pushing still needs them', async () => {
    const w = await world(20);
    const dir = await cloned(w.url(), w.workdir);
    await commit(dir, 'a.txt', 'a\n');
    const push = await git(dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/anon']);
    expect(push.code).not.toBe(0);
  });

  it('an OAuth token fetches but never pushes', async () => {
    const w = await world();
    const dir = await cloned(w.url('oauth2', `gdev-oauth-${n}`), w.workdir);
    await commit(dir, 'o.txt', 'o\n');
    const push = await git(dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/oauth']);
    expect(push.code).not.toBe(0);
    expect(push.stderr).toMatch(/403/);
    expect(await sb().ctx.git.branch(w.project.id, 'oauth')).toBeUndefined();
  });

  it('a push becomes a push event, a Push Hook event and a new branch in the API', async () => {
    const w = await world();
    const dir = await cloned(w.url(w.developer.username, `gdev-pat-${n}`), w.workdir);
    const before = (await git(dir, ['rev-parse', 'HEAD'])).stdout.trim();
    const sha = await commit(dir, 'feature.txt', 'feature\n');
    const push = await git(dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/feature']);
    expect(push.code).toBe(0);
    // The branch is there at once; the push's consequences come after its answer, as 8.x's
    // background job (PostReceive) runs them: they are waited for.
    expect((await sb().ctx.git.branch(w.project.id, 'feature'))?.id).toBe(sha);
    await sb().ctx.hooks.idle();
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
    const events = await sb().call('GET', `/projects/${w.project.id}/events`);
    expect(events.body[0]).toMatchObject({
      action_name: 'pushed new',
      data: { before: expect.any(String), after: sha },
    });
    // A second push to master is a fast-forward from `before`.
    const second = await commit(dir, 'more.txt', 'more\n');
    expect((await git(dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/master'])).code).toBe(0);
    await sb().ctx.hooks.idle();
    expect(pushes.at(-1)).toMatchObject({ ref: 'refs/heads/master', before, after: second });
  });

  it('a push fires the Push Hook and the Merge Request Hook update, as a file commit does', async () => {
    const w = await world();
    const { call, ctx } = sb();
    // A hook nobody listens on: deliveries are still attempted and recorded.
    await call('POST', `/projects/${w.project.id}/hooks`, {
      body: { url: 'http://127.0.0.1:9/hook', push_events: true, merge_requests_events: true },
    });
    const dir = await cloned(w.url(w.developer.username, `gdev-pat-${n}`), w.workdir);
    await commit(dir, 'one.txt', 'one\n');
    expect((await git(dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/hooked'])).code).toBe(0);
    const mr = await call('POST', `/projects/${w.project.id}/merge_requests`, {
      body: { source_branch: 'hooked', target_branch: 'master', title: 'Hooked' },
    });
    const sha = await commit(dir, 'two.txt', 'two\n');
    expect((await git(dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/hooked'])).code).toBe(0);
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
        payload: expect.objectContaining({ ref: 'refs/heads/hooked', after: sha }),
      }),
    );
    expect(delivered).toContainEqual(
      expect.objectContaining({
        event: 'Merge Request Hook',
        payload: expect.objectContaining({
          object_attributes: expect.objectContaining({ action: 'update', oldrev: expect.any(String) }),
        }),
      }),
    );
  });

  it('a push to a source branch moves the merge request head and disarms merge-when-build-succeeds', async () => {
    const w = await world();
    const dir = await cloned(w.url(w.master.username, `gmaster-password-${n}`), w.workdir);
    await commit(dir, 'topic.txt', 'one\n');
    expect((await git(dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/topic'])).code).toBe(0);
    const { call } = sb();
    const mr = await call('POST', `/projects/${w.project.id}/merge_requests`, {
      body: { source_branch: 'topic', target_branch: 'master', title: 'Topic' },
    });
    expect(mr.status).toBe(200);
    const head = (await git(dir, ['rev-parse', 'HEAD'])).stdout.trim();
    await call('POST', `/projects/${w.project.id}/statuses/${head}`, {
      body: { state: 'pending', name: 'ci' },
    });
    const armed = await call('PUT', `/projects/${w.project.id}/merge_requests/${mr.body.id}/merge`, {
      body: { merge_when_build_succeeds: true },
    });
    expect(armed.body).toMatchObject({ state: 'opened', merge_when_build_succeeds: true });

    const next = await commit(dir, 'topic.txt', 'two\n');
    expect((await git(dir, ['push', '--quiet', 'origin', 'HEAD:refs/heads/topic'])).code).toBe(0);
    await sb().ctx.hooks.idle(); // the push's consequences, after its answer
    const after = await call('GET', `/projects/${w.project.id}/merge_requests/${mr.body.id}`);
    expect(after.body).toMatchObject({ sha: next, merge_when_build_succeeds: false, state: 'opened' });
    // The old head's success merges nothing: the automatic merge is gone.
    await call('POST', `/projects/${w.project.id}/statuses/${head}`, {
      body: { state: 'success', name: 'ci' },
    });
    await sb().ctx.hooks.idle();
    expect((await call('GET', `/projects/${w.project.id}/merge_requests/${mr.body.id}`)).body.state).toBe(
      'opened',
    );
  });

  it('a protected branch refuses a force push and a developer push, and takes a master fast-forward', async () => {
    const w = await world();
    const { call } = sb();
    expect((await call('PUT', `/projects/${w.project.id}/repository/branches/master/protect`)).status).toBe(
      200,
    );
    const master = await cloned(w.url(w.master.username, `gmaster-password-${n}`), w.workdir, 'm');
    const base = (await git(master, ['rev-parse', 'HEAD'])).stdout.trim();
    const ff = await commit(master, 'ff.txt', 'ff\n');
    expect((await git(master, ['push', '--quiet', 'origin', 'HEAD:master'])).code).toBe(0);

    expect((await git(master, ['reset', '--quiet', '--hard', base])).code).toBe(0);
    await commit(master, 'other.txt', 'rewritten\n');
    const force = await git(master, ['push', '--force', 'origin', 'HEAD:master']);
    expect(force.code).not.toBe(0);
    expect(force.stderr).toContain(
      'You are not allowed to force push code to a protected branch on this project.',
    );
    const del = await git(master, ['push', 'origin', ':master']);
    expect(del.code).not.toBe(0);
    expect(del.stderr).toContain('You are not allowed to delete protected branches from this project.');

    const dev = await cloned(w.url(w.developer.username, `gdev-password-${n}`), w.workdir, 'd');
    await commit(dev, 'dev.txt', 'dev\n');
    const refused = await git(dev, ['push', 'origin', 'HEAD:master']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      'You are not allowed to push code to protected branches on this project.',
    );
    expect((await sb().ctx.git.branch(w.project.id, 'master'))?.id).toBe(ff);

    // Unprotected branches take force pushes (the bot's branch updater relies on it for source branches).
    expect((await git(dev, ['push', '--quiet', 'origin', 'HEAD:refs/heads/work'])).code).toBe(0);
    expect((await git(dev, ['reset', '--quiet', '--hard', base])).code).toBe(0);
    const rewritten = await commit(dev, 'dev.txt', 'again\n');
    expect((await git(dev, ['push', '--quiet', '--force', 'origin', 'HEAD:refs/heads/work'])).code).toBe(0);
    await waitFor(async () => (await sb().ctx.git.branch(w.project.id, 'work'))?.id === rewritten);
  });

  it('speaks the smart protocol as git http-backend does: the advertisement, a gzipped request, a wrong content type', async () => {
    const w = await world();
    const auth = `Basic ${Buffer.from(`${w.developer.username}:gdev-password-${n}`).toString('base64')}`;
    const base = `${sb().sb.url}/${w.owner.username}/${w.project.path}.git`;
    const refs = await fetch(`${base}/info/refs?service=git-upload-pack`, {
      headers: { authorization: auth },
    });
    expect(refs.status).toBe(200);
    expect(refs.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
    expect(refs.headers.get('cache-control')).toContain('no-cache');
    const advertisement = await refs.text();
    expect(advertisement.startsWith('001e# service=git-upload-pack\n0000')).toBe(true);
    const master = (await sb().ctx.git.branch(w.project.id, 'master'))!.id;
    expect(advertisement).toContain(`${master} refs/heads/master`);
    // Protocol v2: no service line, the capabilities only (http-backend.c's get_info_refs).
    const v2 = await fetch(`${base}/info/refs?service=git-upload-pack`, {
      headers: { authorization: auth, 'git-protocol': 'version=2' },
    });
    const v2Text = await v2.text();
    expect(v2Text.startsWith('000eversion 2\n')).toBe(true);
    // One want, done: the same answer whether the client gzipped its request or not.
    const want = `want ${master} no-progress\n`;
    const request = Buffer.from(`${(want.length + 4).toString(16).padStart(4, '0')}${want}00000009done\n`);
    const post = (body: Buffer, headers: Record<string, string>) =>
      fetch(`${base}/git-upload-pack`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/x-git-upload-pack-request', ...headers },
        body,
      });
    const plain = await post(request, {});
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('application/x-git-upload-pack-result');
    const plainBody = Buffer.from(await plain.arrayBuffer());
    expect(plainBody.subarray(0, 8).toString()).toBe('0008NAK\n');
    expect(plainBody.includes(Buffer.from('PACK'))).toBe(true);
    const gzipped = await post(gzipSync(request), { 'content-encoding': 'gzip' });
    expect(gzipped.status).toBe(200);
    expect(Buffer.from(await gzipped.arrayBuffer()).equals(plainBody)).toBe(true);
    const wrongType = await post(request, { 'content-type': 'text/plain' });
    expect(wrongType.status).toBe(415);
  });
});
