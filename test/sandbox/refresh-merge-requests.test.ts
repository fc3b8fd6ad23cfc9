/**
 * What a push does to the merge requests around it, as 8.x's `MergeRequests::RefreshService` does,
 * with the real git client over HTTP and SSH:
 *
 * - a push to a branch that brings an open merge request's head marks it merged (post-merge path:
 *   state, issues closed, event, note, `Merge Request Hook` `merge`), whoever made the push: a master
 *   by hand, a bot landing a tested merge commit, the sandbox's own merge of another merge request;
 * - `refs/merge-requests/<iid>/head` is kept in the target repository on create, on a push to the
 *   source branch (a fork's too) and on reopen, and fetched over git by a reporter of the target.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import { mergeRequestRefHead } from '../../src/sandbox/merge-request-refs.ts';
import { DEVELOPER, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { gitUser, type GitUser } from '../helpers/git-user.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { gitSshCommand, knownHostsFile, sshKeyPair } from '../helpers/ssh-keys.ts';

// Each test runs many real git processes: allow for a slow, busy machine.
describe('sandbox: a push refreshes the merge requests around it', { timeout: 60_000 }, () => {
  const sb = useSandbox({ sshPort: 0 });
  let home = '';
  beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'hookbot-refresh-mr-test-'));
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
  });

  let n = 0;
  async function world() {
    const { ctx, db, call } = sb();
    n += 1;
    const owner = addUser(db, { username: `rowner${n}` });
    const project = await addProject(ctx, {
      name: `refresh-${n}`,
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'hello\n' },
    });
    const member = (role: string, level: number) => {
      const password = `${role}-password-${n}`;
      const user = addUser(db, { username: `r${role}${n}`, name: `R ${role} ${n}`, password });
      db.data.members.push({
        project_id: project.id,
        user_id: user.id,
        access_level: level,
        created_at: db.now(),
      });
      return { user, password };
    };
    const master = member('master', MASTER);
    const developer = member('developer', DEVELOPER);
    const reporter = member('reporter', REPORTER);
    // A hook nobody listens on: deliveries are still attempted and recorded in `recent()`.
    await call('POST', `/projects/${project.id}/hooks`, {
      body: { url: 'http://127.0.0.1:9/hook', push_events: true, merge_requests_events: true },
    });
    const url = `${sb().sb.url}/${owner.username}/${project.path}.git`;
    // A push's consequences (this refresh among them) run after its answer, as 8.x's background job
    // runs them: each push here waits for them before the test reads what they did.
    const as = async (who: { user: { username: string }; password: string }): Promise<GitUser> =>
      settled(await gitUser(home, { username: who.user.username, password: who.password }, url));
    const mrPath = `/projects/${project.id}/merge_requests`;
    const open = async (source: string, title: string, extra: Record<string, unknown> = {}) => {
      const res = await call('POST', mrPath, {
        body: { source_branch: source, target_branch: 'master', title, ...extra },
      });
      expect(res.status).toBe(200);
      return res.body as { id: number; iid: number };
    };
    const mr = async (id: number) => (await call('GET', `${mrPath}/${id}`)).body;
    return { project, owner, master, developer, reporter, url, as, open, mr, mrPath };
  }

  /** `g`, whose pushes wait for the push's consequences (they run after its answer, as on 8.x). */
  function settled(g: GitUser): GitUser {
    return {
      ...g,
      async git(...args: string[]) {
        const out = await g.git(...args);
        if (args[0] === 'push') await pushWorkIdle(sb().ctx);
        return out;
      },
    };
  }

  /** A branch pushed by `who` from master with one commit; its head. */
  async function pushBranch(g: GitUser, branch: string, file: string, message?: string): Promise<string> {
    await g.git('checkout', '--quiet', '-B', branch, 'origin/master');
    const sha = await g.commit(file, `${file}\n`, message ?? `Add ${file}`);
    await g.git('push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`);
    return sha;
  }

  const mergeHooks = (mrId: number) =>
    sb()
      .ctx.hooks.recent()
      .filter(
        (d) =>
          d.event === 'Merge Request Hook' &&
          (d.payload.object_attributes as { id?: number; action?: string }).id === mrId &&
          (d.payload.object_attributes as { action?: string }).action === 'merge',
      );

  describe('a push that brings a merge request head marks it merged (RefreshService#close_merge_requests)', () => {
    it('over HTTP: a master pushes the head into master; the post-merge path runs as the pusher', async () => {
      const w = await world();
      const { call, ctx } = sb();
      const issue = await call('POST', `/projects/${w.project.id}/issues`, { body: { title: 'Bug' } });
      const dev = await w.as(w.developer);
      const head = await pushBranch(dev, 'topic', 'topic.txt', `Fix the bug\n\nCloses #${issue.body.iid}`);
      const opened = await w.open('topic', 'Topic');

      const master = await w.as(w.master);
      await master.git('fetch', '--quiet', 'origin');
      await master.git('push', '--quiet', 'origin', 'origin/topic:refs/heads/master');

      expect(await w.mr(opened.id)).toMatchObject({ state: 'merged', sha: head, merge_commit_sha: null });
      expect((await call('GET', `/projects/${w.project.id}/issues/${issue.body.id}`)).body.state).toBe(
        'closed',
      );
      const events = (await call('GET', `/projects/${w.project.id}/events`)).body as {
        action_name: string;
        target_id: number | null;
        author_id: number;
      }[];
      expect(events).toContainEqual(
        expect.objectContaining({
          action_name: 'accepted',
          target_id: opened.id,
          author_id: w.master.user.id,
        }),
      );
      const notes = (await call('GET', `${w.mrPath}/${opened.id}/notes`)).body as {
        body: string;
        author: { id: number };
      }[];
      expect(notes).toContainEqual(
        expect.objectContaining({
          body: 'Status changed to merged',
          author: expect.objectContaining({ id: w.master.user.id }),
        }),
      );
      await ctx.hooks.idle();
      const hooks = mergeHooks(opened.id);
      expect(hooks).toHaveLength(1);
      expect(hooks[0]!.payload).toMatchObject({
        user: { username: w.master.user.username },
        object_attributes: { state: 'merged', last_commit: { id: head } },
      });
    });

    it('a push that does not bring the head leaves it open: another commit on master, the head on another branch', async () => {
      const w = await world();
      const dev = await w.as(w.developer);
      const head = await pushBranch(dev, 'open-topic', 'open.txt');
      const opened = await w.open('open-topic', 'Stays open');
      const master = await w.as(w.master);
      await master.commit('other.txt', 'other\n');
      await master.git('push', '--quiet', 'origin', 'HEAD:refs/heads/master');
      // The head pushed into a branch the merge request does not target merges nothing.
      await master.git('fetch', '--quiet', 'origin');
      await master.git('push', '--quiet', 'origin', `${head}:refs/heads/elsewhere`);
      expect(await w.mr(opened.id)).toMatchObject({ state: 'opened', sha: head });
    });

    it('a tested merge commit landed as a fast-forward merges every merge request whose head it holds (a train car)', async () => {
      const w = await world();
      const dev = await w.as(w.developer);
      const a = await pushBranch(dev, 'car-a', 'a.txt');
      const b = await pushBranch(dev, 'car-b', 'b.txt');
      const mrA = await w.open('car-a', 'A');
      const mrB = await w.open('car-b', 'B');
      const untouched = await pushBranch(dev, 'car-c', 'c.txt');
      const mrC = await w.open('car-c', 'C');
      // What the bot does: merge commits made elsewhere (a train branch), then the target moved to them.
      const master = await w.as(w.master);
      await master.git('fetch', '--quiet', 'origin');
      await master.git('checkout', '--quiet', '-B', 'train', 'origin/master');
      await master.git('merge', '--quiet', '--no-ff', '-m', 'Car 1', 'origin/car-a');
      await master.git('merge', '--quiet', '--no-ff', '-m', 'Car 2', 'origin/car-b');
      await master.git('push', '--quiet', 'origin', 'HEAD:refs/heads/hookbot/train');
      await master.git('push', '--quiet', 'origin', 'HEAD:refs/heads/master');
      expect(await w.mr(mrA.id)).toMatchObject({ state: 'merged', sha: a });
      expect(await w.mr(mrB.id)).toMatchObject({ state: 'merged', sha: b });
      expect(await w.mr(mrC.id)).toMatchObject({ state: 'opened', sha: untouched });
      await sb().ctx.hooks.idle();
      expect(mergeHooks(mrA.id)).toHaveLength(1);
      expect(mergeHooks(mrB.id)).toHaveLength(1);
    });

    it('over SSH, as over HTTP', async () => {
      const w = await world();
      const { call } = sb();
      const key = await sshKeyPair(home, `id_master_${n}`);
      const added = await call('POST', '/user/keys', {
        token: w.master.user.private_token,
        body: { title: 'laptop', key: key.publicKey },
      });
      expect(added.status).toBe(201);
      const dev = await w.as(w.developer);
      const head = await pushBranch(dev, 'ssh-topic', 'ssh.txt');
      const opened = await w.open('ssh-topic', 'Over SSH');
      const knownHosts = await knownHostsFile(home, `known_hosts_${n}`, sb().sb.ssh!.knownHostsLine);
      const sshUrl = `ssh://git@127.0.0.1:${sb().sb.ssh!.port}/${w.owner.username}/${w.project.path}.git`;
      const dir = await mkdtemp(path.join(home, 'ssh-'));
      const run = (args: string[]) =>
        new Promise<void>((resolve, reject) =>
          execFile(
            'git',
            args,
            {
              cwd: dir,
              env: {
                PATH: process.env.PATH ?? '/usr/bin:/bin',
                HOME: dir,
                GIT_CONFIG_NOSYSTEM: '1',
                GIT_TERMINAL_PROMPT: '0',
                LC_ALL: 'C',
                GIT_SSH_COMMAND: gitSshCommand(key.keyFile, knownHosts),
              },
            },
            (error, _out, stderr) => (error ? reject(new Error(stderr)) : resolve()),
          ),
        );
      await run(['clone', '--quiet', sshUrl, '.']);
      await run(['push', '--quiet', 'origin', 'origin/ssh-topic:refs/heads/master']);
      await pushWorkIdle(sb().ctx);
      expect(await w.mr(opened.id)).toMatchObject({ state: 'merged', sha: head });
    });

    it("the sandbox's own merge: merging one merge request through the API merges another whose head it brings", async () => {
      const w = await world();
      const dev = await w.as(w.developer);
      const lower = await pushBranch(dev, 'stack-1', 'one.txt');
      await dev.commit('two.txt', 'two\n');
      await dev.git('push', '--quiet', 'origin', 'HEAD:refs/heads/stack-2');
      const first = await w.open('stack-1', 'Lower');
      const second = await w.open('stack-2', 'Upper');
      const { call } = sb();
      const merged = await call('PUT', `${w.mrPath}/${second.id}/merge`, {
        token: w.master.user.private_token,
      });
      expect(merged.body.state).toBe('merged');
      expect(await w.mr(first.id)).toMatchObject({ state: 'merged', sha: lower, merge_commit_sha: null });
      await sb().ctx.hooks.idle();
      expect(mergeHooks(first.id)).toHaveLength(1);
      expect(mergeHooks(second.id)).toHaveLength(1);
    });

    it("a fork's merge request, its head fetched through refs/merge-requests/<iid>/head and pushed into master", async () => {
      const w = await world();
      const { call, db } = sb();
      const forker = w.developer;
      const fork = await call('POST', `/projects/fork/${w.project.id}`, { token: forker.user.private_token });
      expect(fork.status).toBe(201);
      const forkUrl = `${sb().sb.url}/${forker.user.username}/${fork.body.path}.git`;
      const inFork = settled(
        await gitUser(home, { username: forker.user.username, password: forker.password }, forkUrl),
      );
      const head = await pushBranch(inFork, 'from-fork', 'fork.txt');
      const opened = await call('POST', `/projects/${fork.body.id}/merge_requests`, {
        token: forker.user.private_token,
        body: {
          source_branch: 'from-fork',
          target_branch: 'master',
          title: 'Fork',
          target_project_id: w.project.id,
        },
      });
      expect(opened.status).toBe(200);
      // The master has no access to the fork (private, someone else's): the target's ref is enough.
      expect(
        db.data.members.some((m) => m.project_id === fork.body.id && m.user_id === w.master.user.id),
      ).toBe(false);
      const master = await w.as(w.master);
      await master.git('fetch', '--quiet', 'origin', `refs/merge-requests/${opened.body.iid}/head`);
      expect(await master.git('rev-parse', 'FETCH_HEAD')).toBe(head);
      await master.git('push', '--quiet', 'origin', 'FETCH_HEAD:refs/heads/master');
      expect(await w.mr(opened.body.id)).toMatchObject({ state: 'merged', sha: head });
    });
  });

  describe('refs/merge-requests/<iid>/head (MergeRequest#fetch_ref)', () => {
    it('is made on create at the source head, fetched by a reporter of the target, and is not a branch', async () => {
      const w = await world();
      const dev = await w.as(w.developer);
      const head = await pushBranch(dev, 'feature', 'feature.txt');
      const opened = await w.open('feature', 'Feature');
      const reporter = await w.as(w.reporter);
      const listed = await reporter.git('ls-remote', 'origin', `refs/merge-requests/${opened.iid}/head`);
      expect(listed).toBe(`${head}\trefs/merge-requests/${opened.iid}/head`);
      await reporter.git('fetch', '--quiet', 'origin', `refs/merge-requests/${opened.iid}/head`);
      expect(await reporter.git('rev-parse', 'FETCH_HEAD')).toBe(head);
      // Not a branch: neither the API nor a clone's remote branches show it.
      const branches = (await sb().call('GET', `/projects/${w.project.id}/repository/branches`)).body as {
        name: string;
      }[];
      expect(branches.map((b) => b.name).sort()).toEqual(['feature', 'master']);
      expect(await reporter.git('branch', '-r', '--format=%(refname)')).not.toContain('merge-requests');
    });

    it('follows each push to the source branch (git or the files API); a closed one waits for its reopen', async () => {
      const w = await world();
      const { call } = sb();
      const dev = await w.as(w.developer);
      await pushBranch(dev, 'moving', 'one.txt');
      const opened = await w.open('moving', 'Moving');
      const ref = `refs/merge-requests/${opened.iid}/head`;
      const reporter = await w.as(w.reporter);
      const at = async () => (await reporter.git('ls-remote', 'origin', ref)).split('\t')[0];

      const pushed = await dev.commit('two.txt', 'two\n');
      await dev.git('push', '--quiet', 'origin', 'HEAD:refs/heads/moving');
      expect(await at()).toBe(pushed);

      const file = await call('POST', `/projects/${w.project.id}/repository/files`, {
        body: { file_path: 'three.txt', branch_name: 'moving', content: 'three\n', commit_message: 'Three' },
      });
      expect(file.status).toBe(201);
      const byApi = (await sb().ctx.git.branch(w.project.id, 'moving'))!.id;
      expect(await at()).toBe(byApi);

      // 8.x refreshes open merge requests only: closed, the ref stays; reopened, it catches up.
      await call('PUT', `${w.mrPath}/${opened.id}`, { body: { state_event: 'close' } });
      await dev.git('pull', '--quiet', 'origin', 'moving');
      const whileClosed = await dev.commit('four.txt', 'four\n');
      await dev.git('push', '--quiet', 'origin', 'HEAD:refs/heads/moving');
      expect(await at()).toBe(byApi);
      await call('PUT', `${w.mrPath}/${opened.id}`, { body: { state_event: 'reopen' } });
      expect(await at()).toBe(whileClosed);
    });

    it("holds a fork's commits in the target repository, following the fork's pushes", async () => {
      const w = await world();
      const { call } = sb();
      const forker = w.developer;
      const fork = await call('POST', `/projects/fork/${w.project.id}`, { token: forker.user.private_token });
      expect(fork.status).toBe(201);
      const forkUrl = `${sb().sb.url}/${forker.user.username}/${fork.body.path}.git`;
      const inFork = settled(
        await gitUser(home, { username: forker.user.username, password: forker.password }, forkUrl),
      );
      const first = await pushBranch(inFork, 'fork-work', 'f1.txt');
      const opened = await call('POST', `/projects/${fork.body.id}/merge_requests`, {
        token: forker.user.private_token,
        body: {
          source_branch: 'fork-work',
          target_branch: 'master',
          title: 'F',
          target_project_id: w.project.id,
        },
      });
      expect(opened.status).toBe(200);
      const ref = `refs/merge-requests/${opened.body.iid}/head`;
      // The reporter of the target cannot read the fork at all...
      const reporter = await w.as(w.reporter);
      const denied = await reporter.git('ls-remote', forkUrl).then(
        () => 'read',
        () => 'refused',
      );
      expect(denied).toBe('refused');
      // ...and fetches the fork's head from the target.
      await reporter.git('fetch', '--quiet', 'origin', ref);
      expect(await reporter.git('rev-parse', 'FETCH_HEAD')).toBe(first);
      expect(await reporter.git('show', '-s', '--format=%s', 'FETCH_HEAD')).toBe('Add f1.txt');

      const second = await inFork.commit('f2.txt', 'f2\n');
      await inFork.git('push', '--quiet', 'origin', 'HEAD:refs/heads/fork-work');
      await reporter.git('fetch', '--quiet', 'origin', ref);
      expect(await reporter.git('rev-parse', 'FETCH_HEAD')).toBe(second);
      // The fork's own repository has no such ref: it lives in the target's.
      expect(await inFork.git('ls-remote', 'origin', 'refs/merge-requests/*')).toBe('');
    });
  });

  describe('refs of merge requests made before the sandbox kept them', () => {
    it("the demo seed's merge request has its ref; a data file without them gets them at start", async () => {
      const file = path.join(home, 'refs-data.json');
      const first = await startSandbox({ seed: 'demo', dataFile: file });
      const mr = first.ctx.db.data.mergeRequests[0]!;
      const head = (await first.ctx.git.branch(mr.source_project_id, mr.source_branch))!.id;
      expect(await mergeRequestRefHead(first.ctx, mr)).toBe(head);
      // As an older sandbox left it: the ref gone.
      await new Promise<void>((resolve, reject) =>
        execFile(
          'git',
          [
            '-C',
            path.join(`${file}.repos`, `${mr.target_project_id}.git`),
            'update-ref',
            '-d',
            `refs/merge-requests/${mr.iid}/head`,
          ],
          (error) => (error ? reject(error) : resolve()),
        ),
      );
      expect(await mergeRequestRefHead(first.ctx, mr)).toBeUndefined();
      await first.close();
      const second = await startSandbox({ dataFile: file });
      try {
        expect(await mergeRequestRefHead(second.ctx, second.ctx.db.data.mergeRequests[0]!)).toBe(head);
      } finally {
        await second.close();
      }
    });
  });
});
