import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { DEVELOPER, GUEST, REPORTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const AUTHOR = { name: 'Carol Coder', email: 'carol@example.com' };

interface Delivery {
  headers: IncomingHttpHeaders;
  body: any;
}

describe('commit statuses', () => {
  const ctx = useSandbox();
  let project: ProjectRec;
  let developer: UserRec;
  let reporter: UserRec;
  let guest: UserRec;
  let master = '';
  const deliveries: Delivery[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.end('ok');
    });
  });

  /** A fresh commit on its own branch, so each test has statuses of its own. */
  let branchCount = 0;
  async function freshCommit(): Promise<{ sha: string; branch: string }> {
    branchCount += 1;
    const branch = `topic-${branchCount}`;
    await ctx().ctx.git.createBranch(project.id, branch, 'master');
    const commit = await ctx().ctx.git.commitFile(project.id, {
      branch,
      path: `notes-${branchCount}.txt`,
      content: String(branchCount),
      message: `Topic ${branchCount}`,
      author: AUTHOR,
      mode: 'create',
    });
    return { sha: commit.id, branch };
  }

  const post = (sha: string, body: Record<string, unknown>, token?: string) =>
    ctx().call('POST', `/projects/${project.id}/statuses/${sha}`, { body, ...(token ? { token } : {}) });
  const list = (sha: string, query: Record<string, string | number | boolean> = {}, token?: string) =>
    ctx().call('GET', `/projects/${project.id}/repository/commits/${sha}/statuses`, {
      query,
      ...(token ? { token } : {}),
    });

  beforeAll(async () => {
    const { db, ctx: sandbox } = ctx();
    developer = addUser(db, { username: 'dev', name: 'Dev Eloper' });
    reporter = addUser(db, { username: 'rep', name: 'Rep Orter' });
    guest = addUser(db, { username: 'guest', name: 'Gue St' });
    const group = addGroup(db, { name: 'Acme', path: 'acme', owner_id: 1 });
    project = await addProject(sandbox, {
      name: 'Web',
      path: 'web',
      namespace_id: group.id,
      creator_id: 1,
      visibility_level: 0,
      initialFiles: { 'README.md': '# Web\n' },
    });
    for (const [user, level] of [
      [developer, DEVELOPER],
      [reporter, REPORTER],
      [guest, GUEST],
    ] as const)
      db.data.members.push({
        project_id: project.id,
        user_id: user.id,
        access_level: level,
        created_at: db.now(),
      });
    master = (await sandbox.git.branch(project.id, 'master'))!.id;

    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as AddressInfo;
    db.data.hooks.push({
      id: db.nextId('hooks'),
      project_id: project.id,
      url: `http://127.0.0.1:${port}/pipelines`,
      token: null,
      push_events: false,
      issues_events: false,
      merge_requests_events: false,
      tag_push_events: false,
      note_events: false,
      build_events: false,
      pipeline_events: true,
      enable_ssl_verification: true,
      created_at: db.now(),
    });
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => {
      receiver.closeAllConnections();
      receiver.close(() => resolve());
    });
  });

  describe('POST /projects/:id/statuses/:sha', () => {
    it('creates a status and answers 201 with it, the caller as author', async () => {
      const { sha } = await freshCommit();
      const res = await post(
        sha,
        { state: 'pending', ref: 'master', target_url: 'http://ci.test/1', description: 'queued' },
        developer.private_token,
      );
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(Number),
        sha,
        ref: 'master',
        status: 'pending',
        name: 'default',
        target_url: 'http://ci.test/1',
        description: 'queued',
        created_at: expect.stringMatching(ISO),
        started_at: null,
        finished_at: null,
        allow_failure: false,
        author: {
          id: developer.id,
          username: 'dev',
          name: 'Dev Eloper',
          state: 'active',
          avatar_url: null,
          web_url: `${ctx().sb.url}/u/dev`,
        },
      });
    });

    it.each([
      ['name wins over context', { name: 'build', context: 'ci/build' }, 'build'],
      ['context when there is no name', { context: 'ci/test' }, 'ci/test'],
      ['`default` when neither is given', {}, 'default'],
    ])('names the status: %s', async (_name, extra, expected) => {
      const { sha } = await freshCommit();
      const res = await post(sha, { state: 'success', ref: 'master', ...extra });
      expect(res.status).toBe(201);
      expect(res.body.name).toBe(expected);
    });

    it('accepts a branch name for the sha and stores the commit it points to', async () => {
      const { sha, branch } = await freshCommit();
      const res = await post(branch, { state: 'success', ref: branch });
      expect(res.status).toBe(201);
      expect(res.body.sha).toBe(sha);
    });

    it('attaches a status without ref to the first branch that contains the commit', async () => {
      const { sha, branch } = await freshCommit();
      const res = await post(sha, { state: 'pending' });
      expect(res.status).toBe(201);
      expect(res.body.ref).toBe(branch);
    });

    it('answers 404 References for commit when no branch contains the commit and no ref is given', async () => {
      const { sha, branch } = await freshCommit();
      await ctx().ctx.git.deleteBranch(project.id, branch);
      const res = await post(sha, { state: 'pending' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 References for commit Not Found' });
    });

    it.each([
      ['an unknown sha', 'f'.repeat(40)],
      ['an unknown branch', 'no-such-branch'],
    ])('answers 404 Commit Not Found for %s', async (_name, sha) => {
      const res = await post(sha, { state: 'pending', ref: 'master' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Commit Not Found' });
    });

    it.each([
      ['an unknown state', { state: 'error' }, { message: 'invalid state' }],
      ['no state', {}, { message: '400 (Bad request) "state" not given' }],
      ['an empty state', { state: '' }, { message: '400 (Bad request) "state" not given' }],
    ])('answers 400 for %s', async (_name, body, expected) => {
      const res = await post(master, { ref: 'master', ...body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(expected);
    });

    it.each([
      ['a reporter', () => reporter.private_token],
      ['a guest', () => guest.private_token],
    ])('answers 403 to %s', async (_name, token) => {
      const res = await post(master, { state: 'pending', ref: 'master' }, token());
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message: '403 Forbidden' });
    });

    it('answers 404 Project Not Found to a user who cannot see the project', async () => {
      const outsider = addUser(ctx().db, { username: 'outsider' });
      const res = await post(master, { state: 'pending' }, outsider.private_token);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Project Not Found' });
    });

    it('accepts form-encoded bodies, as clients of that era send', async () => {
      const { sha } = await freshCommit();
      const res = await ctx().call('POST', `/projects/${project.id}/statuses/${sha}`, {
        form: { state: 'running', ref: 'master', context: 'ci/form' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ status: 'running', name: 'ci/form' });
    });
  });

  describe('state machine', () => {
    it.each([
      ['pending', 'running'],
      ['pending', 'success'],
      ['pending', 'failed'],
      ['pending', 'canceled'],
      ['running', 'success'],
      ['running', 'failed'],
      ['running', 'canceled'],
    ])('updates a %s status in place when %s is posted', async (from, to) => {
      const { sha } = await freshCommit();
      const first = await post(sha, {
        state: from,
        ref: 'master',
        name: 'ci',
        target_url: 'http://ci.test/a',
      });
      const second = await post(sha, { state: to, ref: 'master', name: 'ci', description: 'now' });
      expect(second.status).toBe(201);
      expect(second.body).toMatchObject({
        id: first.body.id,
        status: to,
        created_at: first.body.created_at,
        // Given values replace, absent ones are kept.
        target_url: 'http://ci.test/a',
        description: 'now',
      });
      const all = await list(sha, { all: true });
      expect(all.body.map((s: { id: number }) => s.id)).toEqual([first.body.id]);
    });

    it('sets started_at on running and finished_at on a finished state', async () => {
      const { sha } = await freshCommit();
      const pending = await post(sha, { state: 'pending', ref: 'master' });
      expect(pending.body).toMatchObject({ started_at: null, finished_at: null });
      const running = await post(sha, { state: 'running', ref: 'master' });
      expect(running.body.started_at).toMatch(ISO);
      expect(running.body.finished_at).toBeNull();
      const done = await post(sha, { state: 'success', ref: 'master' });
      expect(done.body.started_at).toBe(running.body.started_at);
      expect(done.body.finished_at).toMatch(ISO);
    });

    it('finishes a new status directly, without a start time', async () => {
      const { sha } = await freshCommit();
      const res = await post(sha, { state: 'failed', ref: 'master' });
      expect(res.body).toMatchObject({
        status: 'failed',
        started_at: null,
        finished_at: expect.stringMatching(ISO),
      });
    });

    it.each(['success', 'failed', 'canceled'])(
      'never changes a %s status: posting again makes a new row',
      async (finished) => {
        const { sha } = await freshCommit();
        const first = await post(sha, { state: finished, ref: 'master', name: 'ci' });
        const again = await post(sha, { state: 'pending', ref: 'master', name: 'ci' });
        expect(again.status).toBe(201);
        expect(again.body.id).not.toBe(first.body.id);
        const all = await list(sha, { all: true });
        expect(all.body.map((s: { id: number; status: string }) => [s.id, s.status])).toEqual([
          [first.body.id, finished],
          [again.body.id, 'pending'],
        ]);
      },
    );

    it.each([
      [
        'pending',
        'pending',
        'Cannot transition status via :enqueue from :pending (Reason(s): Status cannot transition via "enqueue")',
      ],
      [
        'running',
        'pending',
        'Cannot transition status via :enqueue from :running (Reason(s): Status cannot transition via "enqueue")',
      ],
      [
        'running',
        'running',
        'Cannot transition status via :run from :running (Reason(s): Status cannot transition via "run")',
      ],
    ])('refuses %s -> %s with 400 and leaves the status as it was', async (from, to, message) => {
      const { sha } = await freshCommit();
      const first = await post(sha, { state: from, ref: 'master', description: 'first' });
      const res = await post(sha, { state: to, ref: 'master', description: 'second' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message });
      const all = await list(sha, { all: true });
      expect(all.body).toEqual([first.body]);
    });

    it('keeps separate statuses per name and per ref', async () => {
      const { sha, branch } = await freshCommit();
      const a = await post(sha, { state: 'pending', ref: 'master', name: 'a' });
      const b = await post(sha, { state: 'pending', ref: 'master', name: 'b' });
      const other = await post(sha, { state: 'pending', ref: branch, name: 'a' });
      expect(new Set([a.body.id, b.body.id, other.body.id]).size).toBe(3);
    });

    it("never moves another user's status on: her post is a new status of her own (8.x finds the open one by its poster too)", async () => {
      const { sha } = await freshCommit();
      const first = await post(sha, { state: 'pending', ref: 'master' }, developer.private_token);
      const second = await post(sha, { state: 'success', ref: 'master' });
      expect(second.status).toBe(201);
      expect(second.body.id).not.toBe(first.body.id);
      expect(second.body.author.username).not.toBe('dev');
      const all = await list(sha, { all: 'true' });
      expect(all.body.find((s: { id: number }) => s.id === first.body.id)).toMatchObject({
        status: 'pending',
        author: { username: 'dev' },
      });
      // The same user moves her own on, in place.
      const third = await post(sha, { state: 'success', ref: 'master' }, developer.private_token);
      expect(third.body.id).toBe(first.body.id);
    });
  });

  describe('GET /projects/:id/repository/commits/:sha/statuses', () => {
    let sha = '';
    let branch = '';
    const ids: Record<string, number> = {};

    beforeAll(async () => {
      ({ sha, branch } = await freshCommit());
      ids.build1 = (await post(sha, { state: 'failed', ref: 'master', name: 'build' })).body.id;
      ids.test = (await post(sha, { state: 'running', ref: 'master', name: 'test' })).body.id;
      ids.build2 = (await post(sha, { state: 'success', ref: 'master', name: 'build' })).body.id;
      ids.branchBuild = (await post(sha, { state: 'pending', ref: branch, name: 'build' })).body.id;
    });

    const idsOf = (body: { id: number }[]) => body.map((s) => s.id);

    it('lists the latest status per name (and ref) by default', async () => {
      const res = await list(sha);
      expect(res.status).toBe(200);
      expect(idsOf(res.body)).toEqual([ids.test, ids.build2, ids.branchBuild]);
    });

    it.each([
      ['all=true', { all: true }, ['build1', 'test', 'build2', 'branchBuild']],
      ['name', { name: 'build' }, ['build2', 'branchBuild']],
      ['ref_name', { ref_name: 'master' }, ['test', 'build2']],
      ['ref (as 8.x reads it)', { ref: 'master' }, ['test', 'build2']],
      ['stage=external (every API status)', { stage: 'external' }, ['test', 'build2', 'branchBuild']],
      ['another stage', { stage: 'test' }, []],
      ['all=true and name', { all: true, name: 'build', ref_name: 'master' }, ['build1', 'build2']],
    ])('filters with %s', async (_name, query, expected) => {
      const res = await list(sha, query);
      expect(res.status).toBe(200);
      expect(idsOf(res.body)).toEqual(expected.map((k) => ids[k]));
    });

    it('paginates with the usual headers', async () => {
      const res = await list(sha, { all: true, per_page: 3, page: 2 });
      expect(idsOf(res.body)).toEqual([ids.branchBuild]);
      expect(res.headers.get('x-total')).toBe('4');
      expect(res.headers.get('x-total-pages')).toBe('2');
      expect(res.headers.get('x-next-page')).toBe('');
      expect(res.headers.get('x-prev-page')).toBe('1');
      expect(res.headers.get('link')).toContain('rel="first"');
    });

    it('answers an empty list for a known commit without statuses', async () => {
      const res = await list(master);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
    });

    it('matches the sha exactly as given: a branch name resolves but lists nothing (as 8.x)', async () => {
      const res = await list(branch);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
    });

    it('answers 404 Commit Not Found for an unknown sha', async () => {
      const res = await list('0123456789abcdef0123456789abcdef01234567');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Commit Not Found' });
    });

    it.each([
      ['a reporter may read', () => reporter.private_token, 200],
      ['a guest may not read on a private project', () => guest.private_token, 403],
    ])('%s', async (_name, token, status) => {
      const res = await list(sha, {}, token());
      expect(res.status).toBe(status);
    });
  });

  describe('Pipeline Hook', () => {
    async function settled(): Promise<Delivery[]> {
      await ctx().ctx.hooks.idle();
      return deliveries.splice(0);
    }

    it('fires when the combined status changes and not when it stays the same', async () => {
      const { sha } = await freshCommit();
      await settled();
      const steps: [Record<string, string>, string | null][] = [
        [{ state: 'pending', name: 'build' }, 'pending'],
        [{ state: 'pending', name: 'test' }, null],
        [{ state: 'running', name: 'build' }, 'running'],
        [{ state: 'success', name: 'build' }, null],
        [{ state: 'success', name: 'test' }, 'success'],
        [{ state: 'failed', name: 'lint' }, 'failed'],
        [{ state: 'failed', name: 'lint2' }, null],
      ];
      for (const [body, expected] of steps) {
        const res = await post(sha, { ref: 'master', ...body });
        expect(res.status).toBe(201);
        const sent = await settled();
        expect(sent.map((d) => d.body.object_attributes.status)).toEqual(expected === null ? [] : [expected]);
      }
    });

    it('sends the pipeline payload with the header, the commit and every status as a build', async () => {
      const { sha } = await freshCommit();
      await settled();
      const first = await post(
        sha,
        { state: 'running', ref: 'master', name: 'build' },
        developer.private_token,
      );
      await settled();
      await post(sha, { state: 'success', ref: 'master', name: 'build' }, developer.private_token);
      const [delivery, ...more] = await settled();
      expect(more).toEqual([]);
      expect(delivery!.headers['x-gitlab-event']).toBe('Pipeline Hook');
      const payload = delivery!.body;
      expect(payload.object_kind).toBe('pipeline');
      expect(payload.object_attributes).toMatchObject({
        id: first.body.id,
        ref: 'master',
        tag: false,
        sha,
        status: 'success',
        stages: ['external'],
        finished_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/),
      });
      expect(payload.user).toEqual({ name: 'Dev Eloper', username: 'dev', avatar_url: null });
      expect(payload.project.path_with_namespace).toBe('acme/web');
      expect(payload.commit).toMatchObject({
        id: sha,
        message: 'Topic ' + String(branchCount),
        author: AUTHOR,
      });
      expect(payload.builds).toEqual([
        expect.objectContaining({ id: first.body.id, name: 'build', status: 'success', stage: 'external' }),
      ]);
    });

    it('sends nothing when a post is refused', async () => {
      const { sha } = await freshCommit();
      await post(sha, { state: 'pending', ref: 'master' });
      await settled();
      const res = await post(sha, { state: 'pending', ref: 'master' });
      expect(res.status).toBe(400);
      expect(await settled()).toEqual([]);
    });
  });
});
